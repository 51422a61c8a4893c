# SPDX-License-Identifier: Apache-2.0
"""hvd.ray when workers fail: a worker actor killed mid-run gives the driver a WorkerError
naming it within a bound while the other ranks' collectives fail with HVD_ERR_PEER_FAILED; a
function that raises on one rank fails the others at once and leaves the executor usable;
run_timeout_s bounds a run that does not end."""

import os
import signal
import time

import numpy as np
import pytest
import ray

import hvd
from hvd.ray import RayExecutor, WorkerError

# How long a failure may take to reach the driver (it takes well under a second here).
FAILURE_BOUND_S = 20


def allreduce_loop(victim, rounds_before):
    """Allreduces in a loop; on rank `victim`, after rounds_before rounds, the actor's process
    is killed (SIGKILL), or the function raises."""
    hvd.init()
    for i in range(100000):
        if i == rounds_before and hvd.rank() == victim[0]:
            if victim[1] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise ValueError("rank %d gives up" % hvd.rank())
        hvd.allreduce(np.ones(16), name="loop")
    return "not reached"


def sum_of_ranks():
    hvd.init()
    return float(hvd.allreduce(np.array([float(hvd.rank())]), op=hvd.Sum)[0])


def test_actor_killed_mid_run():
    ex = RayExecutor(RayExecutor.create_settings(timeout_s=30, run_timeout_s=120),
                     num_workers=3)
    ex.start()
    start = time.monotonic()
    with pytest.raises(WorkerError) as info:
        ex.run(allreduce_loop, args=[(1, "kill"), 20])
    assert time.monotonic() - start < FAILURE_BOUND_S
    e = info.value
    assert e.dead_ranks == [1] and e.shut_down and e.unfinished == []
    assert isinstance(e.errors[1], ray.exceptions.RayActorError)
    assert str(e).startswith("hvd.ray: run(allreduce_loop) failed on 3 of 3 rank(s): rank 1 (")
    assert "its worker actor died" in str(e)
    for survivor in (0, 2):
        cause = e.errors[survivor].cause
        assert isinstance(cause, hvd.HorovodInternalError), repr(cause)
        assert "HVD_ERR_PEER_FAILED" in str(cause) and "rank 1 failed" in str(cause)
    assert ex.workers == []
    with pytest.raises(RuntimeError, match="not started"):
        ex.run(sum_of_ranks)


def test_function_raising_fails_the_others_and_keeps_the_executor():
    ex = RayExecutor(RayExecutor.create_settings(timeout_s=30, run_timeout_s=120),
                     num_workers=2)
    ex.start()
    try:
        start = time.monotonic()
        with pytest.raises(WorkerError) as info:
            ex.run(allreduce_loop, args=[(0, "raise"), 5])
        assert time.monotonic() - start < FAILURE_BOUND_S
        e = info.value
        assert e.dead_ranks == [] and not e.shut_down
        assert isinstance(e.errors[0].cause, ValueError)
        assert "rank 0 (" in str(e) and "ValueError: rank 0 gives up" in str(e)
        assert "HVD_ERR_PEER_FAILED" in str(e.errors[1].cause)
        # Both ranks left the failed job: the next run joins a new one.
        assert ex.run(sum_of_ranks) == [1.0, 1.0]
    finally:
        ex.shutdown()


def test_run_timeout():
    ex = RayExecutor(RayExecutor.create_settings(timeout_s=30, run_timeout_s=2),
                     num_workers=2)
    ex.start()
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"run\(sleep\) did not finish within 2 s "
                       r"\(run_timeout_s\); ranks still running: \[0, 1\]"):
        ex.run(time.sleep, args=[60])
    assert 2 <= time.monotonic() - start < 2 + FAILURE_BOUND_S
    assert ex.workers == []
