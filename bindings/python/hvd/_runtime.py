# SPDX-License-Identifier: Apache-2.0
"""The process-wide libhvd context behind Horovod's module-level API, and the table of
outstanding requests behind its integer handles.

One context per process, as in Horovod: init() joins the job, shutdown() leaves it, and the
pair may repeat any number of times. Thread safety: init/shutdown must not race with each
other; enqueue, poll and synchronize may be called from any thread (the backward pass runs
gradient hooks on autograd's threads).
"""

import atexit
import os
import threading

from hvd import _dtypes, _errors, _requests
from hvd._backend import backend

# Reduction ops, with Horovod's values.
Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

# Environment variables by which a launcher announces rank and size (hvdrun, Open MPI, PMI,
# Slurm, torchrun-style), as libhvd's launcher detection reads them; PMI_ID: Hydra's PMI_PORT
# model, whose process manager tells rank and size.
_LAUNCHER_RANK_VARIABLES = ("HVD_RANK", "HVD_ELASTIC_ADDR", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                            "PMI_ID", "SLURM_PROCID", "RANK")

_FEATURE_CUDA = 1 << 1
_FEATURE_NCCL = 1 << 2


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.ctx = None
        self.rank = self.size = self.local_rank = self.local_size = 0
        self.cross_rank = self.cross_size = 0
        self.homogeneous = True
        self.generation = 0  # bumped by every shutdown: invalidates process sets


state = _State()

# The outstanding requests behind the integer handles: the pybind11 backend keeps them in C++
# (where its fast paths add theirs), the ctypes backend in Python. The same functions either
# way: add, poll, synchronize, detach_all, release_detached, set_session.
requests = getattr(backend, "requests", None) or _requests.RequestTable(backend)

# Callables told of the process's context: the new handle after init, None before finalize
# (hvd.jax hands it to its XLA custom calls, which run outside Python).
context_listeners = []


def _tell_listeners(ctx):
    for listener in context_listeners:
        listener(ctx)


def _not_initialized():
    return _errors.HvdValueError("Horovod has not been initialized; use hvd.init().",
                                 _errors.ERR_NOT_READY)


def context():
    """The live context handle; ValueError when not initialised."""
    ctx = state.ctx
    if ctx is None:
        raise _not_initialized()
    return ctx


def _launched():
    return any(os.environ.get(v) for v in _LAUNCHER_RANK_VARIABLES)


def init_context():
    """Joins the job unless already joined. Returns True if this call joined it.

    Without a launcher's environment the process runs as a job of one rank, as Horovod
    does when a script is started with plain `python`."""
    with state.lock:
        if state.ctx is not None:
            return False
        if _launched():
            ctx = backend.init()
        else:
            ctx = backend.init(rank=0, size=1, unique_id=backend.get_unique_id())
        state.ctx = ctx
        state.rank = backend.rank(ctx, 0)
        state.size = backend.size(ctx, 0)
        state.local_rank = backend.local_rank(ctx)
        state.local_size = backend.local_size(ctx)
        state.cross_rank = backend.cross_rank(ctx)
        state.cross_size = backend.cross_size(ctx)
        requests.set_session(ctx, state.generation)
        _tell_listeners(ctx)
    state.homogeneous = _all_hosts_alike()
    return True


def _all_hosts_alike():
    """Whether every host runs the same number of ranks (one allgather at init)."""
    import array

    mine = array.array("i", [state.local_size])
    addr, _ = mine.buffer_info()
    gathered = run("allgather", [(addr, _dtypes.INT32, (1,))], keep=mine, name="hvd.init.local_sizes",
                   finish=lambda req: array.array("i", output_bytes(req, 4)))
    return len(set(gathered)) == 1


def output_bytes(req, itemsize=1):
    """The bytes of a completed request's 1-d library-owned output (itemsize bytes a row)."""
    import ctypes

    ptr, _, shape = backend.output(req, 0)
    return ctypes.string_at(ptr, shape[0] * itemsize) if shape[0] else b""


def shutdown_context():
    """Leaves the job. Outstanding handles fail; a no-op when not initialised."""
    with state.lock:
        ctx = state.ctx
        if ctx is None:
            return
        _tell_listeners(None)
        state.ctx = None
        state.generation += 1
        requests.set_session(None, state.generation)
        requests.detach_all()
    try:
        backend.finalize(ctx)
    finally:
        requests.release_detached()


atexit.register(shutdown_context)


def is_initialized():
    return state.ctx is not None


def _topology(field):
    context()
    return getattr(state, field)


def rank():
    return _topology("rank")


def size():
    return _topology("size")


def local_rank():
    return _topology("local_rank")


def local_size():
    return _topology("local_size")


def cross_rank():
    return _topology("cross_rank")


def cross_size():
    return _topology("cross_size")


def elastic_membership():
    """(membership round this process joined, whether workers wait to join a later one) in an
    elastic job (hvdrun --min-np/--max-np); (-1, False) otherwise. Asks hvdrun in an elastic
    job."""
    return backend.elastic_membership(context())


def is_homogeneous():
    context()
    return state.homogeneous


def cuda_built():
    return bool(backend.features() & _FEATURE_CUDA)


def nccl_built():
    return bool(backend.features() & _FEATURE_NCCL)


def start_timeline(file_path, mark_cycles=False):
    """Starts writing this rank's timeline (Chrome trace JSON) to file_path."""
    if not file_path:
        raise ValueError("file_path must not be empty")
    backend.timeline_start(context(), str(file_path), bool(mark_cycles))


def stop_timeline():
    backend.timeline_stop(context())


# ------------------------------------------------------------------ requests and handles


def enqueue(kind, ins=(), outs=None, keep=None, finish=None, name=None, process_set=None,
            op=None, prescale=1.0, postscale=1.0, root=None, splits=None, stream=None):
    """Starts a collective and returns its integer handle for poll()/synchronize().

    keep: objects that own the memory the op uses (kept alive until it completes);
    finish(req): builds the result once the op succeeded (default: None); stream: for CUDA
    tensors, the cudaStream_t (an int) on which the result is to be valid."""
    ctx = context()
    ps = process_set._handle_for(ctx) if process_set is not None else 0
    if name is not None:  # as Horovod: names are per kind of op ("allreduce.<name>")
        name = "%s.%s" % (kind, name)
    if type(ins) is not list:
        ins = list(ins)
    if outs is not None and type(outs) is not list:
        outs = list(outs)
    if stream is None:
        req = backend.enqueue(kind, ctx, ins, outs, name, ps, op, float(prescale),
                              float(postscale), root, splits, None)
    else:
        req = backend.enqueue(kind, ctx, ins, outs, name, ps, op, float(prescale),
                              float(postscale), root, splits, None, stream)
    return requests.add(req, keep, finish)


def poll(handle):
    """True once the op behind handle has finished (successfully or not). Never blocks."""
    return requests.poll(handle)


def synchronize(handle):
    """Waits for the op behind handle and returns its result; HorovodInternalError if it
    failed. The handle is consumed either way."""
    return requests.synchronize(handle)


def run(kind, ins=(), outs=None, **kwargs):
    """enqueue + synchronize."""
    return synchronize(enqueue(kind, ins, outs, **kwargs))
