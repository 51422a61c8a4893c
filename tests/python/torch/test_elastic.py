# SPDX-License-Identifier: Apache-2.0
"""hvd.torch.elastic: ElasticSampler, TorchState and the run decorator's reset loop.

The tests that reset (shutdown + init inside run) come last in the file."""

import math
import random

import pytest
import torch

import hvd.torch as hvd
from hvd.torch.elastic import ElasticSampler, TorchState


@pytest.fixture(autouse=True)
def joined():
    hvd.init()
    yield


def _everyone(obj):
    return hvd.allgather_object(obj)


# ------------------------------------------------------------------ ElasticSampler


def _order(n, seed, epoch, shuffle=True):
    order = list(range(n))
    if shuffle:
        random.Random(seed + epoch).shuffle(order)
    return order


@pytest.mark.parametrize("n", [0, 1, 2, 23, 24])
@pytest.mark.parametrize("shuffle", [True, False])
def test_sampler_partitions_dataset(n, shuffle):
    sampler = ElasticSampler(list(range(n)), shuffle=shuffle, seed=5)
    mine = list(sampler)
    size = hvd.size()
    per_rank = math.ceil(n / size)
    assert len(sampler) == per_rank == len(mine)
    everyone = _everyone(mine)
    assert set().union(*map(set, everyone)) == set(range(n))
    # Rank r takes positions r, r + size, ... of the epoch's order (wrapped around to pad).
    order = _order(n, 5, 0, shuffle)
    for r, got in enumerate(everyone):
        assert got == [order[(r + size * i) % n] for i in range(per_rank)]


def test_sampler_epochs():
    sampler = ElasticSampler(range(40), shuffle=True, seed=3)
    first = list(sampler)
    sampler.set_epoch(1)
    second = list(sampler)
    assert first != second
    assert sorted(set().union(*map(set, _everyone(second)))) == list(range(40))
    assert _everyone(second)[0] == _order(40, 3, 1)[0::hvd.size()][:len(second)]
    unshuffled = ElasticSampler(range(10), shuffle=False)
    unshuffled.set_epoch(4)
    assert list(unshuffled)[0] == hvd.rank()


def test_sampler_record_batch_resumes_epoch():
    n, batch = 50, 3
    sampler = ElasticSampler(range(n), shuffle=True, seed=11)
    done = []
    for batch_idx in range(2):
        done.extend(sampler.get_indices(batch_idx, batch))
        sampler.record_batch(batch_idx, batch)
    state = sampler.state_dict()
    assert state["epoch"] == 0 and state["processed_num"] == 2 * batch * hvd.size()
    processed = set().union(*map(set, _everyone(done)))
    assert processed == set(_order(n, 11, 0)[:2 * batch * hvd.size()])

    resumed = ElasticSampler(range(n), shuffle=True, seed=11)
    resumed.load_state_dict(state)
    rest = _everyone(list(resumed))
    left = set().union(*map(set, rest))
    assert left == set(range(n)) - processed
    assert len(resumed) == math.ceil((n - len(processed)) / hvd.size())
    resumed.set_epoch(1)
    assert resumed.state_dict()["processed_num"] == 0 and len(resumed) == math.ceil(n /
                                                                                     hvd.size())


def test_sampler_get_indices():
    sampler = ElasticSampler(range(20), shuffle=False)
    mine = list(sampler)
    assert sampler.get_indices(0, 4) == mine[:4]
    assert sampler.get_indices(1, 4) == mine[4:8]
    assert sampler.get_indices(100, 4) == []


# ------------------------------------------------------------------ TorchState


def _model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))


def _params(model):
    return [t.clone() for t in model.state_dict().values()]


def _same(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def _train(model, opt, seed, steps=1):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(5, 4, generator=gen)).pow(2).sum().backward()
        opt.step()


def test_state_commit_and_restore():
    model = _model(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = TorchState(model, opt, epoch=3, batch=7, notes={"a": 1})
    assert (state.model, state.optimizer) == (model, opt)
    assert (state.epoch, state.batch, state.notes) == (3, 7, {"a": 1})

    _train(model, opt, 100)
    state.epoch, state.batch = 4, 0
    state.commit()
    committed = _params(model)
    committed_buf = [opt.state[p]["momentum_buffer"].clone() for p in model.parameters()]

    for _ in range(2):  # restoring twice gives the same state both times
        _train(model, opt, 200, steps=2)
        state.epoch, state.batch = 9, 9
        state.restore()
        assert _same(_params(model), committed)
        assert _same([opt.state[p]["momentum_buffer"] for p in model.parameters()],
                     committed_buf)
        assert (state.epoch, state.batch) == (4, 0)


def test_state_sync_from_rank_zero():
    model = _model(10 + hvd.rank())
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (1 + hvd.rank()))
    _train(model, opt, 300 + hvd.rank(), steps=1 + hvd.rank())
    sampler = ElasticSampler(range(30), seed=hvd.rank())
    sampler.record_batch(0, 2)
    state = TorchState(model, opt, sampler=sampler, epoch=hvd.rank(), extra=[hvd.rank()])
    state.sync()

    want_model = _model(10)
    want_opt = torch.optim.Adam(want_model.parameters(), lr=0.01)
    _train(want_model, want_opt, 300, steps=1)
    assert _same(_params(model), _params(want_model))
    assert opt.param_groups[0]["lr"] == 0.01
    for p, q in zip(model.parameters(), want_model.parameters()):
        assert torch.equal(opt.state[p]["exp_avg"], want_opt.state[q]["exp_avg"])
        assert float(opt.state[p]["step"]) == 1.0
    assert (state.epoch, state.extra) == (0, [0])
    # The sampler follows rank 0's progress (its seed is the sampler's own argument).
    assert state.sampler.state_dict()["processed_num"] == 2 * hvd.size()


def test_state_sync_merges_recorded_indices():
    sampler = ElasticSampler(range(40), shuffle=False)
    mine = sampler.get_indices(0, 3)
    sampler.record_indices(mine)
    state = TorchState(sampler=sampler)
    state.sync()
    done = set().union(*map(set, _everyone(mine)))
    assert state.sampler.processed_indices == done
    left = set().union(*map(set, _everyone(list(state.sampler))))
    assert left == set(range(40)) - done


def test_state_replacing_tracked_object():
    model = _model(20)
    state = TorchState(model=model)
    other = _model(21)
    state.model = other
    assert state.model is other
    before = _params(other)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(1.0)
    state.restore()  # to the replacement's state at assignment
    assert _same(_params(other), before)


def test_state_errors():
    state = TorchState(epoch=0)
    with pytest.raises(ValueError):
        state.register_reset_callbacks([42])
    with pytest.raises(ValueError):
        hvd.elastic.run(5)
    with pytest.raises(ValueError):
        hvd.elastic.run(lambda s: None, reset_limit=-1)

    @hvd.elastic.run
    def train(state):
        return state.epoch

    with pytest.raises(ValueError, match="State"):
        train("not a state")


def test_host_update_interrupts_commit_on_every_rank():
    state = TorchState(epoch=0)
    state.commit()  # nothing pending
    if hvd.rank() == hvd.size() - 1:  # one rank heard of it: all ranks interrupt
        state.on_hosts_updated(5, hvd.elastic.state.HostUpdateResult.removed)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as info:
        state.commit()
    assert info.value.skip_sync is True
    state.commit()  # handled: no second interrupt
    state.on_hosts_updated(3, hvd.elastic.state.HostUpdateResult.added)  # older: ignored
    state.commit()
    state.on_hosts_updated(9, hvd.elastic.state.HostUpdateResult.added)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as info:
        state.commit()
    assert info.value.skip_sync is False


# ------------------------------------------------------------------ run without resets


def test_run_syncs_then_returns():
    model = _model(30 + hvd.rank())
    state = TorchState(model, epoch=10 + hvd.rank())
    calls = []

    @hvd.elastic.run
    def train(state, factor, offset=0):
        calls.append(state.epoch)
        return state.epoch * factor + offset

    assert train.__name__ == "train"
    assert train(state, 2, offset=1) == 21
    assert calls == [10]
    assert _same(_params(model), _params(_model(30)))


def test_run_reset_limit_zero_raises_first_failure():
    state = TorchState(epoch=0)

    @hvd.elastic.run(reset_limit=0)
    def train(state):
        raise hvd.HorovodInternalError("boom")

    with pytest.raises(hvd.HorovodInternalError, match="giving up after 0 reset.*boom"):
        train(state)
    assert hvd.is_initialized()


def test_run_reset_limit_from_environment(monkeypatch):
    state = TorchState(epoch=0)

    @hvd.elastic.run
    def train(state):
        raise hvd.HostsUpdatedInterrupt(False)

    monkeypatch.setenv("HOROVOD_ELASTIC_RESET_LIMIT", "0")
    with pytest.raises(hvd.HorovodInternalError, match="HostsUpdatedInterrupt"):
        train(state)
    monkeypatch.setenv("HOROVOD_ELASTIC_RESET_LIMIT", "many")
    with pytest.raises(ValueError, match="HOROVOD_ELASTIC_RESET_LIMIT"):
        train(state)


def test_run_retries_a_failed_rejoin(monkeypatch):
    real_reset = hvd.elastic._reset
    resets = []

    def flaky_reset():  # the first rejoin fails, as when a worker dies meanwhile
        resets.append(len(resets))
        if len(resets) == 1:
            raise hvd.HorovodInternalError("join failed")
        real_reset()

    monkeypatch.setattr(hvd.elastic, "_reset", flaky_reset)
    state = TorchState(epoch=0)
    attempts = []

    @hvd.elastic.run(reset_limit=2)
    def train(state):
        attempts.append(1)
        if len(attempts) == 1:
            raise hvd.HorovodInternalError("collective failed")
        return hvd.size()

    assert train(state) == hvd.size()
    assert resets == [0, 1] and len(attempts) == 2

    @hvd.elastic.run(reset_limit=1)
    def fail_once(state):
        raise hvd.HorovodInternalError("collective failed")

    resets.clear()
    with pytest.raises(hvd.HorovodInternalError, match="giving up after 1 reset.*join failed"):
        fail_once(state)
    assert resets == [0]
    real_reset()  # leaves the job joined for the next tests


def test_run_passes_other_exceptions_through():
    state = TorchState(epoch=0)

    @hvd.elastic.run
    def train(state):
        raise KeyError("not elastic")

    with pytest.raises(KeyError):
        train(state)
    assert hvd.is_initialized()


# ------------------------------------------------------------------ run with resets


def test_run_recovers_from_internal_error():
    model = _model(40 + hvd.rank())
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    state = TorchState(model, opt, epoch=0, batch=0)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(hvd.is_initialized())])
    attempts = []

    @hvd.elastic.run
    def train(state):
        attempts.append((state.epoch, state.batch))
        if len(attempts) == 1:
            _train(state.model, state.optimizer, 500)
            state.epoch, state.batch = 1, 0
            state.commit()
            # Uncommitted progress, then a collective that fails on every rank (the shapes
            # disagree): run must roll back to the commit and start over.
            _train(state.model, state.optimizer, 600)
            state.batch = 5
            hvd.allreduce(torch.zeros(1 + hvd.rank()), name="elastic.mismatch")
            raise AssertionError("the mismatched allreduce did not fail")
        return _params(state.model), state.epoch, state.batch

    params, epoch, batch = train(state)
    assert attempts == [(0, 0), (1, 0)]
    assert resets == [True]
    assert (epoch, batch) == (1, 0)
    # The committed model: one step from rank 0's initial weights (synced at the start).
    want = _model(40)
    want_opt = torch.optim.SGD(want.parameters(), lr=0.1, momentum=0.5)
    _train(want, want_opt, 500)
    assert _same(params, _params(want))
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()


def test_run_host_update_resets_without_restore():
    state = TorchState(epoch=0)
    attempts = []

    @hvd.elastic.run
    def train(state):
        attempts.append(state.epoch)
        if len(attempts) == 1:
            state.epoch = 1
            if hvd.rank() == 0:
                state.on_hosts_updated(1, hvd.elastic.state.HostUpdateResult.added)
            state.commit()  # raises HostsUpdatedInterrupt on every rank
        return state.epoch

    assert train(state) == 1
    assert attempts == [0, 1]


def test_run_gives_up_after_reset_limit():
    state = TorchState(epoch=0)
    attempts = []

    @hvd.elastic.run(reset_limit=2)
    def train(state):
        attempts.append(hvd.rank())
        raise hvd.HorovodInternalError("always")

    with pytest.raises(hvd.HorovodInternalError, match="giving up after 2 reset"):
        train(state)
    assert len(attempts) == 3
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()
