# SPDX-License-Identifier: Apache-2.0
"""hvd.ray.RayExecutor on 2 and 3 workers of a local Ray cluster: ranks in node order,
every collective checked on each rank against what it computes itself, results in rank
order, runs with and without hvd.shutdown(), execute/execute_single on an executable."""

import numpy as np
import pytest

import hvd
from hvd.ray import RayExecutor, WorkerError

SETTINGS = dict(timeout_s=30, run_timeout_s=60, placement_group_timeout_s=20)


@pytest.fixture(scope="module", params=[2, 3], ids=["np2", "np3"])
def executor(request):
    ex = RayExecutor(RayExecutor.create_settings(**SETTINGS), num_workers=request.param)
    ex.start()
    yield ex
    ex.shutdown()


def topology():
    hvd.init()
    return (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(), hvd.cross_rank(),
            hvd.cross_size())


def test_ranks_in_order(executor):
    n = executor.num_workers
    # One node: the local ranks are the ranks, and every rank is alone in its cross set.
    assert executor.run(topology) == [(r, n, r, n, 0, 1) for r in range(n)]


def _mine(rank, rows, cols=3):
    """Rank's input: rows x cols float64 whose values say which rank and element."""
    return (np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) + 1) * (rank + 1)


def collectives(scale):
    """Every collective on NumPy arrays; returns {name: (got, expected)} on this rank, the
    expected values computed here from every rank's (known) input."""
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    rows = 2 * size
    inputs = [_mine(r, rows) * scale for r in range(size)]
    out = {}
    out["allreduce_sum"] = (hvd.allreduce(inputs[rank], op=hvd.Sum), sum(inputs))
    out["allreduce_avg"] = (hvd.allreduce(inputs[rank], op=hvd.Average), sum(inputs) / size)
    # Ragged allgather: rank r gives r + 1 rows.
    out["allgather"] = (hvd.allgather(inputs[rank][:rank + 1]),
                        np.concatenate([inputs[r][:r + 1] for r in range(size)]))
    root = size - 1
    out["broadcast"] = (hvd.broadcast(inputs[rank], root_rank=root), inputs[root])
    # Alltoall: rank i sends j + 1 rows of value 100 i + j to rank j.
    def block(i, j):
        return np.full((j + 1, 2), 100.0 * i + j) * scale
    sent = np.concatenate([block(rank, j) for j in range(size)])
    got, received = hvd.alltoall(sent, splits=[j + 1 for j in range(size)])
    out["alltoall"] = (got, np.concatenate([block(i, rank) for i in range(size)]))
    out["alltoall_splits"] = (np.asarray(received), np.full(size, rank + 1))
    # Reducescatter: rank r gets rows 2r, 2r + 1 of the sum.
    out["reducescatter"] = (hvd.reducescatter(inputs[rank], op=hvd.Sum),
                            sum(inputs)[2 * rank:2 * rank + 2])
    return rank, {k: (np.asarray(g), np.asarray(e)) for k, (g, e) in out.items()}


def test_collectives(executor):
    results = executor.run(collectives, args=[0.5])
    assert [rank for rank, _ in results] == list(range(executor.num_workers))
    for rank, checks in results:
        assert len(checks) == 7
        for name, (got, expected) in checks.items():
            assert got.shape == expected.shape, (rank, name)
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg="%s on rank %d"
                                       % (name, rank))


def allreduce_rank(base, leave):
    hvd.init()
    total = hvd.allreduce(np.array([base + hvd.rank()], dtype=np.float64), op=hvd.Sum)
    if leave:
        hvd.shutdown()
    return float(total[0])


@pytest.mark.parametrize("leave", [True, False], ids=["shutdown", "stay"])
def test_runs_follow_each_other(executor, leave):
    """Runs after runs whose function left the job (hvd.shutdown(): the next init joins
    again) or stayed in it (the next init is a no-op)."""
    n = executor.num_workers
    for base in (1, 10, 100):
        expected = n * base + n * (n - 1) / 2
        assert executor.run(allreduce_rank, args=[base], kwargs={"leave": leave}) == [expected] * n


def test_run_remote_gives_refs_in_rank_order(executor):
    import ray

    refs = executor.run_remote(topology)
    assert [ray.get(ref)[0] for ref in refs] == list(range(executor.num_workers))


class Trainer:
    """An executable: joins the job when made, keeps state between execute calls."""

    def __init__(self, step):
        hvd.init()
        self.step = step
        self.value = 0.0

    def advance(self):
        self.value += float(hvd.allreduce(np.array([self.step * (hvd.rank() + 1)]),
                                          op=hvd.Sum)[0])
        return hvd.rank(), self.value


def test_execute_on_executable():
    ex = RayExecutor(RayExecutor.create_settings(**SETTINGS), num_workers=2)
    ex.start(executable_cls=Trainer, executable_args=[2.0],
             extra_env_vars={"HVD_T": "x", "HVD_START_TIMEOUT": 25})
    try:
        assert ex.execute(lambda w: w.advance()) == [(0, 6.0), (1, 6.0)]
        assert ex.execute(Trainer.advance) == [(0, 12.0), (1, 12.0)]
        assert ex.execute_single(lambda w: (w.value, w.step)) == (12.0, 2.0)
        env = ex.run(lambda: {k: __import__("os").environ[k] for k in ("HVD_T",
                                                                      "HVD_START_TIMEOUT")})
        assert env == [{"HVD_T": "x", "HVD_START_TIMEOUT": "25"}] * 2
    finally:
        ex.shutdown()
    with pytest.raises(RuntimeError, match="not started"):
        ex.run(topology)


class Broken:
    def __init__(self):
        raise KeyError("no model here")


def test_start_fails_when_the_executable_does():
    ex = RayExecutor(RayExecutor.create_settings(**SETTINGS), num_workers=2)
    with pytest.raises(WorkerError, match=r"start failed on 2 of 2 rank\(s\): rank 0 \(.*"
                       r"KeyError: 'no model here'"):
        ex.start(executable_cls=Broken)
    assert ex.workers == []


def test_context_manager_and_spread_by_hosts():
    """num_hosts=1 x num_workers_per_host=2 (STRICT_SPREAD over one node)."""
    with RayExecutor(RayExecutor.create_settings(**SETTINGS), num_hosts=1,
                     num_workers_per_host=2) as ex:
        ex.start()
        assert ex.run(topology) == [(0, 2, 0, 2, 0, 1), (1, 2, 1, 2, 0, 1)]
    assert ex.workers == []
