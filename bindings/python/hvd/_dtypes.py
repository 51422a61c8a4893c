# SPDX-License-Identifier: Apache-2.0
"""libhvd dtype codes (hvd_dtype_t) for NumPy dtypes."""

UINT8, INT8, UINT16, INT16, INT32, INT64, FLOAT16, FLOAT32, FLOAT64, BOOL, BFLOAT16 = range(11)

_BY_NUMPY_NAME = {
    "uint8": UINT8,
    "int8": INT8,
    "uint16": UINT16,
    "int16": INT16,
    "int32": INT32,
    "int64": INT64,
    "float16": FLOAT16,
    "float32": FLOAT32,
    "float64": FLOAT64,
    "bool": BOOL,
    "bfloat16": BFLOAT16,  # ml_dtypes' bfloat16, when present
}
_NUMPY_NAME = {code: name for name, code in _BY_NUMPY_NAME.items()}


def code_of_numpy(dtype):
    code = _BY_NUMPY_NAME.get(dtype.name)
    if code is None or dtype.byteorder == ">":
        raise ValueError("dtype %s is not supported by libhvd (supported: %s)" %
                         (dtype, ", ".join(sorted(_BY_NUMPY_NAME))))
    return code


def name(code):
    """The NumPy name of a dtype code, e.g. "float32"."""
    return _NUMPY_NAME.get(code, "dtype %d" % code)


def numpy_dtype(code):
    import numpy as np

    name = _NUMPY_NAME[code]
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)
