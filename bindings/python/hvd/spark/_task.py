# SPDX-License-Identifier: Apache-2.0
"""What one task of hvd.spark.run's barrier stage does: learns its rank (the partition id)
and every task's host through the barrier context, makes its environment that of the job's
rank (rank 0 holding the rendezvous port until its hvd.init() binds it), runs fn with its
output relayed to the driver, and leaves the job: shut down when fn succeeded, aborted when
it raised, so that the other ranks' collectives fail with the library's peer-failure error
instead of waiting (and a reused Python worker starts the next job clean)."""

import contextlib
import json
import os
import socket
import sys
import traceback

from hvd import _launch


def _host_of(address):
    """The host of a Spark task address ("host:port", "[v6]:port")."""
    host = address.rsplit(":", 1)[0] if address.count(":") == 1 or "]" in address else address
    return host.strip("[]")


def _ip_of(host):
    """An IP address of host (itself when it is one)."""
    try:
        return socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0]
    except OSError as e:
        raise RuntimeError("hvd.spark: rank 0 cannot resolve its executor's host %r: %s"
                           % (host, e)) from e


@contextlib.contextmanager
def _restored_environment():
    """Puts os.environ back as it was (Spark may run the next task in this process)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for name in list(os.environ):
            if name not in saved:
                del os.environ[name]
        for name, value in saved.items():
            if os.environ.get(name) != value:
                os.environ[name] = value


@contextlib.contextmanager
def _redirected_output(client):
    from hvd.spark._relay import RelayStream

    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RelayStream(client, "stdout"), RelayStream(client, "stderr")
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _reservation_until_init(reserved):
    """Drops rank 0's port reservation as soon as this process joins the job (its rendezvous
    server has bound the port then), or at the end."""
    from hvd import _runtime

    def listener(ctx):
        if ctx is not None:
            reserved.close()

    _runtime.context_listeners.append(listener)
    try:
        yield
    finally:
        _runtime.context_listeners.remove(listener)
        reserved.close()


def _leave_job(failed):
    """Leaves the job fn joined and did not leave: aborted first when fn failed."""
    from hvd import _basics, _errors, _runtime
    from hvd._backend import backend

    ctx = _runtime.state.ctx
    if ctx is None:
        return
    if failed:
        try:
            backend.abort(ctx, _errors.ERR_ABORTED)
        except Exception:  # noqa: BLE001 - already aborted: shutdown still frees it
            pass
        try:
            _basics.shutdown()
        except Exception:  # noqa: BLE001 - fn's error is the one to report
            pass
    else:
        _basics.shutdown()


def _gather_hosts(ctx, rank, host):
    """Every rank's host, and rank 0's reservation (None elsewhere) and its port."""
    mine = {"host": host}
    reserved = None
    if rank == 0:
        mine["addr"] = _ip_of(host)
        reserved = _launch.ReservedPort(mine["addr"])
        mine["port"] = reserved.port
    try:
        gathered = [json.loads(m) for m in ctx.allGather(json.dumps(mine))]
    except BaseException:
        if reserved:
            reserved.close()
        raise
    return gathered, reserved


def job_env(rank, gathered, job, user_env, nics):
    """The environment of rank in the job whose ranks reported gathered."""
    hosts = [g["host"] for g in gathered]
    places = _launch.placement(hosts)
    env = _launch.worker_env(rank, len(hosts), places[rank], hosts[rank], gathered[0]["addr"],
                             gathered[0]["port"], job)
    if nics:
        env["HVD_IFACE"] = ",".join(nics)
    env.update(user_env)
    return env


def run_task(fn, args, kwargs, settings):
    """Runs fn as rank <partition id> of the job; returns (rank, fn's result)."""
    from pyspark import BarrierTaskContext

    from hvd.spark._relay import RelayClient

    ctx = BarrierTaskContext.get()
    rank = ctx.partitionId()
    host = _host_of(ctx.getTaskInfos()[rank].address)
    client = RelayClient(settings.relay_addr, settings.relay_port, settings.job.secret, rank)
    try:
        with _restored_environment(), _redirected_output(client):
            try:
                gathered, reserved = _gather_hosts(ctx, rank, host)
                _launch.apply_env(job_env(rank, gathered, settings.job, settings.env,
                                          settings.nics))
                if reserved is None:
                    result = fn(*args, **kwargs)
                else:
                    with _reservation_until_init(reserved):
                        result = fn(*args, **kwargs)
                _leave_job(failed=False)
            except BaseException:
                client.error(traceback.format_exc())
                _leave_job(failed=True)
                raise
    finally:
        client.close()
    return rank, result
