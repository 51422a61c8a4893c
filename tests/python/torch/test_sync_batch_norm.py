# SPDX-License-Identifier: Apache-2.0
"""hvd.torch.SyncBatchNorm against torch's BatchNorm run in one process on the
concatenation of every rank's batch (which each rank rebuilds from seeds)."""

import os
import subprocess
import sys

import pytest
import torch

import hvd.torch as hvd


@pytest.fixture(autouse=True)
def joined():
    hvd.init()
    yield


_REFERENCE = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d,
              5: torch.nn.BatchNorm3d}


def _rows(r):
    """Rank r's batch size: ranks hold different numbers of samples."""
    return 2 + r


def _batch(r, shape, dtype, step=0):
    gen = torch.Generator().manual_seed(1000 * step + r)
    x = torch.randn((_rows(r),) + shape, generator=gen, dtype=torch.float64) * (1 + r) + r
    g = torch.randn((_rows(r),) + shape, generator=gen, dtype=torch.float64)
    return x.to(dtype), g.to(dtype)


def _reference(ndim, channels, dtype, **kwargs):
    return _REFERENCE[ndim](channels, **kwargs).to(dtype)


def _init_affine(*modules):
    for m in modules:
        if m.weight is not None:
            with torch.no_grad():
                m.weight.copy_(torch.linspace(0.5, 2.0, m.num_features))
                m.bias.copy_(torch.linspace(-1.0, 1.0, m.num_features))


def _my_slice(t):
    start = sum(_rows(r) for r in range(hvd.rank()))
    return t[start:start + _rows(hvd.rank())]


def _run_step(sync, ref, shape, dtype, step):
    """One forward/backward on this rank's batch and on the concatenation; compares."""
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-5)
    batches = [_batch(r, shape, dtype, step) for r in range(hvd.size())]
    x, g = batches[hvd.rank()]
    x = x.clone().requires_grad_(True)
    out = sync(x)
    (out * g).sum().backward()

    x_all = torch.cat([b[0] for b in batches]).requires_grad_(True)
    g_all = torch.cat([b[1] for b in batches])
    out_all = ref(x_all)
    (out_all * g_all).sum().backward()

    assert out.dtype == dtype and out.shape == x.shape
    torch.testing.assert_close(out, _my_slice(out_all), **tol)
    torch.testing.assert_close(x.grad, _my_slice(x_all.grad), **tol)
    if sync.weight is not None:
        # Each rank holds its share; DistributedOptimizer sums (averages) them.
        torch.testing.assert_close(hvd.allreduce(sync.weight.grad, op=hvd.Sum),
                                   ref.weight.grad, **tol)
        torch.testing.assert_close(hvd.allreduce(sync.bias.grad, op=hvd.Sum),
                                   ref.bias.grad, **tol)
    if sync.track_running_stats:
        torch.testing.assert_close(sync.running_mean, ref.running_mean, **tol)
        torch.testing.assert_close(sync.running_var, ref.running_var, **tol)
        assert int(sync.num_batches_tracked) == int(ref.num_batches_tracked)


@pytest.mark.parametrize("shape", [(3,), (3, 5), (2, 3, 4), (2, 2, 3, 2)],
                         ids=["1d", "1d_len", "2d", "3d"])
def test_training_matches_concatenated_batch(shape):
    channels = shape[0]
    sync = hvd.SyncBatchNorm(channels).double()
    ref = _reference(len(shape) + 1, channels, torch.float64)
    _init_affine(sync, ref)
    for step in range(3):
        sync.zero_grad()
        ref.zero_grad()
        _run_step(sync, ref, shape, torch.float64, step)


@pytest.mark.parametrize("kwargs", [dict(momentum=None), dict(momentum=0.3, eps=1e-3),
                                    dict(affine=False), dict(track_running_stats=False)],
                         ids=["cumulative", "momentum_eps", "no_affine", "no_running_stats"])
def test_options(kwargs):
    shape = (4, 3)
    sync = hvd.SyncBatchNorm(4, **kwargs).double()
    ref = _reference(3, 4, torch.float64, **kwargs)
    _init_affine(sync, ref)
    for step in range(3):
        sync.zero_grad()
        ref.zero_grad()
        _run_step(sync, ref, shape, torch.float64, step)


def test_float32():
    sync = hvd.SyncBatchNorm(3)
    ref = _reference(4, 3, torch.float32)
    _init_affine(sync, ref)
    _run_step(sync, ref, (3, 4, 4), torch.float32, 0)


def test_eval_uses_running_stats():
    sync = hvd.SyncBatchNorm(3).double()
    ref = _reference(3, 3, torch.float64)
    _init_affine(sync, ref)
    _run_step(sync, ref, (3, 2), torch.float64, 0)
    sync.eval()
    ref.eval()
    # Local normalisation: no collective, so ranks may even use different batch sizes here.
    x = torch.randn(hvd.rank() + 1, 3, 2, dtype=torch.float64)
    torch.testing.assert_close(sync(x), ref(x), rtol=1e-12, atol=1e-12)
    assert int(sync.num_batches_tracked) == 1


def test_eval_without_running_stats_is_synchronised():
    sync = hvd.SyncBatchNorm(3, track_running_stats=False).double()
    ref = _reference(3, 3, torch.float64, track_running_stats=False)
    _init_affine(sync, ref)
    sync.eval()
    ref.eval()
    _run_step(sync, ref, (3, 2), torch.float64, 5)


def test_rank_with_empty_batch():
    # Rank 0 contributes no samples; the others' statistics still come out right.
    sync = hvd.SyncBatchNorm(2).double()
    ref = _reference(2, 2, torch.float64)
    _init_affine(sync, ref)
    xs = [torch.randn(0 if r == 0 else 3, 2, dtype=torch.float64,
                      generator=torch.Generator().manual_seed(r)) for r in range(hvd.size())]
    x = xs[hvd.rank()].clone().requires_grad_(True)
    out = sync(x)
    out.sum().backward()
    x_all = torch.cat(xs)
    start = sum(len(v) for v in xs[:hvd.rank()])
    torch.testing.assert_close(out, ref(x_all)[start:start + len(xs[hvd.rank()])])
    assert x.grad.shape == x.shape
    torch.testing.assert_close(sync.running_mean, ref.running_mean)


def test_bad_input():
    sync = hvd.SyncBatchNorm(3)
    with pytest.raises(ValueError, match="2D"):
        sync(torch.zeros(3))
    with pytest.raises(ValueError, match="channels"):
        sync(torch.zeros(4, 5))
    # One value per channel over all ranks (rank 0 has one sample, the others none): every
    # rank raises, none hangs.
    x = torch.zeros(1 if hvd.rank() == 0 else 0, 3)
    with pytest.raises(ValueError, match="more than 1 value"):
        sync(x)
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()


def test_is_batch_norm_module():
    sync = hvd.SyncBatchNorm(7, eps=1e-3, momentum=0.2, affine=False, track_running_stats=False)
    assert isinstance(sync, torch.nn.modules.batchnorm._BatchNorm)
    assert (sync.num_features, sync.eps, sync.momentum) == (7, 1e-3, 0.2)
    assert sync.weight is None and sync.running_mean is None
    assert set(hvd.SyncBatchNorm(2).state_dict()) == \
        {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}


_SINGLE_RANK_SCRIPT = r"""
import torch
import hvd.torch as hvd
hvd.init()
assert hvd.size() == 1
torch.manual_seed(0)
sync, ref = hvd.SyncBatchNorm(3).double(), torch.nn.BatchNorm1d(3).double()
x = torch.randn(5, 3, 4, dtype=torch.float64)
xs, xr = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
g = torch.randn(5, 3, 4, dtype=torch.float64)
(sync(xs) * g).sum().backward()
(ref(xr) * g).sum().backward()
torch.testing.assert_close(xs.grad, xr.grad)
torch.testing.assert_close(sync.weight.grad, ref.weight.grad)
torch.testing.assert_close(sync.running_var, ref.running_var)
sync.eval(); ref.eval()
torch.testing.assert_close(sync(x), ref(x))
print("single-rank ok")
"""


def test_single_rank_job():
    # A process started without a launcher is a job of one rank: plain batch norm.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HVD_RANK", "HVD_SIZE", "HVD_LOCAL", "HVD_CROSS", "HVD_HOSTNAME",
                                "HVD_RENDEZVOUS", "HVD_SECRET", "HVD_JOB_ID", "OMPI_", "PMI_",
                                "PMIX_", "SLURM_"))
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    done = subprocess.run([sys.executable, "-c", _SINGLE_RANK_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "single-rank ok" in done.stdout
