# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow's collectives, eager and inside tf.function, against what each rank computes
itself from the inputs every rank derives from its rank."""

import numpy as np
import pytest
import tensorflow as tf

import hvd.tensorflow as hvd
from conftest import run

DTYPES = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16, tf.bfloat16,
          tf.float32, tf.float64, tf.bool]
FLOATS = [tf.float16, tf.bfloat16, tf.float32, tf.float64]
MODES = ["eager", "function"]
BOOLS = {"Sum": np.logical_or, "Max": np.logical_or, "Min": np.logical_and,
         "Product": np.logical_and}


def value(r, shape, dtype):
    """Rank r's input: small values so that sums and products are exact in every dtype."""
    base = (np.arange(int(np.prod(shape))).reshape(shape) % 3) + r + 1
    if dtype == tf.bool:
        return ((base + r) % 2).astype(np.bool_)
    return base.astype(np.float64)


def tensor(r, shape, dtype):
    return tf.cast(tf.constant(value(r, shape, dtype)), dtype)


def reduce_ref(op, dtype, shape, n, prescale=1.0, postscale=1.0):
    if dtype == tf.bool:
        return BOOLS[op].reduce([value(r, shape, dtype) for r in range(n)])
    xs = [value(r, shape, dtype) * prescale for r in range(n)]
    out = {"Sum": sum, "Average": sum, "Min": np.minimum.reduce, "Max": np.maximum.reduce,
           "Product": np.multiply.reduce}[op](xs) * postscale
    return out / n if op == "Average" else out


def close(got, want, dtype):
    got = tf.cast(got, tf.float64).numpy() if dtype != tf.bool else got.numpy()
    tol = {tf.float16: 1e-2, tf.bfloat16: 4e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# Average of integers truncates and of bools is unsupported (the NumPy suite covers both).
ALLREDUCE_CASES = ([(d, op) for d in DTYPES for op in ("Sum", "Min", "Max", "Product")]
                   + [(d, "Average") for d in FLOATS])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,op", ALLREDUCE_CASES)
def test_allreduce(mode, dtype, op):
    x = tensor(hvd.rank(), (3, 4), dtype)
    out = run(mode, lambda x: hvd.allreduce(x, op=getattr(hvd, op)), x)
    assert out.dtype == dtype and out.shape == (3, 4)
    close(out, reduce_ref(op, dtype, (3, 4), hvd.size()), dtype)


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_scales_names_average_default(mode):
    x = tensor(hvd.rank(), (5,), tf.float64)
    out = run(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5,
                                            postscale_factor=3.0, name="scaled"), x)
    close(out, reduce_ref("Sum", tf.float64, (5,), hvd.size(), 0.5, 3.0), tf.float64)
    out = run(mode, lambda x: hvd.allreduce(x), x)  # Average by default
    close(out, reduce_ref("Average", tf.float64, (5,), hvd.size()), tf.float64)
    scalar = run(mode, lambda: hvd.allreduce(tf.constant(2.0), op=hvd.Sum))
    assert scalar.shape == () and float(scalar) == 2.0 * hvd.size()


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_mixed_dtypes_and_compression(mode):
    xs = [tensor(hvd.rank(), (4,), tf.float32), tensor(hvd.rank(), (2, 3), tf.int32),
          tensor(hvd.rank(), (3,), tf.float64)]
    outs = run(mode, lambda *xs: hvd.grouped_allreduce(list(xs), op=hvd.Sum), *xs)
    for x, out in zip(xs, outs):
        assert out.dtype == x.dtype
        close(out, reduce_ref("Sum", x.dtype, x.shape, hvd.size()), x.dtype)
    out = run(mode, lambda x: hvd.allreduce(x, compression=hvd.Compression.fp16), xs[0])
    assert out.dtype == tf.float32
    close(out, reduce_ref("Average", tf.float32, (4,), hvd.size()), tf.float16)


@pytest.mark.parametrize("mode", MODES)
def test_indexed_slices_allreduce_is_an_allgather(mode):
    r, n = hvd.rank(), hvd.size()

    def f():
        slices = tf.IndexedSlices(tf.fill([r + 1, 2], float(r + 1)), tf.fill([r + 1], r),
                                  dense_shape=tf.constant([n, 2]))
        out = hvd.allreduce(slices)
        return out.values, out.indices

    values, indices = run(mode, f)
    want_idx = np.concatenate([np.full(k + 1, k) for k in range(n)])
    want_val = np.concatenate([np.full((k + 1, 2), (k + 1) / n) for k in range(n)])
    np.testing.assert_array_equal(indices.numpy(), want_idx)
    np.testing.assert_allclose(values.numpy(), want_val, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather_ragged(mode, dtype):
    r = hvd.rank()
    x = tensor(r, (r + 1, 3), dtype)
    out = run(mode, hvd.allgather, x)
    want = np.concatenate([value(k, (k + 1, 3), dtype) for k in range(hvd.size())])
    assert out.dtype == dtype and out.shape == want.shape
    close(out, want, dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast(mode, dtype):
    root = hvd.size() - 1
    out = run(mode, lambda x: hvd.broadcast(x, root_rank=root), tensor(hvd.rank(), (2, 3), dtype))
    close(out, value(root, (2, 3), dtype), dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [tf.uint8, tf.int64, tf.bfloat16, tf.float32, tf.bool])
def test_alltoall_splits(mode, dtype):
    r, n = hvd.rank(), hvd.size()
    # Rank r sends (r + j) % 3 rows to rank j, each row [r, j, k].
    splits = [(r + j) % 3 for j in range(n)]
    rows = [[r, j, k] for j in range(n) for k in range(splits[j])]
    x = tf.cast(tf.constant(np.array(rows, dtype=np.float64).reshape(-1, 3) % 2
                            if dtype == tf.bool else np.array(rows, dtype=np.float64).reshape(-1, 3)),
                dtype)
    out, received = run(mode, lambda x, s: hvd.alltoall(x, splits=s), x, tf.constant(splits))
    want_splits = [(k + r) % 3 for k in range(n)]
    want = np.array([[k, r, i] for k in range(n) for i in range(want_splits[k])],
                    dtype=np.float64).reshape(-1, 3)
    np.testing.assert_array_equal(received.numpy(), want_splits)
    close(out, want % 2 if dtype == tf.bool else want, dtype)


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_even(mode):
    n = hvd.size()
    x = tf.range(2 * n) + 100 * hvd.rank()
    out, received = run(mode, hvd.alltoall, x)
    r = hvd.rank()
    want = np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * k for k in range(n)])
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(received.numpy(), [2] * n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,op", [(tf.float32, "Sum"), (tf.float64, "Average"),
                                      (tf.int32, "Sum"), (tf.bfloat16, "Sum")])
def test_reducescatter(mode, dtype, op):
    n, r = hvd.size(), hvd.rank()
    d0 = 2 * n + 1  # uneven: rank 0 gets one row more
    out = run(mode, lambda x: hvd.reducescatter(x, op=getattr(hvd, op)),
              tensor(r, (d0, 2), dtype))
    full = reduce_ref(op, dtype, (d0, 2), n)
    start = sum(d0 // n + (1 if k < d0 % n else 0) for k in range(r))
    close(out, full[start:start + d0 // n + (1 if r < d0 % n else 0)], dtype)


def test_collectives_in_one_function_in_any_order():
    """Independent collectives of one tf.function all run, whatever order each rank's executor
    starts them in (the kernels are asynchronous)."""
    r = hvd.rank()

    @tf.function
    def many(x):
        outs = [hvd.allreduce(x * (i + 1), op=hvd.Sum) for i in range(8)]
        outs.append(hvd.allgather(tf.reshape(x[:r + 1], [-1])))
        return outs

    x = tf.constant([1.0, 2.0, 3.0])
    for _ in range(3):  # the same names each call: served from the response cache
        outs = many(x)
        for i in range(8):
            np.testing.assert_allclose(outs[i].numpy(), [(i + 1) * hvd.size() * v
                                                         for v in (1, 2, 3)])
        assert outs[8].shape[0] == sum(k + 1 for k in range(hvd.size()))


@pytest.mark.parametrize("mode", MODES)
def test_process_set(mode):
    ranks = sorted({1 % hvd.size(), hvd.size() - 1})  # not the global set
    ps = hvd.add_process_set(ranks)
    try:
        if ps.included():
            out = run(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, process_set=ps),
                      tf.constant([float(hvd.rank() + 1)]))
            assert float(out[0]) == sum(k + 1 for k in ranks)
            got = run(mode, lambda x: hvd.broadcast(x, ranks[-1], process_set=ps),
                      tf.constant([hvd.rank()]))
            assert int(got[0]) == ranks[-1]
    finally:
        hvd.remove_process_set(ps)


def test_barrier_join_and_objects():
    hvd.barrier()

    @tf.function
    def in_function():
        hvd.barrier()  # stateful: runs although nothing consumes it
        return hvd.join()

    assert 0 <= int(in_function()) < hvd.size()
    last = hvd.join()
    assert 0 <= int(last) < hvd.size()
    assert hvd.broadcast_object({"r": hvd.rank()}, root_rank=1 % hvd.size()) == {
        "r": 1 % hvd.size()}
    assert hvd.allgather_object(hvd.rank() * 2) == [2 * k for k in range(hvd.size())]


def test_broadcast_variables():
    v = [tf.Variable(tf.fill([3], float(hvd.rank()))), tf.Variable(hvd.rank() + 10)]
    hvd.broadcast_variables(v, root_rank=0)
    np.testing.assert_array_equal(v[0].numpy(), [0.0, 0.0, 0.0])
    assert int(v[1].numpy()) == 10
