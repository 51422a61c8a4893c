# SPDX-License-Identifier: Apache-2.0
"""Arrays in CUDA device memory for the NumPy package: anything that exports
__cuda_array_interface__ (CuPy, Numba, PyTorch, JAX, PyCUDA) or DLPack on a CUDA device (and
the interface's gaps, such as PyTorch's bfloat16, through DLPack).

An op's arrays are read where they are, with no copy; libhvd gets their pointers as CUDA
tensors. The op is ordered after the work queued on the stream its arrays were exported on
and its results are valid on that same stream, so the caller's host thread does not wait for
the device: the interface's "stream" (version 3, as CuPy exports); PyTorch's current stream
for its tensors; else CUDA's default stream, for which DLPack exports are asked.

A framework does what the library's C ABI does not (an op on CUDA arrays needs one installed):
it makes new arrays (the out-of-place forms, and copies of the library-owned outputs of
allgather, alltoall and reducescatter), and its events tell when an op's device work is over,
until when the op's arrays are kept alive. It is the framework of the op's first array when
that is CuPy or PyTorch, else CuPy, else PyTorch, whichever is installed and has the dtypes."""

import ctypes
import sys

import numpy as np

from hvd import _dtypes

DEVICE_CUDA = 2  # hvd_device_type_t, DLPack's kDLCUDA
_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
_CAI_LEGACY_STREAM, _CAI_PER_THREAD_STREAM = 1, 2

# DLPack's dtype codes (kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool) and bits -> hvd_dtype_t.
_DLPACK_DTYPES = {
    (0, 8): _dtypes.INT8, (0, 16): _dtypes.INT16, (0, 32): _dtypes.INT32,
    (0, 64): _dtypes.INT64, (1, 8): _dtypes.UINT8, (1, 16): _dtypes.UINT16,
    (2, 16): _dtypes.FLOAT16, (2, 32): _dtypes.FLOAT32, (2, 64): _dtypes.FLOAT64,
    (4, 16): _dtypes.BFLOAT16, (6, 8): _dtypes.BOOL,
}
_ITEMSIZE = {
    _dtypes.UINT8: 1, _dtypes.INT8: 1, _dtypes.BOOL: 1, _dtypes.UINT16: 2, _dtypes.INT16: 2,
    _dtypes.FLOAT16: 2, _dtypes.BFLOAT16: 2, _dtypes.INT32: 4, _dtypes.FLOAT32: 4,
    _dtypes.INT64: 8, _dtypes.FLOAT64: 8,
}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):  # the unversioned export, "dltensor" capsules
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))


class CudaArray:
    """One array in CUDA memory as an op uses it.

    obj: the exporter's object; ptr, code (hvd_dtype_t), shape, device_id (None: the exporter
    does not say; the framework asks the pointer); writable; stream:
    the CUDA stream its data is ready on in the interface's numbering (None: ready now, 1:
    CUDA's legacy default stream, 2: the per-thread default stream, else the cudaStream_t),
    or "dlpack" until the array is exported on the op's stream (see export_dlpack); owner:
    what keeps the memory alive while the op runs."""

    __slots__ = ("obj", "ptr", "code", "shape", "device_id", "writable", "stream", "owner")

    def __init__(self, obj, ptr, code, shape, device_id, writable, stream, owner):
        self.obj, self.ptr, self.code, self.shape = obj, ptr, code, shape
        self.device_id, self.writable, self.stream, self.owner = (device_id, writable, stream,
                                                                  owner)

    def desc(self):
        """The (data, dtype, shape, device type, device id) description the backends take."""
        return (self.ptr, self.code, self.shape, DEVICE_CUDA, self.device_id)


def _check_c_contiguous(what, shape, strides, itemsize):
    """strides in bytes, or None (C-contiguous)."""
    if strides is None:
        return
    if len(strides) != len(shape):
        raise ValueError("%s: %d strides for %d dimensions" % (what, len(strides), len(shape)))
    if 0 in shape:
        return
    expect = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != expect:
            raise ValueError("%s: the array is not C-contiguous (strides %s); pass a "
                             "contiguous copy" % (what, tuple(strides)))
        expect *= extent


def _device_of(obj):
    """The CUDA device ordinal of obj as its exporter reports it."""
    dlpack_device = _dlpack_device(obj)
    if dlpack_device is not None:
        return dlpack_device[1]
    device = getattr(obj, "device", None)
    for attr in ("id", "index"):  # CuPy's Device.id, PyTorch's torch.device.index
        value = getattr(device, attr, None)
        if isinstance(value, int):
            return value
    return None


def _exporter_stream(obj, device_id):
    """The stream a PyTorch tensor's data is ready on: its current stream (its interface names
    none), in the interface's numbering; None for other exporters."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return None
    ptr = torch.cuda.current_stream(device_id).cuda_stream
    return ptr if ptr else _CAI_LEGACY_STREAM


def from_cuda_array_interface(obj, cai):
    """A CudaArray for an object exporting cai (its __cuda_array_interface__ dict)."""
    what = "__cuda_array_interface__ of %s" % type(obj).__name__
    try:
        shape = tuple(int(d) for d in cai["shape"])
        ptr, readonly = cai["data"]
        typestr = cai["typestr"]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError("%s: not a valid interface (%s)" % (what, e)) from None
    if any(d < 0 for d in shape):
        raise ValueError("%s: negative dimension in shape %s" % (what, shape))
    if cai.get("mask") is not None:
        raise ValueError("%s: masked arrays are not supported" % what)
    try:
        dtype = np.dtype(typestr)
    except TypeError:
        raise ValueError("%s: unknown typestr %r" % (what, typestr)) from None
    if dtype.kind == "V":
        raise ValueError("%s: typestr %r has no element type libhvd knows (bfloat16 arrays "
                         "can be passed through DLPack)" % (what, typestr))
    code = _dtypes.code_of_numpy(dtype)
    _check_c_contiguous(what, shape, cai.get("strides"), dtype.itemsize)
    ptr = int(ptr or 0)
    if ptr == 0 and 0 not in shape:
        raise ValueError("%s: a null data pointer for %s elements" % (what, shape))
    device_id = _device_of(obj)
    stream = cai.get("stream") if int(cai.get("version", 0)) >= 3 else None
    if stream is not None:
        stream = int(stream)
        if stream == 0:
            raise ValueError("%s: stream 0 is ambiguous and not allowed by the interface; use "
                             "1 for CUDA's default stream" % what)
    else:
        stream = _exporter_stream(obj, device_id)
    return CudaArray(obj, ptr, code, shape, device_id, not readonly, stream, obj)


def _dlpack_device(obj):
    """(kind, device ordinal) where obj says through DLPack that it is CUDA memory, else None
    (no DLPack device, another kind, or an exporter whose DLPack side cannot tell)."""
    try:
        kind, index = obj.__dlpack_device__()
    except Exception:
        return None
    return (int(kind), int(index)) if kind in (_DL_CUDA, _DL_CUDA_MANAGED) else None


def from_dlpack_capsule(obj, capsule):
    """A CudaArray for the DLPack capsule obj exported. The capsule is kept with the op (as
    owner) and not marked used, so its exporter frees the tensor once the op lets it go."""
    what = "the DLPack export of %s" % type(obj).__name__
    if not _capsule_is_valid(capsule, b"dltensor"):
        raise ValueError("%s: not an unused \"dltensor\" capsule" % what)
    managed = _DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    t = managed.dl_tensor
    if t.device.device_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise ValueError("%s: device type %d is not CUDA memory" % (what, t.device.device_type))
    code = _DLPACK_DTYPES.get((t.dtype.code, t.dtype.bits))
    if code is None or t.dtype.lanes != 1:
        raise ValueError("%s: DLPack dtype (code %d, %d bits, %d lanes) is not supported" %
                         (what, t.dtype.code, t.dtype.bits, t.dtype.lanes))
    if t.ndim < 0 or (t.ndim > 0 and not t.shape):
        raise ValueError("%s: no shape for %d dimensions" % (what, t.ndim))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if any(d < 0 for d in shape):
        raise ValueError("%s: negative dimension in shape %s" % (what, shape))
    itemsize = _ITEMSIZE[code]
    strides = None
    if t.strides:
        strides = tuple(t.strides[i] * itemsize for i in range(t.ndim))
    _check_c_contiguous(what, shape, strides, itemsize)
    ptr = (t.data or 0) + t.byte_offset
    # DLPack (before its versioned form) cannot say whether the memory may be written.
    return CudaArray(obj, ptr, code, shape, t.device.device_id, False, "dlpack",
                     (obj, capsule))


def describe(obj):
    """A CudaArray for obj when it lives in CUDA memory, else None (a host array). Through
    __cuda_array_interface__ where it serves, else through DLPack: such an array is described
    once it is exported; see export_dlpack."""
    if isinstance(obj, np.ndarray):
        return None
    device = _dlpack_device(obj) if hasattr(obj, "__dlpack__") else None
    try:
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            return from_cuda_array_interface(obj, cai)
    except Exception:  # e.g. a dtype the interface cannot name, or an exporter refusing
        if device is None:
            raise
    if device is not None:
        return CudaArray(obj, 0, None, None, device[1], False, "dlpack", obj)
    return None


def export_dlpack(array, stream):
    """Exports a DLPack array on the op's stream (a cudaStream_t, 0 for CUDA's default)."""
    consumer = stream if stream != 0 else _CAI_LEGACY_STREAM
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(array.obj, torch.Tensor):
        # PyTorch exports a tensor only while its device is the current one.
        with torch.cuda.device(array.device_id):
            capsule = array.obj.__dlpack__(stream=consumer)
    else:
        capsule = array.obj.__dlpack__(stream=consumer)
    return from_dlpack_capsule(array.obj, capsule)


def op_stream(arrays):
    """The cudaStream_t an op on these arrays is ordered on (0: CUDA's legacy default stream,
    where no array names a stream)."""
    named = set()
    for a in arrays:
        # A PyTorch tensor that goes through DLPack is still ready on PyTorch's current stream.
        stream = _exporter_stream(a.obj, a.device_id) if a.stream == "dlpack" else a.stream
        if stream is not None:
            named.add(stream)
    if len(named) > 1:
        raise ValueError("the arrays of one op were exported on different CUDA streams (%s); "
                         "export them on one" % ", ".join(hex(s) for s in sorted(named)))
    if named:
        stream = named.pop()
        if stream == _CAI_PER_THREAD_STREAM:
            raise ValueError("the arrays were exported on CUDA's per-thread default stream, "
                             "which libhvd cannot order its work on; use a stream of your own")
        return 0 if stream == _CAI_LEGACY_STREAM else stream
    return 0


class _CuPy:
    """CuPy's arrays, streams and events (a framework: see the module's text)."""

    def __init__(self):
        import cupy

        self.cupy = cupy

    def supports(self, code):
        return code != _dtypes.BFLOAT16  # CuPy has no bfloat16 arrays

    def _stream(self, stream):
        if not stream:
            return self.cupy.cuda.Stream.null
        return self.cupy.cuda.ExternalStream(stream)

    def device_of(self, ptr):
        if not ptr:  # no elements: the current device
            return self.cupy.cuda.Device().id
        return int(self.cupy.cuda.runtime.pointerGetAttributes(ptr).device)

    def empty(self, shape, code, device_id, stream):
        with self.cupy.cuda.Device(device_id), self._stream(stream):
            out = self.cupy.empty(shape, dtype=_dtypes.numpy_dtype(code))
        return out, out.data.ptr

    def copy_from(self, ptr, shape, code, device_id, stream):
        out, dst = self.empty(shape, code, device_id, stream)
        if out.nbytes:
            runtime = self.cupy.cuda.runtime
            with self.cupy.cuda.Device(device_id):
                runtime.memcpyAsync(dst, ptr, out.nbytes, runtime.memcpyDeviceToDevice, stream)
        return out

    def record(self, stream, device_id):
        with self.cupy.cuda.Device(device_id):
            event = self.cupy.cuda.Event(disable_timing=True)
            event.record(self._stream(stream))
        return event

    def done(self, event):
        return event.done


class _Torch:
    """PyTorch's tensors, streams and events (a framework: see the module's text)."""

    def __init__(self):
        import torch

        from hvd.torch import _tensors  # hvd.torch's dtype table and device-memory view

        self.torch = torch
        self.tensors = _tensors
        self.dtypes = _tensors._DTYPES

    def supports(self, code):
        return code in self.dtypes

    def _stream(self, stream, device):
        cuda = self.torch.cuda
        if not stream:
            return cuda.default_stream(device)
        return cuda.ExternalStream(stream, device=device)

    def device_of(self, ptr):
        # PyTorch cannot ask a pointer: the current device (the op is refused at enqueue,
        # naming the array's device, if that is another).
        return self.torch.cuda.current_device()

    def empty(self, shape, code, device_id, stream):
        device = self.torch.device("cuda", device_id)
        with self.torch.cuda.stream(self._stream(stream, device)):
            out = self.torch.empty(shape, dtype=self.dtypes[code], device=device)
        return out, out.data_ptr()

    def copy_from(self, ptr, shape, code, device_id, stream):
        device = self.torch.device("cuda", device_id)
        with self.torch.cuda.stream(self._stream(stream, device)):
            out = self.torch.empty(shape, dtype=self.dtypes[code], device=device)
            if out.numel():
                raw = self.torch.as_tensor(
                    self.tensors._CudaArray(ptr, (out.numel() * out.element_size(),), "|u1"),
                    device=device)
                out.view(-1).view(self.torch.uint8).copy_(raw)
        return out

    def record(self, stream, device_id):
        event = self.torch.cuda.Event()
        event.record(self._stream(stream, self.torch.device("cuda", device_id)))
        return event

    def done(self, event):
        return event.query()


_FRAMEWORKS = {"cupy": _CuPy, "torch": _Torch}
_made = {}  # framework class -> its one instance, once its module imported


def framework_for(obj, codes):
    """The framework for an op whose first array is obj and whose arrays have the dtypes codes:
    obj's own when that is CuPy or PyTorch, else CuPy, else PyTorch, the first installed one
    that has every dtype. ValueError when none is."""
    root = type(obj).__module__.split(".")[0]
    kinds = [_FRAMEWORKS[root]] if root in _FRAMEWORKS else [_CuPy, _Torch]
    for kind in kinds:
        framework = _made.get(kind)
        if framework is None:
            try:
                framework = _made[kind] = kind()
            except ImportError:
                continue
        if all(framework.supports(c) for c in codes):
            return framework
    raise ValueError("an op on arrays in CUDA memory (here a %s) needs CuPy (pip install "
                     "cupy-cuda13x) or PyTorch with their dtypes (%s) installed: they make its "
                     "new arrays and tell when its device work is over" %
                     (type(obj).__name__, ", ".join(_dtypes.name(c) for c in sorted(set(codes)))))
