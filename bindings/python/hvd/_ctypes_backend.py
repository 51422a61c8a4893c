# SPDX-License-Identifier: Apache-2.0
"""The pure-Python backend: libhvd's C ABI through ctypes (no compiler needed).

Both backends expose the same functions (see hvd/_backend.py for the contract). Handles are
plain ints; a failed call raises the exception hvd._errors.error_for() picks. ctypes drops
the GIL for every foreign call, so waits let other Python threads run.
"""

import ctypes
import operator

from hvd import _errors
from hvd._library import library_path

NAME = "ctypes"

# hvd.h: HVD_ABI_VERSION, and the version code of the header these structs mirror.
_ABI_VERSION = 1
_MAX_NDIM = 32

_OP_FIELD_NAME = 1 << 0
_OP_FIELD_PROCESS_SET = 1 << 1
_OP_FIELD_REDUCE_OP = 1 << 2
_OP_FIELD_SCALE = 1 << 3
_OP_FIELD_ROOT = 1 << 4
_OP_FIELD_SPLITS = 1 << 5
_OP_FIELD_TIMEOUT = 1 << 6
_OP_FIELD_STREAM = 1 << 7  # a cudaStream_t, for ops on CUDA tensors
_TENSOR_FIELD_READY_EVENT = 1 << 0  # a cudaEvent_t the data is valid after (CUDA tensors)

_INIT_FIELD_RANK = 1 << 0
_INIT_FIELD_UNIQUE_ID = 1 << 1
_INIT_FIELD_TIMEOUT = 1 << 2

UNIQUE_ID_BYTES = 128


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ready_event", ctypes.c_void_p),
    ]


class _OpParams(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("name", ctypes.c_char_p),
        ("process_set", ctypes.c_void_p),
        ("reduce_op", ctypes.c_int32),
        ("root_rank", ctypes.c_int32),
        ("prescale", ctypes.c_double),
        ("postscale", ctypes.c_double),
        ("splits", ctypes.POINTER(ctypes.c_int32)),
        ("timeout_ms", ctypes.c_int64),
        ("stream", ctypes.c_void_p),
        ("num_splits", ctypes.c_int32),
    ]


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class _InitParams(ctypes.Structure):
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("rank", ctypes.c_int32),
        ("size", ctypes.c_int32),
        ("unique_id", _UniqueId),
        ("timeout_ms", ctypes.c_int64),
    ]


_lib = ctypes.CDLL(library_path())
_status = ctypes.c_int
_handle = ctypes.c_void_p
_i32p = ctypes.POINTER(ctypes.c_int32)


def _declare(name, restype, *argtypes):
    fn = getattr(_lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_version_code = _declare("hvd_version", ctypes.c_uint32)
_version_string = _declare("hvd_version_string", ctypes.c_char_p)
_features = _declare("hvd_features", ctypes.c_uint64)
_last_error = _declare("hvd_last_error", ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
_get_unique_id = _declare("hvd_get_unique_id", _status, ctypes.POINTER(_UniqueId))
_init = _declare(
    "hvd_init_versioned", _status, ctypes.c_uint32, ctypes.c_uint32,
    ctypes.POINTER(_InitParams), ctypes.POINTER(_handle))
_finalize = _declare("hvd_finalize", _status, _handle)
_abort = _declare("hvd_abort", _status, _handle, _status)
_context_error = _declare("hvd_context_error", _status, _handle)
_rank = _declare("hvd_rank", _status, _handle, _handle, _i32p)
_size = _declare("hvd_size", _status, _handle, _handle, _i32p)
_local_rank = _declare("hvd_local_rank", _status, _handle, _i32p)
_local_size = _declare("hvd_local_size", _status, _handle, _i32p)
_cross_rank = _declare("hvd_cross_rank", _status, _handle, _i32p)
_cross_size = _declare("hvd_cross_size", _status, _handle, _i32p)
_elastic_membership = _declare(
    "hvd_elastic_membership", _status, _handle, ctypes.POINTER(ctypes.c_int64), _i32p)
_ps_create = _declare(
    "hvd_process_set_create", _status, _handle, _i32p, ctypes.c_int32, ctypes.POINTER(_handle))
_ps_destroy = _declare("hvd_process_set_destroy", _status, _handle, _handle)
_ps_included = _declare("hvd_process_set_included", _status, _handle, _handle, _i32p)
_tensor_p = ctypes.POINTER(_Tensor)
_params_p = ctypes.POINTER(_OpParams)
_req_p = ctypes.POINTER(_handle)
_tensor_pp = ctypes.POINTER(_tensor_p)
_ENQUEUE = {
    "allreduce": _declare("hvd_allreduce_enqueue", _status, _handle, _tensor_p, _tensor_p,
                          _params_p, _req_p),
    "broadcast": _declare("hvd_broadcast_enqueue", _status, _handle, _tensor_p, _tensor_p,
                          _params_p, _req_p),
    "allgather": _declare("hvd_allgather_enqueue", _status, _handle, _tensor_p, _params_p,
                          _req_p),
    "allgather_into": _declare("hvd_allgather_into_enqueue", _status, _handle, _tensor_p,
                               _tensor_p, _params_p, _req_p),
    "alltoall": _declare("hvd_alltoall_enqueue", _status, _handle, _tensor_p, _params_p, _req_p),
    "reducescatter": _declare("hvd_reducescatter_enqueue", _status, _handle, _tensor_p,
                              _params_p, _req_p),
    "barrier": _declare("hvd_barrier_enqueue", _status, _handle, _params_p, _req_p),
    "join": _declare("hvd_join_enqueue", _status, _handle, _params_p, _req_p),
    "grouped_allreduce": _declare("hvd_grouped_allreduce_enqueue", _status, _handle, _tensor_pp,
                                  _tensor_pp, ctypes.c_int32, _params_p, _req_p),
    "grouped_allgather": _declare("hvd_grouped_allgather_enqueue", _status, _handle, _tensor_pp,
                                  ctypes.c_int32, _params_p, _req_p),
    "grouped_reducescatter": _declare("hvd_grouped_reducescatter_enqueue", _status, _handle,
                                      _tensor_pp, ctypes.c_int32, _params_p, _req_p),
}
_timeline_start = _declare("hvd_timeline_start", _status, _handle, ctypes.c_char_p,
                           ctypes.c_int32)
_timeline_stop = _declare("hvd_timeline_stop", _status, _handle)
_config_set = _declare("hvd_config_set", _status, _handle, ctypes.c_int32, ctypes.c_double)
_config_get = _declare("hvd_config_get", _status, _handle, ctypes.c_int32,
                       ctypes.POINTER(ctypes.c_double))
_status_name = _declare("hvd_status_name", ctypes.c_char_p, _status)
_strerror = _declare("hvd_strerror", ctypes.c_char_p, _status)
_req_test = _declare("hvd_request_test", _status, _handle)
_req_wait = _declare("hvd_request_wait", _status, _handle, ctypes.c_int64)
_req_output = _declare("hvd_request_output", _status, _handle, ctypes.c_int32, _tensor_p)
_req_splits = _declare("hvd_request_received_splits", _status, _handle, _i32p, ctypes.c_int32)
_req_value = _declare("hvd_request_value", _status, _handle, ctypes.POINTER(ctypes.c_int64))
_req_message = _declare("hvd_request_message", ctypes.c_size_t, _handle, ctypes.c_char_p,
                        ctypes.c_size_t)
_req_release = _declare("hvd_request_release", _status, _handle)
_mem_alloc = _declare("hvd_mem_alloc", _status, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p))
_mem_free = _declare("hvd_mem_free", _status, ctypes.c_void_p)


def _detail(size_of, fill):
    n = size_of()
    buf = ctypes.create_string_buffer(n + 1)
    fill(buf, n + 1)
    return buf.value.decode("utf-8", "replace")


def last_error():
    """This thread's detail of the last failed libhvd call."""
    return _detail(lambda: _last_error(None, 0), _last_error)


def _check(status):
    if status < 0:
        raise _errors.error_for(status, last_error())
    return status


def version_code():
    return int(_version_code())


def version_string():
    return _version_string().decode()


def features():
    return int(_features())


def get_unique_id():
    uid = _UniqueId()
    _check(_get_unique_id(ctypes.byref(uid)))
    return ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES)


def init(rank=None, size=None, unique_id=None, timeout_ms=None):
    """Joins the job; returns the context handle. Blocks (GIL released) until all ranks met."""
    params = _InitParams()
    if rank is not None:
        params.field_mask |= _INIT_FIELD_RANK
        params.rank, params.size = rank, size
    if unique_id is not None:
        if len(unique_id) != UNIQUE_ID_BYTES:
            raise _errors.HvdValueError(
                "unique_id must be %d bytes, got %d" % (UNIQUE_ID_BYTES, len(unique_id)))
        params.field_mask |= _INIT_FIELD_UNIQUE_ID
        ctypes.memmove(ctypes.addressof(params.unique_id), unique_id, UNIQUE_ID_BYTES)
    if timeout_ms is not None:
        params.field_mask |= _INIT_FIELD_TIMEOUT
        params.timeout_ms = timeout_ms
    ctx = _handle()
    version = version_code()
    _check(_init(_ABI_VERSION, version, ctypes.byref(params), ctypes.byref(ctx)))
    return ctx.value


def finalize(ctx):
    _check(_finalize(ctx))


def abort(ctx, reason=_errors.ERR_ABORTED):
    _check(_abort(ctx, reason))


def context_error(ctx):
    """(status, detail) of the context: (0, "") while healthy."""
    status = _context_error(ctx)
    return status, (last_error() if status < 0 else "")


def _int_query(fn, *args):
    out = ctypes.c_int32()
    _check(fn(*args, ctypes.byref(out)))
    return out.value


def rank(ctx, ps):
    return _int_query(_rank, ctx, ps)


def size(ctx, ps):
    return _int_query(_size, ctx, ps)


def local_rank(ctx):
    return _int_query(_local_rank, ctx)


def local_size(ctx):
    return _int_query(_local_size, ctx)


def elastic_membership(ctx):
    """(round joined, whether workers wait to join a later round); round -1 when the job is
    not elastic."""
    round_ = ctypes.c_int64()
    pending = ctypes.c_int32()
    _check(_elastic_membership(ctx, ctypes.byref(round_), ctypes.byref(pending)))
    return round_.value, bool(pending.value)


def cross_rank(ctx):
    return _int_query(_cross_rank, ctx)


def cross_size(ctx):
    return _int_query(_cross_size, ctx)


def process_set_create(ctx, ranks):
    arr = (ctypes.c_int32 * len(ranks))(*ranks)
    ps = _handle()
    _check(_ps_create(ctx, arr, len(ranks), ctypes.byref(ps)))
    return ps.value


def process_set_destroy(ctx, ps):
    _check(_ps_destroy(ctx, ps))


def process_set_included(ctx, ps):
    return _int_query(_ps_included, ctx, ps) != 0


def timeline_start(ctx, path, mark_cycles):
    _check(_timeline_start(ctx, path.encode(), 1 if mark_cycles else 0))


def timeline_stop(ctx):
    _check(_timeline_stop(ctx))


def config_set(ctx, key, value):
    _check(_config_set(ctx, key, value))


def config_get(ctx, key):
    value = ctypes.c_double()
    _check(_config_get(ctx, key, ctypes.byref(value)))
    return value.value


def status_name(status):
    return _status_name(status).decode()


def strerror(status):
    return _strerror(status).decode()


def _checked_ints(values, bits, what):
    """values as Python ints within a signed integer of `bits` bits. ctypes would keep only the
    low bits of a larger value (2**32 + 8 as an int32 is 8): such a value is an error here, as
    it is in the pybind11 backend."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    out = []
    for v in values:
        try:
            i = operator.index(v)
        except TypeError:
            raise _errors.HvdValueError("%s must be an int, got %s"
                                        % (what, type(v).__name__)) from None
        if i < lo or i > hi:
            raise _errors.HvdValueError("%s is out of range of a %d-bit integer: %d"
                                        % (what, bits, i))
        out.append(i)
    return out


def _tensor(desc, keep):
    ptr, dtype, shape = desc[0], desc[1], desc[2]
    if len(shape) > _MAX_NDIM:
        raise _errors.HvdValueError("a tensor has %d dimensions; at most %d are supported"
                                    % (len(shape), _MAX_NDIM))
    shape = _checked_ints(shape, 64, "a tensor's dimension")
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    keep.append(dims)
    t = _Tensor()
    t.data = ptr
    t.dtype = dtype
    t.ndim = len(shape)
    t.shape = dims
    t.device_type = desc[3] if len(desc) > 3 else 1
    t.device_id = desc[4] if len(desc) > 4 else 0
    if len(desc) > 5 and desc[5]:
        t.field_mask |= _TENSOR_FIELD_READY_EVENT
        t.ready_event = desc[5]
    return t


def _params(name, ps, op, prescale, postscale, root, splits, timeout_ms, stream, keep):
    p = _OpParams()
    if name is not None:
        p.field_mask |= _OP_FIELD_NAME
        encoded = name.encode()
        keep.append(encoded)
        p.name = encoded
    if ps:
        p.field_mask |= _OP_FIELD_PROCESS_SET
        p.process_set = ps
    if op is not None:
        p.field_mask |= _OP_FIELD_REDUCE_OP
        p.reduce_op = op
    if prescale != 1.0 or postscale != 1.0:
        p.field_mask |= _OP_FIELD_SCALE
        p.prescale, p.postscale = prescale, postscale
    if root is not None:
        p.field_mask |= _OP_FIELD_ROOT
        p.root_rank = root
    if splits is not None:
        splits = _checked_ints(splits, 32, "a split")
        arr = (ctypes.c_int32 * max(len(splits), 1))(*splits)
        keep.append(arr)
        p.field_mask |= _OP_FIELD_SPLITS
        p.splits = arr
        p.num_splits = len(splits)
    if timeout_ms is not None:
        p.field_mask |= _OP_FIELD_TIMEOUT
        p.timeout_ms = timeout_ms
    if stream is not None:
        p.field_mask |= _OP_FIELD_STREAM
        p.stream = stream
    return p


def enqueue(kind, ctx, ins, outs=None, name=None, ps=None, op=None, prescale=1.0,
            postscale=1.0, root=None, splits=None, timeout_ms=None, stream=None):
    """Starts a collective; returns the request handle. ins/outs: lists of tensor
    descriptions (data pointer, dtype code, shape tuple[, device type, device id[, ready
    event]]); stream: a cudaStream_t (as an int) for ops on CUDA tensors."""
    fn = _ENQUEUE.get(kind)
    if fn is None:
        raise _errors.HvdValueError("unknown collective %r" % (kind,))
    keep = []
    params = _params(name, ps, op, prescale, postscale, root, splits, timeout_ms, stream, keep)
    req = _handle()
    if kind in ("barrier", "join"):
        status = fn(ctx, ctypes.byref(params), ctypes.byref(req))
    elif kind.startswith("grouped_"):
        tin = [_tensor(d, keep) for d in ins]
        pin = (_tensor_p * max(len(tin), 1))(*[ctypes.pointer(t) for t in tin])
        if kind == "grouped_allreduce":
            tout = [_tensor(d, keep) for d in outs]
            pout = (_tensor_p * max(len(tout), 1))(*[ctypes.pointer(t) for t in tout])
            status = fn(ctx, pin, pout, len(tin), ctypes.byref(params), ctypes.byref(req))
        else:
            status = fn(ctx, pin, len(tin), ctypes.byref(params), ctypes.byref(req))
    elif kind in ("allreduce", "broadcast", "allgather_into"):
        tin = _tensor(ins[0], keep)
        tout = _tensor(outs[0], keep)
        status = fn(ctx, ctypes.byref(tin), ctypes.byref(tout), ctypes.byref(params),
                    ctypes.byref(req))
    else:
        tin = _tensor(ins[0], keep)
        status = fn(ctx, ctypes.byref(tin), ctypes.byref(params), ctypes.byref(req))
    _check(status)
    return req.value


def test(req):
    """The request's status: INPROGRESS (1) while it runs. Never blocks."""
    return _req_test(req)


def wait(req, timeout_ms):
    """Blocks up to timeout_ms (GIL released); the final status or INPROGRESS."""
    return _req_wait(req, timeout_ms)


def output(req, i):
    """(data pointer, dtype code, shape tuple) of output i of a completed request."""
    t = _Tensor()
    status = _req_output(req, i, ctypes.byref(t))
    if status != _errors.OK:
        raise _errors.error_for(status, message(req) or last_error(), during_wait=True)
    return (t.data or 0, t.dtype, tuple(t.shape[k] for k in range(t.ndim)))


def received_splits(req, n):
    arr = (ctypes.c_int32 * max(n, 1))()
    _check(_req_splits(req, arr, n))
    return list(arr[:n])


def value(req):
    out = ctypes.c_int64()
    _check(_req_value(req, ctypes.byref(out)))
    return out.value


def message(req):
    return _detail(lambda: _req_message(req, None, 0), lambda b, n: _req_message(req, b, n))


def release(req):
    _check(_req_release(req))


def mem_alloc(nbytes):
    """hvd_mem_alloc: the address of nbytes of memory the ranks of one host share."""
    if nbytes < 0:
        raise _errors.HvdValueError("mem_alloc: nbytes is negative: %d" % nbytes)
    p = ctypes.c_void_p()
    _check(_mem_alloc(nbytes, ctypes.byref(p)))
    return int(p.value)


def mem_free(ptr):
    _check(_mem_free(ptr))
