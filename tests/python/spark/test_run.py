# SPDX-License-Identifier: Apache-2.0
"""hvd.spark.run on Spark's local[3] master: jobs of 2 and 3 ranks with every collective, the
ranks' topology, results in rank order, output prefixed by rank, a rank's failure, and more
ranks than task slots."""

import io
import os
import sys
import time

import numpy as np
import pytest
from pyspark import cloudpickle

import hvd.spark
from conftest import SLOTS

# The executors cannot import this module: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def collectives():
    """Every collective on NumPy arrays; returns (rank, size, local rank, local size, cross
    rank, cross size, {collective: (result, what this rank computes it must be)})."""
    import hvd

    hvd.init()
    n, r = hvd.size(), hvd.rank()
    x = np.arange(6, dtype=np.float64) * (r + 1)
    total = np.arange(6, dtype=np.float64) * sum(range(1, n + 1))
    out = {
        "allreduce_sum": (hvd.allreduce(x, op=hvd.Sum), total),
        "allreduce_avg": (hvd.allreduce(x, op=hvd.Average), total / n),
        # rank k gives k + 1 rows of k
        "allgather": (hvd.allgather(np.full((r + 1, 2), r, dtype=np.int32)),
                      np.concatenate([np.full((k + 1, 2), k, dtype=np.int32)
                                      for k in range(n)])),
        "broadcast": (hvd.broadcast(np.arange(4, dtype=np.float32) + 10 * r, root_rank=n - 1),
                      np.arange(4, dtype=np.float32) + 10 * (n - 1)),
    }
    # rank r sends j + 1 rows to rank j; each row is (sender, receiver)
    rows = np.array([[r, j] for j in range(n) for _ in range(j + 1)], dtype=np.int64)
    received, counts = hvd.alltoall(rows, splits=[j + 1 for j in range(n)])
    out["alltoall"] = (received, np.array([[k, r] for k in range(n) for _ in range(r + 1)]))
    out["alltoall_counts"] = (counts, np.array([r + 1] * n))
    scattered = hvd.reducescatter(np.arange(2 * n * 3, dtype=np.float64).reshape(2 * n, 3) *
                                  (r + 1), op=hvd.Sum)
    whole = np.arange(2 * n * 3, dtype=np.float64).reshape(2 * n, 3) * sum(range(1, n + 1))
    out["reducescatter"] = (scattered, whole[2 * r:2 * r + 2])
    topology = (r, n, hvd.local_rank(), hvd.local_size(), hvd.cross_rank(), hvd.cross_size())
    hvd.shutdown()
    return topology + (out,)


@pytest.mark.parametrize("n", [2, 3])
def test_every_collective(spark, n):
    results = hvd.spark.run(collectives, num_proc=n, start_timeout=60)
    assert len(results) == n
    for rank, result in enumerate(results):
        # rank order; one host: local ranks are the ranks, one cross rank
        assert result[:6] == (rank, n, rank, n, 0, 1)
        for name, (got, want) in result[6].items():
            np.testing.assert_allclose(got, want, err_msg="%s on rank %d of %d"
                                       % (name, rank, n))


def echo(tag, scale=1):
    import hvd

    hvd.init()
    print("rank %d says %s" % (hvd.rank(), tag))
    print("partial ", end="", flush=True)
    print("line", flush=True)
    sys.stderr.write("to stderr %d\n" % hvd.rank())
    value = hvd.allreduce(np.array([hvd.rank() * scale], dtype=np.int64), op=hvd.Sum)
    env = os.environ.get("HVD_TEST_SPARK_ENV"), os.environ.get("HVD_IFACE")
    # fn may leave the job open: the task shuts it down
    return hvd.rank(), int(value[0]), env


def test_results_output_and_env(spark):
    out, err = io.StringIO(), io.StringIO()
    results = hvd.spark.run(echo, args=("hello",), kwargs={"scale": 10}, num_proc=SLOTS,
                            start_timeout=60, env={"HVD_TEST_SPARK_ENV": "yes"}, stdout=out,
                            stderr=err, nics=["lo"])
    assert results == [(r, 30, ("yes", "lo")) for r in range(SLOTS)]
    lines = out.getvalue().splitlines()
    for r in range(SLOTS):
        assert "[%d]<stdout>: rank %d says hello" % (r, r) in lines
        assert "[%d]<stdout>: partial line" % r in lines
        assert "[%d]<stderr>: to stderr %d" % (r, r) in err.getvalue().splitlines()
    assert len(lines) == 2 * SLOTS
    # the job's and env's variables do not stay behind in the reused Python workers
    leftovers = hvd.spark.run(lambda: (os.environ.get("HVD_TEST_SPARK_ENV"),
                                       os.environ.get("HVD_RANK")), num_proc=2,
                              start_timeout=60)
    assert leftovers == [(None, "0"), (None, "1")]


def test_default_num_proc_and_timestamps(spark):
    out = io.StringIO()
    results = hvd.spark.run(echo, args=("hi",), start_timeout=60, stdout=out,
                            stderr=io.StringIO(), prefix_output_with_timestamp=True)
    assert [r[0] for r in results] == list(range(spark.sparkContext.defaultParallelism))
    year = time.strftime("%Y")
    assert all(year + "[" in line for line in out.getvalue().splitlines())


def fail_on_rank_one():
    import hvd

    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("rank one gives up")
    hvd.allreduce(np.ones(3), op=hvd.Sum)  # fails: rank 1 aborted the job
    return "unreachable"


def test_failing_rank_fails_run(spark):
    start = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        hvd.spark.run(fail_on_rank_one, num_proc=3, start_timeout=60, stdout=io.StringIO(),
                      stderr=io.StringIO())
    message = str(info.value)
    assert message.startswith("hvd.spark.run: rank 1 failed:")
    assert "ValueError: rank one gives up" in message
    # the others got the library's peer-failure error rather than waiting for rank 1
    for r in (0, 2):
        assert "rank %d: hvd._errors.HorovodInternalError: HVD_ERR_PEER_FAILED" % r in message
    assert time.monotonic() - start < 30
    # the session still runs jobs
    assert hvd.spark.run(collectives, num_proc=2, start_timeout=60)[1][0] == 1


def test_error_names_the_rank_that_failed_on_its_own():
    """Ranks that failed because another did (HVD_ERR_PEER_FAILED) may report first; the error
    still names the rank whose own error ended the job, then the others in arrival order."""
    from types import SimpleNamespace

    from hvd.spark._runner import _job_error

    peer = "Traceback (most recent call last):\nhvd._errors.HorovodInternalError: " \
           "HVD_ERR_PEER_FAILED: rank 1 failed"
    own = "Traceback (most recent call last):\nValueError: rank one gives up"
    message = str(_job_error(SimpleNamespace(errors=[(2, peer), (1, own), (0, peer)]), None))
    assert message.startswith("hvd.spark.run: rank 1 failed:\n" + own)
    assert message.endswith("then:\n  rank 2: %s\n  rank 0: %s" % ((peer.splitlines()[-1],) * 2))
    only_peers = SimpleNamespace(errors=[(2, peer), (0, peer)])
    assert str(_job_error(only_peers, None)).startswith("hvd.spark.run: rank 2 failed:")


def test_more_ranks_than_slots_time_out(spark):
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="needs %d free task slots at once; the cluster "
                       "has %d now" % (SLOTS + 1, SLOTS)):
        hvd.spark.run(collectives, num_proc=SLOTS + 1, start_timeout=3)
    assert time.monotonic() - start < 20
    assert len(hvd.spark.run(collectives, num_proc=SLOTS, start_timeout=60)) == SLOTS
