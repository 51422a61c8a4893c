# SPDX-License-Identifier: Apache-2.0
"""hvd.jax's collectives inside jax.jit: XLA FFI custom calls into _hvd_jax_ffi.so, a small
library built against the XLA FFI headers jaxlib ships and linked only to libhvd's C ABI.

Everything but the buffers is fixed when a function is traced: the op's name, its process
set, reduce op, scale factors, broadcast root, alltoall splits. Names are what ranks match
ops by: a name given by the caller becomes "<kind>.<name>" as in eager mode; otherwise the
n-th op of a kind traced in this process is "<kind>.jit.<n>", the same on every rank that
traces the same functions in the same order. Each call of a compiled function reuses its
names, so libhvd's response cache serves them from the second step on.

The handlers enqueue their collective and return at once (XLA waits on a future that a
libhvd wait settles), so independent collectives of one program are all in flight whatever
order XLA runs them in. A failure surfaces as JAX's runtime error whose message starts with
"HorovodInternalError: HVD_ERR_..." (or "ValueError: ..." for a call wrong on this rank).
"""

import ctypes
import os
import threading

import jax
import numpy as np

from hvd import _dtypes, _runtime
from hvd._backend import backend  # noqa: F401 (libhvd is loaded before the library using it)

_LIBRARY = "_hvd_jax_ffi.so"
_HANDLERS = {
    "allreduce": "HvdJaxAllreduce",
    "allgather": "HvdJaxAllgather",
    "broadcast": "HvdJaxBroadcast",
    "alltoall": "HvdJaxAlltoall",
    "reducescatter": "HvdJaxReducescatter",
    "grouped_sized": "HvdJaxGroupedSized",
}

_lock = threading.Lock()
_lib = None
_counts = {}


def library_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIBRARY)


def _load():
    """The custom calls' library, loaded and registered with XLA on first use."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if not os.path.exists(path):
            raise RuntimeError(
                "hvd.jax: %s is missing, so collectives cannot run inside jax.jit (eager ones "
                "work); configure libhvd with -DHVD_PYTHON_JAX_INTERPRETER=<a python with jax> "
                "to build it" % path)
        lib = ctypes.CDLL(path)
        lib.hvd_jax_set_context.argtypes = [ctypes.c_void_p]
        lib.hvd_jax_set_context.restype = None
        lib.hvd_jax_set_process_set.argtypes = [ctypes.c_int64, ctypes.c_void_p]
        lib.hvd_jax_set_process_set.restype = None
        for kind, symbol in _HANDLERS.items():
            jax.ffi.register_ffi_target("hvd_" + kind, jax.ffi.pycapsule(getattr(lib, symbol)),
                                        platform="cpu")
        _runtime.context_listeners.append(lib.hvd_jax_set_context)
        lib.hvd_jax_set_context(_runtime.state.ctx)
        _lib = lib
        return lib


def op_name(kind, name):
    """The name ranks match this traced op by (see the module's docstring)."""
    if name is not None:
        return "%s.%s" % (kind, name)
    with _lock:
        n = _counts.get(kind, 0)
        _counts[kind] = n + 1
    return "%s.jit.%d" % (kind, n)


def _process_set_id(process_set):
    if process_set is None or process_set.process_set_id == 0:
        return 0
    handle = process_set._handle_for(_runtime.context())
    _load().hvd_jax_set_process_set(process_set.process_set_id, handle)
    return process_set.process_set_id


def check_dtype(x):
    """ValueError for an element type libhvd has no dtype for (as in eager mode)."""
    _dtypes.code_of_numpy(np.dtype(x.dtype))


def _call(kind, results, operands, name, process_set, **attrs):
    _load()
    _runtime.context()  # ValueError when not initialised, as in eager mode
    for x in operands:
        check_dtype(x)
    call = jax.ffi.ffi_call("hvd_" + kind, results, has_side_effect=True)
    return call(*operands, name=name, process_set=np.int64(_process_set_id(process_set)),
                **attrs)


def _like(x, rows=None):
    shape = tuple(x.shape) if rows is None else (rows,) + tuple(x.shape[1:])
    return jax.ShapeDtypeStruct(shape, x.dtype)


def allreduce(xs, name, op, prescale, postscale, process_set):
    """A list of arrays reduced as one unit (a grouped allreduce for more than one)."""
    return _call("allreduce", [_like(x) for x in xs], xs, name, process_set,
                 op=np.int32(op), prescale=np.float64(prescale), postscale=np.float64(postscale))


def allgather(x, rows, name, process_set):
    """rows: the output's first dimension (every member's rows, summed)."""
    return _call("allgather", _like(x, rows), [x], name, process_set)


def broadcast(x, root, name, process_set):
    """root: the root's rank in the set."""
    return _call("broadcast", _like(x), [x], name, process_set, root=np.int32(root))


def alltoall(x, splits, received, name, process_set):
    """splits: rows sent to each member (None: even); received: rows from each member."""
    sent = np.asarray(splits if splits is not None else [], dtype=np.int32)
    got = np.asarray(received, dtype=np.int32)
    return _call("alltoall", _like(x, int(got.sum())), [x], name, process_set, splits=sent,
                 received=got)


def reducescatter(x, rows, name, op, prescale, postscale, process_set):
    return _call("reducescatter", _like(x, rows), [x], name, process_set, op=np.int32(op),
                 prescale=np.float64(prescale), postscale=np.float64(postscale))


def grouped_allgather(xs, rows, name, process_set):
    """rows[i]: output i's first dimension (every member's rows of xs[i], summed)."""
    return _call("grouped_sized", [_like(x, r) for x, r in zip(xs, rows)], xs, name,
                 process_set, op=np.int32(-1), prescale=np.float64(1.0),
                 postscale=np.float64(1.0))


def grouped_reducescatter(xs, rows, name, op, prescale, postscale, process_set):
    """rows[i]: this rank's block of xs[i]'s rows."""
    return _call("grouped_sized", [_like(x, r) for x, r in zip(xs, rows)], xs, name,
                 process_set, op=np.int32(op), prescale=np.float64(prescale),
                 postscale=np.float64(postscale))
