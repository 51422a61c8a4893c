# SPDX-License-Identifier: Apache-2.0
"""hvd.torch collectives against references every rank computes on its own, with autograd."""

import time

import pytest
import torch

import hvd.torch as hvd

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.bool]
OPS = {"Sum": hvd.Sum, "Min": hvd.Min, "Max": hvd.Max, "Product": hvd.Product,
       "Average": hvd.Average}


def rank_data(r, dtype, shape=(3, 5)):
    n = 1
    for s in shape:
        n *= s
    base = torch.arange(n, dtype=torch.int64).reshape(shape)
    if dtype == torch.bool:
        return (base + r) % 3 == 0
    return ((base * (r + 1)) % 3 + 1).to(dtype)


def reference(op, dtype, shape=(3, 5)):
    parts = [rank_data(r, dtype, shape) for r in range(hvd.size())]
    if dtype == torch.bool:
        stacked = torch.stack(parts)
        return stacked.any(0) if op in ("Sum", "Max") else stacked.all(0)
    wide = torch.stack([p.to(torch.float64) for p in parts])
    out = {"Sum": lambda: wide.sum(0), "Min": lambda: wide.min(0).values,
           "Max": lambda: wide.max(0).values, "Product": lambda: wide.prod(0),
           "Average": lambda: wide.sum(0) / hvd.size()}[op]()
    if op == "Average" and not dtype.is_floating_point:
        out = torch.trunc(out)
    return out.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", sorted(OPS))
def test_allreduce_every_dtype_and_op(dtype, op):
    mine = rank_data(hvd.rank(), dtype)
    if dtype == torch.bool and op == "Average":
        with pytest.raises(ValueError):
            hvd.allreduce(mine, op=OPS[op])
        return
    out = hvd.allreduce(mine, op=OPS[op], name="ar.%s.%s" % (dtype, op))
    assert out.dtype == dtype and out.shape == mine.shape
    assert torch.equal(out, reference(op, dtype))
    assert torch.equal(mine, rank_data(hvd.rank(), dtype))  # input untouched


def test_allreduce_default_average_and_deprecated_average_flag():
    x = torch.tensor([float(hvd.rank())])
    assert torch.allclose(hvd.allreduce(x), torch.tensor([(hvd.size() - 1) / 2]))
    with pytest.warns(DeprecationWarning):
        total = hvd.allreduce(x, average=False)
    assert total.item() == sum(range(hvd.size()))
    with pytest.raises(ValueError):
        hvd.allreduce(x, average=True, op=hvd.Sum)


def test_allreduce_in_place_scaling_and_non_contiguous():
    x = torch.full((4, 3), hvd.rank() + 1.0)
    out = hvd.allreduce_(x, op=hvd.Sum, prescale_factor=3.0, postscale_factor=0.5)
    assert out is x
    assert torch.allclose(x, torch.full((4, 3), 1.5 * sum(range(1, hvd.size() + 1))))
    t = torch.arange(12.0).reshape(3, 4).t()  # not contiguous: out-of-place copies it
    assert torch.allclose(hvd.allreduce(t, op=hvd.Sum), t * hvd.size())
    with pytest.raises(ValueError, match="contiguous"):
        hvd.allreduce_(t)


def test_allreduce_fp16_compression():
    x = torch.full((10,), 0.5 + hvd.rank(), dtype=torch.float32)
    out = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float32
    assert torch.allclose(out, torch.full((10,), sum(0.5 + r for r in range(hvd.size()))))


def test_grouped_allreduce_and_in_place():
    ins = [torch.full((5,), hvd.rank(), dtype=torch.int32), torch.ones(2, 2)]
    outs = hvd.grouped_allreduce(ins, op=hvd.Sum)
    assert torch.equal(outs[0], torch.full((5,), sum(range(hvd.size())), dtype=torch.int32))
    assert torch.equal(outs[1], torch.full((2, 2), float(hvd.size())))
    hvd.grouped_allreduce_(ins, op=hvd.Max)
    assert torch.equal(ins[0], torch.full((5,), hvd.size() - 1, dtype=torch.int32))


def test_adasum():
    n = hvd.size()
    x = torch.ones(4) * (hvd.rank() + 1)
    if n & (n - 1):
        with pytest.raises(NotImplementedError):
            hvd.allreduce(x, op=hvd.Adasum)
        return
    # Parallel vectors a, b: Adasum gives (1 - a.b/2|a|^2) a + (1 - a.b/2|b|^2) b.
    a, b = torch.ones(4), torch.ones(4) * 2
    dot = float(a @ b)
    expect = (1 - dot / (2 * float(a @ a))) * a + (1 - dot / (2 * float(b @ b))) * b
    assert torch.allclose(hvd.allreduce(x, op=hvd.Adasum), expect)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allgather_ragged(dtype):
    r = hvd.rank()
    mine = torch.stack([rank_data(r, dtype, (4,))] * (r + 1))
    out = hvd.allgather(mine)
    expect = torch.cat([torch.stack([rank_data(k, dtype, (4,))] * (k + 1))
                        for k in range(hvd.size())])
    assert out.dtype == dtype and torch.equal(out, expect)


def test_grouped_allgather():
    r = hvd.rank()
    a, b = hvd.grouped_allgather([torch.tensor([r]), torch.full((r + 1, 2), r)])
    assert torch.equal(a, torch.arange(hvd.size()))
    assert torch.equal(b, torch.cat([torch.full((k + 1, 2), k) for k in range(hvd.size())]))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast_every_root(dtype):
    for root in range(hvd.size()):
        mine = rank_data(hvd.rank(), dtype)
        assert torch.equal(hvd.broadcast(mine, root), rank_data(root, dtype))
        assert torch.equal(mine, rank_data(hvd.rank(), dtype))
        assert hvd.broadcast_(mine, root) is mine
        assert torch.equal(mine, rank_data(root, dtype))


def test_alltoall():
    n, r = hvd.size(), hvd.rank()
    even = hvd.alltoall(torch.arange(2 * n) + 100 * r)
    assert isinstance(even, torch.Tensor)
    assert torch.equal(even, torch.cat([torch.arange(2 * r, 2 * r + 2) + 100 * k
                                        for k in range(n)]))
    rows = torch.tensor([[r, j] for j in range(n) for _ in range(j + 1)])
    out, received = hvd.alltoall(rows, splits=torch.tensor([j + 1 for j in range(n)]))
    assert received.dtype == torch.int32 and received.tolist() == [r + 1] * n
    assert out.tolist() == [[k, r] for k in range(n) for _ in range(r + 1)]
    out2, received2 = hvd.synchronize(hvd.alltoall_async(rows, splits=[j + 1 for j in range(n)]))
    assert torch.equal(out2, out) and torch.equal(received2, received)


@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_reducescatter(op):
    n, r = hvd.size(), hvd.rank()
    rows = 2 * n + 1
    base = torch.arange(rows * 2, dtype=torch.float64).reshape(rows, 2)
    out = hvd.reducescatter(base * (r + 1), op=OPS[op])
    total = base * sum(range(1, n + 1)) / (n if op == "Average" else 1)
    counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
    assert torch.allclose(out, total[sum(counts[:r]):sum(counts[:r + 1])])
    a, b = hvd.grouped_reducescatter([torch.ones(n, 3), torch.ones(2 * n)], op=hvd.Sum)
    assert torch.equal(a, torch.full((1, 3), float(n))) and torch.equal(b, torch.full((2,), float(n)))


def test_async_poll_is_false_until_every_rank_enqueued():
    late = hvd.size() - 1
    if hvd.rank() == late:
        time.sleep(0.5)
    handle = hvd.allreduce_async(torch.ones(1 << 16), op=hvd.Sum, name="late.t")
    if hvd.rank() == 0:
        assert hvd.poll(handle) is False
    out = hvd.synchronize(handle)
    assert torch.equal(out, torch.full((1 << 16,), float(hvd.size())))
    assert hvd.synchronize(handle) is None  # consumed: Horovod returns None


def test_async_in_place_variants():
    x = torch.ones(3) * hvd.rank()
    h1 = hvd.allreduce_async_(x, op=hvd.Sum)
    y = torch.ones(2) * hvd.rank()
    h2 = hvd.broadcast_async_(y, hvd.size() - 1)
    h3 = hvd.grouped_allreduce_async([torch.ones(1)], op=hvd.Sum)
    h4 = hvd.allgather_async(torch.tensor([hvd.rank()]))
    h5 = hvd.reducescatter_async(torch.ones(hvd.size()), op=hvd.Sum)
    assert hvd.synchronize(h1) is x and x.tolist() == [float(sum(range(hvd.size())))] * 3
    assert hvd.synchronize(h2) is y and y.tolist() == [float(hvd.size() - 1)] * 2
    assert hvd.synchronize(h3)[0].item() == hvd.size()
    assert hvd.synchronize(h4).tolist() == list(range(hvd.size()))
    assert hvd.synchronize(h5).tolist() == [float(hvd.size())]


# ------------------------------------------------------------------ autograd


def test_allreduce_grad():
    x = torch.ones(3, requires_grad=True)
    hvd.allreduce(x * (hvd.rank() + 1), op=hvd.Sum).sum().backward()
    # d/dx of sum over ranks: the gradient (ones) is Sum-allreduced, times this rank's factor
    assert torch.allclose(x.grad, torch.full((3,), float(hvd.size() * (hvd.rank() + 1))))


def test_grouped_allreduce_grad():
    xs = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    outs = hvd.grouped_allreduce(xs, op=hvd.Average)
    (outs[0].sum() + 2 * outs[1].sum()).backward()
    assert torch.allclose(xs[0].grad, torch.ones(2)) and torch.allclose(xs[1].grad, 2 * torch.ones(3))


def test_allgather_grad():
    r = hvd.rank()
    x = torch.ones(r + 1, 2, requires_grad=True)
    out = hvd.allgather(x)
    # every rank weighs row i of the gathered tensor by i
    weights = torch.arange(out.shape[0], dtype=torch.float32).unsqueeze(1).expand(-1, 2)
    (out * weights).sum().backward()
    start = sum(k + 1 for k in range(r))
    expect = torch.arange(start, start + r + 1, dtype=torch.float32).unsqueeze(1).expand(-1, 2)
    assert torch.allclose(x.grad, expect)


def test_broadcast_grad():
    x = torch.ones(4, requires_grad=True)
    hvd.broadcast(x, 0).sum().backward()
    expect = torch.ones(4) if hvd.rank() == 0 else torch.zeros(4)
    assert torch.allclose(x.grad, expect)


def test_alltoall_grad():
    n = hvd.size()
    x = torch.ones(n, 2, requires_grad=True)
    out = hvd.alltoall(x)
    (out * (hvd.rank() + 1)).sum().backward()
    # the row this rank sent to rank j came back weighted by j + 1
    expect = torch.arange(1, n + 1, dtype=torch.float32).unsqueeze(1).expand(-1, 2)
    assert torch.allclose(x.grad, expect)


def test_reducescatter_grad():
    n = hvd.size()
    x = torch.ones(n, 2, requires_grad=True)
    hvd.reducescatter(x, op=hvd.Average).sum().backward()
    assert torch.allclose(x.grad, torch.ones(n, 2))


# ------------------------------------------------------------------ errors and misc


def test_errors_raise_on_this_rank():
    with pytest.raises(ValueError, match="not supported"):
        hvd.allreduce(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ValueError):
        hvd.broadcast(torch.ones(2), root_rank=hvd.size())
    with pytest.raises(ValueError):
        hvd.allgather(torch.tensor(1.0))
    with pytest.raises(ValueError):
        hvd.reducescatter(torch.ones(4, 2), op=hvd.Max)
    with pytest.raises(ValueError):
        hvd.alltoall(torch.ones(4), splits=[1] * (hvd.size() + 1))
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(2), op=17)
    n = hvd.size()
    for splits in (torch.full((n,), 1.0), torch.ones(n, dtype=torch.bool), [1.0] * n):
        with pytest.raises(ValueError, match="splits"):
            hvd.alltoall(torch.ones(n), splits=splits)
    for op in (hvd.Adasum, hvd.Max, hvd.Min, hvd.Product):
        with pytest.raises(ValueError):
            hvd.reducescatter(torch.ones(n, 2), op=op)
        with pytest.raises(ValueError):
            hvd.grouped_reducescatter([torch.ones(n, 2)], op=op)
    # Nothing was queued by the calls above: the next collective runs as usual.
    assert torch.equal(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full((3,), float(n)))


def test_mismatch_raises_horovod_internal_error_on_every_rank():
    with pytest.raises(hvd.HorovodInternalError) as info:
        hvd.allreduce(torch.ones(2 + hvd.rank()), name="torch.mismatch")
    assert isinstance(info.value, RuntimeError)


def test_device_errors():
    from types import SimpleNamespace

    from hvd.torch import _tensors

    with pytest.raises(ValueError, match="meta"):
        hvd.allreduce(torch.ones(2, device="meta"))
    if not hvd.cuda_built():  # a CUDA tensor needs a CUDA build: a clear error, no crash
        with pytest.raises(ValueError, match="without CUDA"):
            _tensors._device(SimpleNamespace(is_cpu=False, device=torch.device("cuda", 0)))


def test_join_and_barrier():
    if hvd.rank() == 0:
        assert hvd.join() == hvd.size() - 1 or hvd.size() == 1
    else:
        out = hvd.allreduce(torch.ones(1), op=hvd.Sum, name="torch.joined")
        assert out.item() == hvd.size() - 1
        if hvd.rank() == hvd.size() - 1:
            time.sleep(0.3)
        assert hvd.join() == hvd.size() - 1
    hvd.barrier()


def test_process_set_ops():
    ps = hvd.add_process_set(list(range(1, hvd.size())))
    try:
        if ps.included():
            out = hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=ps)
            assert torch.equal(out, torch.full((2,), float(hvd.size() - 1)))
            got = hvd.broadcast(torch.tensor([hvd.rank()]), hvd.size() - 1, process_set=ps)
            assert got.item() == hvd.size() - 1
            x = torch.ones(1, requires_grad=True)
            hvd.allgather(x, process_set=ps).sum().backward()
            assert x.grad.item() == 1.0
    finally:
        assert hvd.remove_process_set(ps)


def test_objects_and_capabilities():
    assert hvd.broadcast_object({"r": hvd.rank()}, root_rank=0) == {"r": 0}
    assert hvd.allgather_object(hvd.rank()) == list(range(hvd.size()))
    assert hvd.mpi_built() is False and hvd.gloo_built() is False
    assert hvd.nccl_built() == hvd.cuda_built() or isinstance(hvd.nccl_built(), bool)
    assert hvd.is_initialized() and hvd.is_homogeneous()
