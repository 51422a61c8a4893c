# SPDX-License-Identifier: Apache-2.0
"""torch.Tensor <-> libhvd tensor descriptions."""

import ctypes

import torch

from hvd import _dtypes, _runtime
from hvd._backend import backend
from hvd.process_sets import global_process_set

_CODES = {
    torch.uint8: _dtypes.UINT8,
    torch.int8: _dtypes.INT8,
    torch.int16: _dtypes.INT16,
    torch.int32: _dtypes.INT32,
    torch.int64: _dtypes.INT64,
    torch.float16: _dtypes.FLOAT16,
    torch.float32: _dtypes.FLOAT32,
    torch.float64: _dtypes.FLOAT64,
    torch.bool: _dtypes.BOOL,
    torch.bfloat16: _dtypes.BFLOAT16,
}
if hasattr(torch, "uint16"):  # PyTorch >= 2.3
    _CODES[torch.uint16] = _dtypes.UINT16
_DTYPES = {code: dtype for dtype, code in _CODES.items()}


def _no_fast_allreduce(tensor, output, average, name, op, prescale, postscale, process_set):
    return None


def _no_fast_grouped_allreduce(tensors, in_place, average, name, op, prescale, postscale,
                               process_set):
    return None


def _no_fast_allreduce_now(tensor, average, name, op, prescale, postscale, process_set):
    return None


# fast_allreduce(tensor, output, average, name, op, prescale, postscale, process_set): output
# is tensor (in place) or None (a new tensor). The handle of the op when it is the common case
# (a dense, contiguous CPU tensor, valid arguments, the global or a registered process set),
# started in one call of the pybind11 backend; else None, and the caller takes the generic path.
# fast_grouped_allreduce(tensors, in_place, ...) is the same for a list or tuple of tensors,
# enqueued as one group. fast_allreduce_now(tensor, average, ...) is allreduce_ of the common
# case, enqueued and waited for in one call: tensor once reduced, or None.
_torch_fast = getattr(backend, "torch_fast", None)
if _torch_fast is not None:
    _torch_fast.register(torch.Tensor, torch.strided, dict(_CODES), torch.empty_like,
                         global_process_set)
    fast_allreduce = _torch_fast.allreduce
    fast_grouped_allreduce = _torch_fast.grouped_allreduce
    fast_allreduce_now = _torch_fast.allreduce_now
else:
    fast_allreduce = _no_fast_allreduce
    fast_grouped_allreduce = _no_fast_grouped_allreduce
    fast_allreduce_now = _no_fast_allreduce_now

_DEVICE_CPU = 1
_DEVICE_CUDA = 2


def dtype_code(tensor):
    code = _CODES.get(tensor.dtype)
    if code is None:
        raise ValueError("Tensor type %s is not supported." % tensor.type())
    return code


# Tensor.is_cpu (PyTorch >= 1.13) is much cheaper than building tensor.device.
_HAS_IS_CPU = hasattr(torch.Tensor, "is_cpu")


def _device(tensor):
    if _HAS_IS_CPU and tensor.is_cpu:
        return _DEVICE_CPU, 0
    kind = tensor.device.type
    if kind == "cpu":
        return _DEVICE_CPU, 0
    if kind == "cuda":
        if not _runtime.cuda_built():
            raise ValueError("tensor is on %s, but this libhvd was built without CUDA support; "
                             "move it to the CPU (tensor.cpu()) or use a CUDA build of libhvd"
                             % tensor.device)
        return _DEVICE_CUDA, tensor.device.index or 0
    raise ValueError("tensors on %s are not supported (CPU and CUDA are)" % tensor.device)


def desc(tensor):
    """(data pointer, dtype code, shape, device type, device id) of a contiguous tensor."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError("expected a torch.Tensor, got %s" % type(tensor).__name__)
    if tensor.is_sparse:
        raise ValueError("sparse tensors are not supported here (use sparse_allreduce_async "
                         "or DistributedOptimizer(sparse_as_dense=True))")
    if not tensor.is_contiguous():
        raise ValueError("Tensor is required to be contiguous.")
    device_type, device_id = _device(tensor)
    return (tensor.data_ptr(), dtype_code(tensor), tuple(tensor.shape), device_type, device_id)


def in_out(tensors, outputs):
    """Descriptions of the inputs and outputs (lists of tensors) of an op; an in-place op
    (outputs is tensors) is described once."""
    ins = [desc(t) for t in tensors]
    return ins, (ins if outputs is tensors else [desc(o) for o in outputs])


def on_current_stream(ins, outs, keep):
    """As Horovod does for CUDA tensors: the op reads its inputs once the work queued so far on
    the current CUDA stream is done (an event recorded there is each tensor's ready event),
    and its result is valid on that stream. Returns (ins, outs, keep, stream), stream a
    torch.cuda.Stream; host tensors pass through with stream None. The event is kept alive
    with the op's tensors."""
    device_id = None
    for d in ins:
        if len(d) > 3 and d[3] == _DEVICE_CUDA:
            device_id = d[4]
            break
    if device_id is None:
        return ins, outs, keep, None
    stream = torch.cuda.current_stream(device_id)
    event = torch.cuda.Event()
    event.record(stream)
    handle = event.cuda_event

    def with_event(descs):
        if descs is None:
            return None
        return [d + (handle,) if len(d) > 3 and d[3] == _DEVICE_CUDA else d for d in descs]

    same = outs is ins
    ins = with_event(ins)
    outs = ins if same else with_event(outs)
    # The op's tensors are in use on the stream until the op is over there, though the handle
    # lets go of them once the work is queued: a tensor made on another stream is not reused
    # there before that.
    _record_on(keep, stream)
    return ins, outs, (keep, event), stream


def _record_on(objs, stream):
    """record_stream(stream) for every CUDA tensor in objs (a tensor, or lists and tuples of
    them, nested)."""
    if isinstance(objs, torch.Tensor):
        if objs.is_cuda:
            objs.record_stream(stream)
    elif isinstance(objs, (list, tuple)):
        for o in objs:
            _record_on(o, stream)


def on_stream(stream, finish):
    """finish(req) run with `stream` (the op's) current: the copies it makes of the library's
    outputs queue there, after the op and before the request's release frees those outputs
    there. The stream current where it runs then waits for them, so its result is valid
    there too."""

    def run(req):
        current = torch.cuda.current_stream(stream.device)
        with torch.cuda.stream(stream):
            result = finish(req)
        if current != stream:
            current.wait_stream(stream)
            _record_on(result, current)  # made on the op's stream, read on this one
        return result

    return run


class _CudaArray:
    """A view of device memory the library owns, for torch.as_tensor (zero copy)."""

    def __init__(self, ptr, shape, typestr):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": tuple(shape),
                                         "typestr": typestr, "version": 2}


def _typestr(dtype):
    if dtype == torch.bfloat16:  # no array-interface code: moved as int16, viewed back
        return "<i2"
    if dtype == getattr(torch, "uint16", None):
        return "<u2"
    return {torch.bool: "|b1", torch.uint8: "|u1", torch.int8: "|i1", torch.int16: "<i2",
            torch.int32: "<i4", torch.int64: "<i8", torch.float16: "<f2",
            torch.float32: "<f4", torch.float64: "<f8"}[dtype]


def contiguous(tensor):
    """The tensor itself when contiguous, else a contiguous copy (for out-of-place ops)."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError("expected a torch.Tensor, got %s" % type(tensor).__name__)
    return tensor if tensor.is_contiguous() else tensor.contiguous()


def copy_output(req, i, like):
    """Output i of a completed request as a new tensor on like's device."""
    ptr, code, shape = backend.output(req, i)
    dtype = _DTYPES[code]
    if like.device.type == "cuda":  # the library's output is memory of like's device
        if not ptr or 0 in shape:
            return torch.empty(shape, dtype=dtype, device=like.device)
        view = torch.as_tensor(_CudaArray(ptr, shape, _typestr(dtype)), device=like.device)
        return view.view(dtype).clone() if dtype == torch.bfloat16 else view.clone()
    out = torch.empty(shape, dtype=_DTYPES[code])
    nbytes = out.numel() * out.element_size()
    if nbytes:
        ctypes.memmove(out.data_ptr(), ptr, nbytes)
    return out if like.device.type == "cpu" else out.to(like.device)
