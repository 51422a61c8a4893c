# SPDX-License-Identifier: Apache-2.0
"""Collectives on NumPy arrays against references every rank computes on its own."""

import threading
import time

import numpy as np
import pytest

import hvd

DTYPES = ["uint8", "int8", "uint16", "int16", "int32", "int64", "float16", "float32", "float64",
          "bool"]
OPS = {"Sum": hvd.Sum, "Min": hvd.Min, "Max": hvd.Max, "Product": hvd.Product,
       "Average": hvd.Average}


def rank_data(r, dtype, n=13):
    """Rank r's input: small values so that sums and products stay exact in every dtype."""
    if dtype == "bool":
        return ((np.arange(n) + r) % 3 == 0)
    return ((np.arange(n) * (r + 1)) % 3 + 1).astype(dtype)


def reference(op, dtype, n=13):
    parts = [rank_data(r, dtype, n) for r in range(hvd.size())]
    if dtype == "bool":
        if op in ("Sum", "Max"):
            return np.logical_or.reduce(parts)
        if op in ("Min", "Product"):
            return np.logical_and.reduce(parts)
    wide = [p.astype(np.float64) for p in parts]
    if op == "Sum":
        out = np.sum(wide, axis=0)
    elif op == "Min":
        out = np.min(wide, axis=0)
    elif op == "Max":
        out = np.max(wide, axis=0)
    elif op == "Product":
        out = np.prod(wide, axis=0)
    else:
        out = np.sum(wide, axis=0) / hvd.size()
        if np.dtype(dtype).kind in "iu":
            out = np.trunc(out)
    return out.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_allreduce_every_dtype_and_op(dtype, op):
    if dtype == "bool" and op == "Average":
        with pytest.raises(ValueError):
            hvd.allreduce(rank_data(hvd.rank(), dtype), op=OPS[op])
        return
    out = hvd.allreduce(rank_data(hvd.rank(), dtype), op=OPS[op], name="ar.%s.%s" % (dtype, op))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, reference(op, dtype))


def test_allreduce_in_place_and_scaling():
    x = np.full((4, 3), hvd.rank() + 1.0)
    same = hvd.allreduce_(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5)
    assert same is x
    total = sum(r + 1.0 for r in range(hvd.size()))
    np.testing.assert_allclose(x, np.full((4, 3), total))


def test_allreduce_average_is_default():
    out = hvd.allreduce(np.array([float(hvd.rank())]))
    np.testing.assert_allclose(out, [(hvd.size() - 1) / 2.0])


def test_allreduce_of_python_list_and_scalar():
    np.testing.assert_allclose(hvd.allreduce([1.0, 2.0], op=hvd.Sum),
                               [hvd.size(), 2.0 * hvd.size()])
    assert hvd.allreduce(np.float64(3.0), op=hvd.Sum) == 3.0 * hvd.size()


def test_allreduce_dlpack_input():
    src = np.arange(6, dtype=np.float32)

    class DLPackOnly:
        def __dlpack__(self, **kwargs):
            return src.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return src.__dlpack_device__()

    out = hvd.allreduce(DLPackOnly(), op=hvd.Sum)
    np.testing.assert_allclose(out, src * hvd.size())


def test_grouped_allreduce():
    ins = [np.full(5, hvd.rank(), dtype=np.int32), np.ones((2, 2), dtype=np.float64)]
    outs = hvd.grouped_allreduce(ins, op=hvd.Sum)
    expect = sum(range(hvd.size()))
    np.testing.assert_array_equal(outs[0], np.full(5, expect))
    np.testing.assert_array_equal(outs[1], np.full((2, 2), hvd.size()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather_ragged(dtype):
    r = hvd.rank()
    mine = np.stack([rank_data(r, dtype, 3)] * (r + 1))
    out = hvd.allgather(mine, name="ag." + dtype)
    expect = np.concatenate([np.stack([rank_data(k, dtype, 3)] * (k + 1))
                             for k in range(hvd.size())])
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather_into_in_place_and_not(dtype):
    r, n = hvd.rank(), hvd.size()
    rows = [k + 1 for k in range(n)]
    start = sum(rows[:r])
    expect = np.concatenate([np.stack([rank_data(k, dtype, 3)] * rows[k]) for k in range(n)])
    out = np.zeros_like(expect)
    mine = np.stack([rank_data(r, dtype, 3)] * rows[r])
    assert hvd.allgather_into(mine, out, name="agi." + dtype) is out
    np.testing.assert_array_equal(out, expect)
    out = np.zeros_like(expect)
    out[start:start + rows[r]] = mine
    hvd.allgather_into(out[start:start + rows[r]], out, name="agi.inplace." + dtype)
    np.testing.assert_array_equal(out, expect)


def test_allgather_into_wrong_size_fails_everywhere():
    out = np.zeros((hvd.size() + (1 if hvd.rank() == hvd.size() - 1 else 0), 2), np.float32)
    # like a shape mismatch: found while the op runs, so it fails on every rank
    with pytest.raises(hvd.HorovodInternalError, match="rank %d's output has" % (hvd.size() - 1)):
        hvd.allgather_into(np.ones((1, 2), np.float32), out, name="agi.wrong")
    with pytest.raises(ValueError):
        hvd.allgather_into(np.ones((1, 2), np.float32), np.zeros((hvd.size(), 3), np.float32))


def test_grouped_allgather():
    r = hvd.rank()
    a, b = hvd.grouped_allgather([np.array([r]), np.full((r + 1, 2), r, dtype=np.int16)])
    np.testing.assert_array_equal(a, np.arange(hvd.size()))
    np.testing.assert_array_equal(
        b, np.concatenate([np.full((k + 1, 2), k, dtype=np.int16) for k in range(hvd.size())]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_from_every_root(dtype):
    for root in range(hvd.size()):
        mine = rank_data(hvd.rank(), dtype)
        out = hvd.broadcast(mine, root, name="bc.%s.%d" % (dtype, root))
        np.testing.assert_array_equal(out, rank_data(root, dtype))
        np.testing.assert_array_equal(mine, rank_data(hvd.rank(), dtype))  # input untouched
        hvd.broadcast_(mine, root)
        np.testing.assert_array_equal(mine, rank_data(root, dtype))


def test_alltoall_even_and_uneven():
    n, r = hvd.size(), hvd.rank()
    even = hvd.alltoall(np.arange(2 * n) + 100 * r)
    np.testing.assert_array_equal(
        even, np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * k for k in range(n)]))
    # rank r sends j + 1 rows to rank j; each row is (sender, receiver)
    splits = [j + 1 for j in range(n)]
    rows = np.array([[r, j] for j in range(n) for _ in range(j + 1)], dtype=np.int64)
    out, received = hvd.alltoall(rows, splits=splits)
    np.testing.assert_array_equal(received, [r + 1] * n)
    np.testing.assert_array_equal(out, [[k, r] for k in range(n) for _ in range(r + 1)])


@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_reducescatter(op):
    n, r = hvd.size(), hvd.rank()
    rows = 2 * n + 1
    x = np.arange(rows * 2, dtype=np.float64).reshape(rows, 2) * (r + 1)
    out = hvd.reducescatter(x, op=OPS[op])
    total = np.arange(rows * 2, dtype=np.float64).reshape(rows, 2) * sum(range(1, n + 1))
    if op == "Average":
        total /= n
    counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
    start = sum(counts[:r])
    np.testing.assert_allclose(out, total[start:start + counts[r]])


def test_grouped_reducescatter():
    n = hvd.size()
    a, b = hvd.grouped_reducescatter([np.ones((n, 3)), np.ones((2 * n,), dtype=np.float32)],
                                     op=hvd.Sum)
    np.testing.assert_allclose(a, np.full((1, 3), n))
    np.testing.assert_allclose(b, np.full((2,), n))


def test_async_ops_overlap():
    """Rank 0's op cannot finish before the last rank enqueues, 0.5 s later."""
    late = hvd.size() - 1
    if hvd.rank() == late:
        time.sleep(0.5)
    handle = hvd.allreduce_async(np.ones(1 << 16, dtype=np.float32), op=hvd.Sum, name="late")
    if hvd.rank() == 0:
        assert hvd.poll(handle) is False
    out = hvd.synchronize(handle)
    assert hvd.poll is not None
    np.testing.assert_allclose(out, np.full(1 << 16, hvd.size()))


def test_many_outstanding_async_ops():
    handles = [hvd.allreduce_async(np.full(8, i, dtype=np.int64), op=hvd.Sum, name="many.%d" % i)
               for i in range(50)]
    for i, h in enumerate(reversed(handles)):
        np.testing.assert_array_equal(hvd.synchronize(h), np.full(8, (49 - i) * hvd.size()))


def test_ops_from_threads():
    results = {}

    def work(i):
        results[i] = hvd.allreduce(np.array([i], dtype=np.int32), op=hvd.Sum, name="thr.%d" % i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert {i: int(v[0]) for i, v in results.items()} == {i: i * hvd.size() for i in range(4)}


def test_join_returns_last_rank():
    last = hvd.size() - 1
    if hvd.rank() == last:
        time.sleep(0.2)
    assert hvd.join() == last


def test_join_contributes_zeros():
    """Rank 0 joins at once; the others allreduce and see only their own contributions."""
    if hvd.rank() == 0:
        hvd.join()
        return
    out = hvd.allreduce(np.array([1.0]), op=hvd.Sum, name="joined.sum")
    np.testing.assert_allclose(out, [hvd.size() - 1])
    hvd.join()


def test_join_takes_part_in_fused_and_grouped_allreduces():
    """A joined rank follows the others' fused runs and groups with zeros."""
    if hvd.rank() == 0:
        hvd.join()
        return
    handles = [hvd.allreduce_async(np.full(k, 2.0), op=hvd.Sum, name="joined.fused.%d" % k)
               for k in (1, 2, 3)]
    for k, h in zip((1, 2, 3), handles):
        np.testing.assert_allclose(hvd.synchronize(h), np.full(k, 2.0 * (hvd.size() - 1)))
    outs = hvd.grouped_allreduce([np.ones(2), np.ones(3)], op=hvd.Sum, name="joined.group")
    for o in outs:
        np.testing.assert_allclose(o, np.full(o.shape, hvd.size() - 1.0))
    hvd.join()


def test_barrier():
    hvd.barrier()


def test_objects_of_different_types_per_rank():
    """The common `obj if rank == 0 else None` must not give each rank its own op name."""
    mine = {"weights": [1, 2]} if hvd.rank() == 0 else None
    assert hvd.broadcast_object(mine, root_rank=0) == {"weights": [1, 2]}
    gathered = hvd.allgather_object(hvd.rank() if hvd.rank() % 2 else str(hvd.rank()))
    assert gathered == [k if k % 2 else str(k) for k in range(hvd.size())]


def test_float_root_rank():
    with pytest.raises(ValueError, match="root_rank"):
        hvd.broadcast(np.ones(2), 0.7)
    np.testing.assert_array_equal(hvd.broadcast(np.array([hvd.rank()]), 0.0), [0])


def test_objects():
    obj = {"rank": hvd.rank(), "payload": list(range(hvd.rank()))}
    assert hvd.broadcast_object(obj, root_rank=hvd.size() - 1) == {
        "rank": hvd.size() - 1, "payload": list(range(hvd.size() - 1))}
    gathered = hvd.allgather_object(obj)
    assert gathered == [{"rank": k, "payload": list(range(k))} for k in range(hvd.size())]
