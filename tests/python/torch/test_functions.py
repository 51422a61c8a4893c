# SPDX-License-Identifier: Apache-2.0
"""hvd.torch's broadcast_parameters, broadcast_optimizer_state, broadcast_object and
allgather_object. Every rank runs every test in the same order; the expected values are
rebuilt on each rank from seeds (what root_rank holds is what root_rank's seed gives)."""

import pytest
import torch

import hvd.torch as hvd
from hvd.torch import functions


@pytest.fixture(autouse=True)
def joined():
    hvd.init()
    yield


def _model(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4),
                                torch.nn.ReLU(), torch.nn.Linear(4, 3))
    # Rank-dependent buffers too: the running statistics and the batch counter.
    model.train()
    model(torch.randn(6, 5))
    for _ in range(seed % 3):
        model(torch.randn(6, 5))
    return model


def _assert_state_equal(got, want):
    assert list(got.keys()) == list(want.keys())
    for key in want:
        assert got[key].dtype == want[key].dtype, key
        assert torch.equal(got[key], want[key]), key


def test_reexports():
    assert hvd.broadcast_parameters is functions.broadcast_parameters
    assert hvd.broadcast_optimizer_state is functions.broadcast_optimizer_state
    assert hvd.broadcast_object is functions.broadcast_object
    assert hvd.allgather_object is functions.allgather_object
    got = hvd.broadcast_object({"rank": hvd.rank(), "t": torch.arange(3) * hvd.rank()},
                               root_rank=hvd.size() - 1)
    assert got["rank"] == hvd.size() - 1
    assert torch.equal(got["t"], torch.arange(3) * (hvd.size() - 1))
    assert hvd.allgather_object((hvd.rank(), "x" * hvd.rank())) == \
        [(r, "x" * r) for r in range(hvd.size())]


@pytest.mark.parametrize("root", [0, 1, -1])
def test_broadcast_state_dict(root):
    root = root % hvd.size()
    model = _model(10 + hvd.rank())
    before = {k: v.data_ptr() for k, v in model.state_dict().items()}
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    _assert_state_equal(model.state_dict(), _model(10 + root).state_dict())
    # In place: the module's own tensors were overwritten.
    assert {k: v.data_ptr() for k, v in model.state_dict().items()} == before


def test_broadcast_named_parameters_generator():
    model = _model(20 + hvd.rank())
    want = _model(20).state_dict()
    hvd.broadcast_parameters(model.named_parameters(), root_rank=0)
    for name, p in model.named_parameters():
        assert torch.equal(p.data, want[name]), name
        assert p.requires_grad
    # Buffers were not part of named_parameters: still this rank's own.
    assert int(model[1].num_batches_tracked) == 1 + (20 + hvd.rank()) % 3


def test_broadcast_parameter_list_and_pairs():
    root = hvd.size() - 1
    model = _model(30 + hvd.rank())
    want = _model(30 + root)
    hvd.broadcast_parameters(list(model.parameters()), root_rank=root)
    for got, expected in zip(model.parameters(), want.parameters()):
        assert torch.equal(got.data, expected.data)

    tensors = [torch.full((3,), float(hvd.rank())), torch.arange(4, dtype=torch.int32) +
               hvd.rank(), torch.tensor(hvd.rank() * 1.5, dtype=torch.float64)]
    hvd.broadcast_parameters([("a", tensors[0]), ("b", tensors[1]), ("c", tensors[2])],
                             root_rank=root)
    assert torch.equal(tensors[0], torch.full((3,), float(root)))
    assert torch.equal(tensors[1], torch.arange(4, dtype=torch.int32) + root)
    assert tensors[2].item() == root * 1.5


def test_broadcast_parameters_empty():
    hvd.broadcast_parameters({}, root_rank=0)
    hvd.broadcast_parameters([], root_rank=0)


def test_broadcast_parameters_errors():
    model = _model(40 + hvd.rank())
    own = {k: v.clone() for k, v in model.state_dict().items()}
    for bad_root in (hvd.size(), -1, "zero", None):
        with pytest.raises(ValueError):
            hvd.broadcast_parameters(model.state_dict(), root_rank=bad_root)
    for bad in (torch.zeros(3), 7, "weights", [torch.zeros(2), 3.0], [("a", [1.0])],
                [("a", torch.zeros(1), 1)]):
        with pytest.raises(ValueError):
            hvd.broadcast_parameters(bad, root_rank=0)
    with pytest.raises(ValueError, match="contiguous"):
        hvd.broadcast_parameters([torch.zeros(4, 4).t()], root_rank=0)
    # Nothing was sent, nothing changed.
    _assert_state_equal(model.state_dict(), own)
    # And the job still works.
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()


class _CountingSGD(torch.optim.Optimizer):
    """SGD with a momentum buffer (tensor) and a step count kept as a Python int."""

    def __init__(self, params, lr=0.1, momentum=0.5):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "buf" not in state:
                    state["buf"] = torch.zeros_like(p)
                    state["count"] = 0
                state["count"] += 1
                state["buf"].mul_(group["momentum"]).add_(p.grad)
                p.add_(state["buf"], alpha=-group["lr"])


_OPTIMIZERS = {
    "sgd_momentum": lambda params, r: torch.optim.SGD(params, lr=0.1 * (r + 1), momentum=0.9),
    "adam": lambda params, r: torch.optim.Adam(params, lr=0.01 * (r + 1),
                                               betas=(0.9, 0.99 - 0.01 * r)),
    "counting": lambda params, r: _CountingSGD(params, lr=0.05 * (r + 1), momentum=0.1 * r),
}


def _trained(kind, r, steps):
    """(model, optimizer) as rank r holds them after `steps` steps on rank r's data."""
    model = _model(50)
    # A second parameter group, with its own options.
    opt = _OPTIMIZERS[kind]([{"params": model[0].parameters()},
                             {"params": model[3].parameters(), "lr": 0.003 * (r + 1)}], r)
    gen = torch.Generator().manual_seed(500 + r)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(6, 5, generator=gen)).pow(2).sum().backward()
        opt.step()
    return model, opt


def _assert_optimizer_equal(got, want):
    assert len(got.param_groups) == len(want.param_groups)
    for g, w in zip(got.param_groups, want.param_groups):
        assert {k: v for k, v in g.items() if k != "params"} == \
            {k: v for k, v in w.items() if k != "params"}
    got_params = [p for g in got.param_groups for p in g["params"]]
    want_params = [p for g in want.param_groups for p in g["params"]]
    for pg, pw in zip(got_params, want_params):
        sg, sw = got.state.get(pg, {}), want.state.get(pw, {})
        assert sorted(sg) == sorted(sw)
        for key in sw:
            if torch.is_tensor(sw[key]):
                assert torch.is_tensor(sg[key]) and sg[key].dtype == sw[key].dtype, key
                assert torch.equal(sg[key], sw[key]), key
            else:
                assert sg[key] == sw[key] and type(sg[key]) is type(sw[key]), key


@pytest.mark.parametrize("kind", sorted(_OPTIMIZERS))
def test_broadcast_optimizer_state_trained(kind):
    root = 1 % hvd.size()
    model, opt = _trained(kind, hvd.rank(), steps=2 + hvd.rank())
    want_model, want_opt = _trained(kind, root, steps=2 + root)
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    hvd.broadcast_optimizer_state(opt, root_rank=root)
    _assert_optimizer_equal(opt, want_opt)
    # The optimizer keeps working from root's state: one more identical step everywhere.
    batch = torch.randn(6, 5, generator=torch.Generator().manual_seed(7))
    for m, o in ((model, opt), (want_model, want_opt)):
        o.zero_grad()
        m(batch).pow(2).sum().backward()
        o.step()
    _assert_state_equal(model.state_dict(), want_model.state_dict())


def test_broadcast_optimizer_state_fresh():
    # No rank has stepped: every rank creates the state with a zero-gradient step.
    model = _model(60)
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (hvd.rank() + 1))
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert opt.param_groups[0]["lr"] == 0.01
    for p in model.parameters():
        assert torch.equal(p.grad, torch.zeros_like(p))
        state = opt.state[p]
        assert float(state["step"]) == 1.0
        assert torch.equal(state["exp_avg"], torch.zeros_like(p))
        assert torch.equal(state["exp_avg_sq"], torch.zeros_like(p))
    assert torch.equal(model[0].weight, _model(60)[0].weight)  # zero gradients: no change


def test_broadcast_optimizer_state_only_root_trained():
    root = hvd.size() - 1
    if hvd.rank() == root:
        model, opt = _trained("adam", root, steps=3)
    else:
        model = _model(50)
        opt = _OPTIMIZERS["adam"]([{"params": model[0].parameters()},
                                   {"params": model[3].parameters(), "lr": 0.0}], hvd.rank())
    hvd.broadcast_optimizer_state(opt, root_rank=root)
    _assert_optimizer_equal(opt, _trained("adam", root, steps=3)[1])


def test_broadcast_optimizer_state_frozen_parameter():
    model = _model(70)
    model[0].bias.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5 + 0.1 * hvd.rank())
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert opt.param_groups[0]["momentum"] == 0.5
    assert model[0].bias not in opt.state or not opt.state[model[0].bias]
    assert torch.equal(opt.state[model[0].weight]["momentum_buffer"],
                       torch.zeros_like(model[0].weight))


def test_broadcast_optimizer_state_errors():
    model = _model(80)
    with pytest.raises(ValueError, match="LBFGS"):
        hvd.broadcast_optimizer_state(torch.optim.LBFGS(model.parameters()), root_rank=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for bad_root in (hvd.size(), -1):
        with pytest.raises(ValueError):
            hvd.broadcast_optimizer_state(opt, root_rank=bad_root)
    assert len(opt.state) == 0  # rejected before the warm-up step
    with pytest.raises(ValueError):
        hvd.broadcast_optimizer_state(model, root_rank=0)
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()


def test_broadcast_optimizer_state_distributed_optimizer():
    # Only root has state: the others' warm-up step must not be the distributed step (its
    # allreduce would wait for root forever).
    from hvd.torch.optimizer import DistributedOptimizer

    root = 0
    model = _model(50)
    base = _OPTIMIZERS["sgd_momentum"]([{"params": model[0].parameters()},
                                        {"params": model[3].parameters(), "lr": 1.0}],
                                       hvd.rank())
    named = [(n, p) for n, p in model.named_parameters() if not n.startswith("1.")]
    opt = DistributedOptimizer(base, named_parameters=named)
    want = _trained("sgd_momentum", root, steps=2)[1]
    if hvd.rank() == root:
        opt.load_state_dict(want.state_dict())
    assert (len(opt.state) > 0) == (hvd.rank() == root)
    hvd.broadcast_optimizer_state(opt, root_rank=root)
    _assert_optimizer_equal(opt, want)
