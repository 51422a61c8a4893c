# SPDX-License-Identifier: Apache-2.0
"""Chooses the module that talks to libhvd.

Contract of a backend module (hvd/_ctypes_backend.py and the pybind11 extension
hvd/_hvd_pybind): ``NAME``; version_code(), version_string(), features(), last_error(),
get_unique_id() -> bytes; init(rank, size, unique_id, timeout_ms) -> ctx; finalize(ctx),
abort(ctx, reason), context_error(ctx) -> (status, detail); rank(ctx, ps), size(ctx, ps),
local_rank(ctx), local_size(ctx), cross_rank(ctx), cross_size(ctx);
process_set_create(ctx, ranks) -> ps, process_set_destroy(ctx, ps),
process_set_included(ctx, ps); timeline_start(ctx, path, mark_cycles), timeline_stop(ctx);
config_set(ctx, key, value), config_get(ctx, key) -> float (ctx 0: the process-wide default);
status_name(status), strerror(status) -> str;
enqueue(kind, ctx, ins, outs, name, ps, op, prescale, postscale, root, splits, timeout_ms)
-> req, with tensors described as (data pointer, dtype code, shape tuple[, device type,
device id[, ready event (a cudaEvent_t; None or 0: none)]]); test(req), wait(req,
timeout_ms) -> status; output(req, i) -> (pointer, dtype, shape);
received_splits(req, n) -> list; value(req) -> int; message(req) -> str;
release(req); mem_alloc(nbytes) -> address, mem_free(address). Handles are ints (0: NULL / the global process set). Failed calls raise what
hvd._errors.error_for() returns; wait and test return statuses instead of raising.

Optional, in the pybind11 extension only: ``requests``, the table of outstanding requests
behind hvd's integer handles (the ctypes backend uses hvd/_requests.py, with the same
functions), and ``torch_fast``, hvd.torch's allreduce of the common case in one call.

HVD_PY_BACKEND=ctypes|pybind forces one; by default the pybind11 extension is used when it
was built, else ctypes.
"""

import os

from hvd import _library
from hvd._errors import HvdValueError


def _load_pybind():
    from hvd import _hvd_pybind

    return _hvd_pybind


def _load_ctypes():
    from hvd import _ctypes_backend

    return _ctypes_backend


def load():
    choice = os.environ.get("HVD_PY_BACKEND", "").strip().lower()
    if choice == "pybind":
        return _load_pybind()
    if choice == "ctypes":
        return _load_ctypes()
    if choice:
        raise HvdValueError("HVD_PY_BACKEND=%r: expected 'ctypes' or 'pybind'" % choice)
    try:
        return _load_pybind()
    except ImportError:
        return _load_ctypes()


# Before libhvd loads: the GPU module reads HVD_NCCL_LIBRARY when it opens.
_library.point_at_pypi_nccl()
backend = load()
