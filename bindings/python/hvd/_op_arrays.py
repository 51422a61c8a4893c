# SPDX-License-Identifier: Apache-2.0
"""The arrays of one NumPy-package op: all in host memory (NumPy arrays, or anything
numpy.asarray or numpy.from_dlpack takes) or all on one CUDA device (see _device_arrays)."""

import ctypes

import numpy as np

from hvd import _device_arrays, _dtypes, _runtime
from hvd._backend import backend


def _as_array(obj):
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack__") and not hasattr(obj, "__array_interface__"):
        return np.from_dlpack(obj)
    return np.asarray(obj)


def _contiguous(obj):
    if type(obj) is np.ndarray and obj.flags.c_contiguous:
        return obj
    return np.require(_as_array(obj), requirements="C")  # keeps 0-d arrays 0-d


def _writable(obj):
    if not isinstance(obj, np.ndarray):
        raise ValueError("in-place operations need a numpy.ndarray or a writable CUDA array, "
                         "got %s" % type(obj).__name__)
    if not obj.flags.c_contiguous or not obj.flags.writeable:
        raise ValueError("in-place operations need a writable C-contiguous array")
    return obj


class OpArrays:
    """arrays: the op's inputs as it uses them (contiguous NumPy arrays, or the caller's CUDA
    arrays themselves); stream: the cudaStream_t to pass to the op (None: none); keep: what
    must stay alive until the op completes. writable: the inputs are written in place;
    new_outputs: the op's outputs are the library's, copied into new arrays (checked here
    that something can make them, before the op starts)."""

    def __init__(self, objs, writable=False, new_outputs=False):
        self._framework = None
        self.cuda = self.stream = None
        for o in objs:
            if type(o) is not np.ndarray:
                cuda = [_device_arrays.describe(o) for o in objs]
                break
        else:
            cuda = ()  # the common case, decided without looking further
        if all(c is None for c in cuda):
            check = _writable if writable else _contiguous
            self.arrays = self.keep = [check(o) for o in objs]
            return
        if any(c is None for c in cuda):
            raise ValueError("the arrays of one op must all be in host memory or all in CUDA "
                             "memory")
        devices = sorted({c.device_id for c in cuda})
        if len(devices) > 1:
            raise ValueError("the arrays of one op must be on one CUDA device, not on %s" %
                             ", ".join(str(d) for d in devices))
        self.stream = _device_arrays.op_stream(cuda)
        cuda = [_device_arrays.export_dlpack(c, self.stream) if c.stream == "dlpack" else c
                for c in cuda]
        if writable:
            for c in cuda:
                if not c.writable:
                    raise ValueError("in-place operations need a writable array; this %s is "
                                     "read-only (DLPack exports always count as read-only)" %
                                     type(c.obj).__name__)
        self.cuda = cuda
        self.arrays = [c.obj for c in cuda]
        self.keep = [c.owner for c in cuda]
        self._by_id = {id(c.obj): c for c in cuda}
        if new_outputs:
            self._maker()

    def add(self, obj, writable=True):
        """Takes part in the op as an output the caller gave; returns what the op uses."""
        if self.cuda is None:
            if _device_arrays.describe(obj) is not None:
                raise ValueError("the arrays of one op must all be in host memory or all in "
                                 "CUDA memory")
            arr = _writable(obj) if writable else _contiguous(obj)
            self.keep = list(self.keep) + [arr]
            return arr
        c = _device_arrays.describe(obj)
        if c is None:
            raise ValueError("the arrays of one op must all be in host memory or all in CUDA "
                             "memory")
        if c.stream == "dlpack":
            raise ValueError("an output in CUDA memory must export __cuda_array_interface__ "
                             "(DLPack exports count as read-only), got %s" % type(obj).__name__)
        if c.device_id != self.cuda[0].device_id:
            raise ValueError("the output is on CUDA device %d, the inputs on %d" %
                             (c.device_id, self.cuda[0].device_id))
        if writable and not c.writable:
            raise ValueError("the output %s is read-only" % type(obj).__name__)
        self._by_id[id(obj)] = c
        self.keep = list(self.keep) + [obj]
        return obj

    def desc(self, arr):
        """The description of one of the op's arrays for the backend."""
        if self.cuda is None:
            return (arr.ctypes.data, _dtypes.code_of_numpy(arr.dtype), arr.shape)
        return self._by_id[id(arr)].desc()

    def descs(self, arrays):
        return [self.desc(a) for a in arrays]

    def _maker(self):
        if self._framework is None:
            if not _runtime.cuda_built():
                raise ValueError("the op's arrays are in CUDA memory, but this libhvd has no "
                                 "usable CUDA here (hvd.cuda_built() is False: no GPU module, "
                                 "CUDA driver or device)")
            self._framework = _device_arrays.framework_for(self.arrays[0])
        return self._framework

    def empty_like(self, i):
        """A new array like input i, which the op writes (out-of-place forms)."""
        if self.cuda is None:
            return np.empty_like(self.arrays[i])
        c = self.cuda[i]
        return self.add(self._maker().empty(c.shape, c.code, c.device_id, self.stream))

    def output(self, req, i):
        """A copy of the library-owned output i of a completed request, as a new array."""
        ptr, code, shape = backend.output(req, i)
        if self.cuda is not None:
            return self._maker().copy_from(ptr, shape, code, self.cuda[0].device_id,
                                           self.stream)
        out = np.empty(shape, dtype=_dtypes.numpy_dtype(code))
        if out.nbytes:
            ctypes.memmove(out.ctypes.data, ptr, out.nbytes)
        return out
