# SPDX-License-Identifier: Apache-2.0
"""hvd.spark.run's driver side: checks the arguments, starts the barrier stage on a thread of
its own (a Spark job group, so that it can be cancelled), waits start_timeout for all its
tasks to start, then for the job, and turns a failed job into the failing rank's error."""

import os
import socket
import sys
import time
from collections import namedtuple

from hvd import _launch

# What every task receives in its closure (the job's secret included).
TaskSettings = namedtuple("TaskSettings", ["job", "env", "nics", "relay_addr", "relay_port"])

_DRAIN_S = 10.0  # the tasks' last output after the job ended
_CANCEL_S = 30.0  # the job's thread after a cancel
_POLL_S = 0.1


def _check_args(fn, args, kwargs, num_proc, start_timeout, use_mpi, use_gloo, extra_mpi_args,
                env, stdout, stderr, verbose, nics, executable):
    """ValueError for what libhvd does not do or what is malformed."""
    if not callable(fn):
        raise ValueError("hvd.spark.run: fn must be callable, got %r" % (fn,))
    if not isinstance(args, (tuple, list)):
        raise ValueError("hvd.spark.run: args must be a tuple or list, got %r" % (args,))
    if not isinstance(kwargs, dict):
        raise ValueError("hvd.spark.run: kwargs must be a dict, got %r" % (kwargs,))
    if num_proc is not None and (type(num_proc) is not int or num_proc < 1):
        raise ValueError("hvd.spark.run: num_proc must be a positive int, got %r" % (num_proc,))
    if start_timeout is not None and (isinstance(start_timeout, bool) or
                                      not isinstance(start_timeout, (int, float)) or
                                      not start_timeout > 0):
        raise ValueError("hvd.spark.run: start_timeout must be a positive number of seconds, "
                         "got %r" % (start_timeout,))
    if use_mpi:
        raise ValueError("hvd.spark.run: use_mpi=True asks for MPI, which libhvd does not use: "
                         "the tasks meet through libhvd's own authenticated TCP rendezvous "
                         "(leave use_mpi unset)")
    if extra_mpi_args:
        raise ValueError("hvd.spark.run: extra_mpi_args are for mpirun, which libhvd does not "
                         "use (leave them unset)")
    if use_gloo is not None and not isinstance(use_gloo, bool):
        raise ValueError("hvd.spark.run: use_gloo must be a bool, got %r" % (use_gloo,))
    if env is not None:
        if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
            raise ValueError("hvd.spark.run: env must be a dict with str keys, got %r" % (env,))
        taken = sorted(set(env) & set(_launch.JOB_VARIABLES))
        if taken:
            raise ValueError("hvd.spark.run: env must not set %s: hvd.spark.run sets them for "
                             "each rank" % ", ".join(taken))
    for name, stream in (("stdout", stdout), ("stderr", stderr)):
        if stream is not None and not callable(getattr(stream, "write", None)):
            raise ValueError("hvd.spark.run: %s must be a stream with write(), got %r"
                             % (name, stream))
    if type(verbose) is not int:
        raise ValueError("hvd.spark.run: verbose must be an int, got %r" % (verbose,))
    if nics is not None and (isinstance(nics, str) or
                             not all(isinstance(n, str) and n for n in nics)):
        raise ValueError("hvd.spark.run: nics must be a list of interface names, got %r"
                         % (nics,))
    if executable is not None:
        raise ValueError("hvd.spark.run: executable is not used: fn runs in Spark's own Python "
                         "workers (choose their interpreter with PYSPARK_PYTHON or "
                         "spark.pyspark.python)")


def start_timeout_s(start_timeout):
    """start_timeout, else HVD_SPARK_START_TIMEOUT or HOROVOD_SPARK_START_TIMEOUT, else 600."""
    if start_timeout is not None:
        return float(start_timeout)
    for name in ("HVD_SPARK_START_TIMEOUT", "HOROVOD_SPARK_START_TIMEOUT"):
        value = os.environ.get(name)
        if value:
            try:
                seconds = float(value)
            except ValueError:
                seconds = -1.0
            if not seconds > 0:
                raise ValueError("hvd.spark.run: %s=%r is not a positive number of seconds"
                                 % (name, value))
            return seconds
    return 600.0


def _active_context():
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        raise RuntimeError("hvd.spark.run: no active SparkContext (start a SparkSession "
                           "first)")
    return sc


def _driver_addr(sc):
    """The driver's address as the executors reach it, and an address to bind there."""
    host = sc.getConf().get("spark.driver.host") or socket.gethostname()
    try:
        bind = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0]
    except OSError:
        bind = ""
    return host, bind


def _slots(sc):
    """The task slots the cluster has now (Spark's own count), or None where unavailable."""
    try:
        jsc = sc._jsc.sc()
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager()
                                             .defaultResourceProfile()))
    except Exception:  # noqa: BLE001 - a Spark without this internal method
        return None


def _tasks_started(sc, group, num_proc):
    """Whether Spark reports num_proc running or finished tasks of the job group's stage."""
    tracker = sc.statusTracker()
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job else ()):
            stage = tracker.getStageInfo(stage_id)
            if stage and stage.numActiveTasks + stage.numCompletedTasks >= num_proc:
                return True
    return False


def _start_timeout_error(sc, num_proc, timeout_s):
    slots = _slots(sc)
    have = "" if slots is None else "; the cluster has %d now" % slots
    return TimeoutError(
        "hvd.spark.run: timed out after %g s waiting for the %d Spark tasks to start. Each "
        "rank runs in a task of one barrier stage, which starts all its tasks together and "
        "needs %d free task slots at once%s. Lower num_proc, add executors, or raise "
        "start_timeout (HOROVOD_SPARK_START_TIMEOUT) where executors are allocated on demand."
        % (timeout_s, num_proc, num_proc, have))


def _failed_for_another(text):
    """Whether a rank's error is the library telling it that another rank failed."""
    lines = text.strip().splitlines()
    return bool(lines) and "HVD_ERR_PEER_FAILED" in lines[-1]


def _job_error(relay, spark_error):
    """The exception for a failed job: the first rank that reported an error of its own (the
    others failed because of it, and may report first), else the first rank that reported
    one, else Spark's own error."""
    if not relay.errors:  # Spark's message without the JVM's stack frames
        text = [line for line in str(spark_error).strip().splitlines()
                if not line.startswith("\tat ")]
        return RuntimeError("hvd.spark.run: the Spark job failed: %s" % "\n".join(text[:40]))
    errors = list(relay.errors)
    first = next((i for i, (_, t) in enumerate(errors) if not _failed_for_another(t)), 0)
    rank, text = errors.pop(first)
    message = "hvd.spark.run: rank %d failed:\n%s" % (rank, text.rstrip())
    others = ["  rank %d: %s" % (r, t.strip().splitlines()[-1]) for r, t in errors]
    if others:
        message += "\nthen:\n" + "\n".join(others)
    return RuntimeError(message)


def _mapper(fn, args, kwargs, settings):
    def run_partition(_):
        from hvd.spark._task import run_task

        yield run_task(fn, args, kwargs, settings)

    return run_partition


def run(fn, args=(), kwargs={}, num_proc=None, start_timeout=None, use_mpi=None, use_gloo=None,
        extra_mpi_args=None, env=None, stdout=None, stderr=None, verbose=1, nics=None,
        prefix_output_with_timestamp=False, executable=None):
    """See hvd.spark.run."""
    from pyspark import InheritableThread

    from hvd.spark._relay import RelayServer

    _check_args(fn, args, kwargs, num_proc, start_timeout, use_mpi, use_gloo, extra_mpi_args,
                env, stdout, stderr, verbose, nics, executable)
    timeout_s = start_timeout_s(start_timeout)
    sc = _active_context()
    if num_proc is None:
        num_proc = sc.defaultParallelism
    job = _launch.new_job()
    host, bind = _driver_addr(sc)
    relay = RelayServer(job.secret, bind, stdout or sys.stdout, stderr or sys.stderr,
                        prefix_output_with_timestamp)
    settings = TaskSettings(job, {k: str(v) for k, v in (env or {}).items()}, list(nics or []),
                            host, relay.port)
    group = "hvd.spark.run.%s" % job.job_id
    outcome = {}

    def spark_job():
        sc.setJobGroup(group, "hvd.spark.run: %d ranks" % num_proc, interruptOnCancel=True)
        try:
            rdd = sc.parallelize(range(num_proc), num_proc).barrier()
            outcome["results"] = rdd.mapPartitions(_mapper(fn, args, kwargs, settings)).collect()
        except BaseException as e:  # noqa: BLE001 - raised on the caller's thread
            outcome["error"] = e

    thread = InheritableThread(target=spark_job, name="hvd.spark.run", daemon=True)
    try:
        thread.start()
        deadline = time.monotonic() + timeout_s
        while thread.is_alive() and not (relay.registered(num_proc) or
                                         _tasks_started(sc, group, num_proc)):
            if time.monotonic() > deadline:
                sc.cancelJobGroup(group)
                thread.join(_CANCEL_S)
                raise _start_timeout_error(sc, num_proc, timeout_s)
            thread.join(_POLL_S)
        if verbose >= 2:
            sys.stderr.write("hvd.spark.run: the %d tasks started\n" % num_proc)
        while thread.is_alive():  # as long as fn runs
            thread.join(1.0)
        relay.drain(_DRAIN_S)
    except BaseException:
        sc.cancelJobGroup(group)
        raise
    finally:
        relay.close()
    if "error" in outcome:
        raise _job_error(relay, outcome["error"]) from outcome["error"]
    return [result for _, result in sorted(outcome["results"], key=lambda r: r[0])]
