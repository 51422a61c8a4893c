# SPDX-License-Identifier: Apache-2.0
"""The Ray actor behind one rank of a RayExecutor (Horovod's BaseHorovodWorker).

The driver asks each actor where it runs (node_info), asks rank 0's actor to hold the
rendezvous port (reserve_port), hands every actor its rank's job variables (set_env) and
then runs functions in it (run, execute). The function calls hvd.init() itself and joins
the job through the library's rendezvous on rank 0, as under hvdrun.

A function that raises aborts this rank's context, so the other ranks' collectives fail at
once with HVD_ERR_PEER_FAILED instead of waiting for this rank; a context left aborted (or
failed) after a call is shut down, so the next call's hvd.init() joins afresh.
"""

import os
import socket

import ray

from hvd import _errors, _launch, _runtime
from hvd._backend import backend


def _abort_context():
    """Aborts this process's live context (the others learn it) and leaves the job."""
    ctx = _runtime.state.ctx
    if ctx is None:
        return
    try:
        backend.abort(ctx, _errors.ERR_ABORTED)
    finally:
        _shutdown_context()


def _shutdown_context():
    from hvd import _basics

    _basics.shutdown()


def _drop_failed_context():
    """Leaves the job when this process's context has failed (a peer died, an op timed out):
    the next hvd.init() then joins afresh instead of returning the dead context."""
    ctx = _runtime.state.ctx
    if ctx is not None and backend.context_error(ctx)[0] != _errors.OK:
        _shutdown_context()


class Worker:
    """One rank's actor. Ray runs its methods one at a time."""

    def __init__(self):
        self._executable = None
        self._port = None

    def node_info(self):
        """Where this actor runs: Ray's node id and IP, the host name, pid and GPU ids."""
        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
        }

    def reserve_port(self, addr):
        """Holds a free port of addr for rank 0's rendezvous server until release_port()."""
        self.release_port()
        self._port = _launch.ReservedPort(addr)
        return self._port.port

    def release_port(self):
        if self._port is not None:
            self._port.close()
            self._port = None

    def set_env(self, job_env, extra_env):
        """Makes this process rank's environment: the job variables, then extra_env."""
        _launch.apply_env(job_env)
        os.environ.update(extra_env)

    def start_executable(self, executable_cls, args, kwargs):
        if executable_cls is not None:
            self._executable = self._call(executable_cls, args, kwargs)

    def run(self, fn, args, kwargs):
        return self._call(fn, args, kwargs)

    def execute(self, fn):
        return self._call(fn, (self._executable,), {})

    def close(self):
        """Leaves the job (if this process is in one) and releases the rendezvous port."""
        try:
            _shutdown_context()
        finally:
            self.release_port()

    @staticmethod
    def _call(fn, args, kwargs):
        try:
            result = fn(*(args or ()), **(kwargs or {}))
        except BaseException:
            _abort_context()
            raise
        _drop_failed_context()
        return result
