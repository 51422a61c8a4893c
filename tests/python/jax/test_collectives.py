# SPDX-License-Identifier: Apache-2.0
"""hvd.jax's collectives, eager and under jax.jit, against what each rank computes itself
from the inputs every rank derives from its rank."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import hvd.jax as hvd

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.float16,
          ml_dtypes.bfloat16, np.float32, np.float64, np.bool_]
FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
MODES = ["eager", "jit"]


def run(mode, fn, *args):
    if mode == "jit":
        return jax.jit(fn)(*args)
    return fn(*args)


def value(r, shape, dtype):
    """Rank r's input: small values so that sums and products are exact in every dtype."""
    base = (np.arange(int(np.prod(shape))).reshape(shape) % 3) + r + 1
    if dtype == np.bool_:
        return ((base + r) % 2).astype(np.bool_)
    return base.astype(dtype)


def reduce_ref(op, dtype, shape, n, prescale=1.0, postscale=1.0):
    xs = [value(r, shape, dtype).astype(np.float64) * prescale for r in range(n)]
    if op == hvd.Sum or op == hvd.Average:
        out = sum(xs)
    elif op == hvd.Min:
        out = np.minimum.reduce(xs)
    elif op == hvd.Max:
        out = np.maximum.reduce(xs)
    else:
        out = np.multiply.reduce(xs)
    out = out * postscale
    if op == hvd.Average:
        out = out / n
    return out


def close(got, want, dtype):
    got = np.asarray(got).astype(np.float64)
    tol = {np.float16: 1e-2, ml_dtypes.bfloat16: 4e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# Average of integers truncates and of bools is unsupported (the NumPy suite covers both).
ALLREDUCE_CASES = ([(d, op) for d in DTYPES for op in ("Sum", "Min", "Max", "Product")]
                   + [(d, "Average") for d in FLOATS])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,op", ALLREDUCE_CASES)
def test_allreduce(mode, dtype, op):
    op = getattr(hvd, op)
    if dtype == np.bool_:
        bools = {hvd.Sum: np.logical_or, hvd.Max: np.logical_or,
                 hvd.Min: np.logical_and, hvd.Product: np.logical_and}
        x = jnp.asarray(value(hvd.rank(), (3, 4), np.bool_))
        out = run(mode, lambda x: hvd.allreduce(x, op=op), x)
        want = bools[op].reduce([value(r, (3, 4), np.bool_) for r in range(hvd.size())])
        assert out.dtype == jnp.bool_
        np.testing.assert_array_equal(np.asarray(out), want)
        return
    x = jnp.asarray(value(hvd.rank(), (3, 4), dtype))
    out = run(mode, lambda x: hvd.allreduce(x, op=op), x)
    assert out.dtype == x.dtype and out.shape == x.shape
    close(out, reduce_ref(op, dtype, (3, 4), hvd.size()), dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_allreduce_scales(mode, dtype):
    x = jnp.asarray(value(hvd.rank(), (5,), dtype))
    out = run(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0,
                                            postscale_factor=0.5), x)
    close(out, np.trunc(reduce_ref(hvd.Sum, dtype, (5,), hvd.size(), 2.0, 0.5)), dtype)
    avg = run(mode, lambda x: hvd.allreduce(x.astype(jnp.float64), prescale_factor=3.0), x)
    close(avg, reduce_ref(hvd.Average, dtype, (5,), hvd.size(), 3.0), np.float64)


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_named_and_scalar(mode):
    x = jnp.float32(hvd.rank() + 1)
    out = run(mode, lambda x: hvd.allreduce(x, name="scalar", op=hvd.Sum), x)
    assert out.shape == ()
    assert float(out) == sum(range(1, hvd.size() + 1))


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_pytree_and_grouped(mode):
    n, r = hvd.size(), hvd.rank()
    tree = {"w": jnp.full((2, 3), r, jnp.float32), "b": [jnp.arange(4, dtype=jnp.int32) + r]}
    out = run(mode, lambda t: hvd.allreduce(t, op=hvd.Sum), tree)
    total = sum(range(n))
    np.testing.assert_array_equal(out["w"], np.full((2, 3), total, np.float32))
    np.testing.assert_array_equal(out["b"][0], np.arange(4) * n + total)
    outs = run(mode, lambda a, b: hvd.grouped_allreduce([a, b]), tree["w"], tree["w"][0])
    assert isinstance(outs, list) and len(outs) == 2
    np.testing.assert_allclose(outs[0], np.full((2, 3), total / n))
    np.testing.assert_allclose(outs[1], np.full((3,), total / n))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather_ragged(mode, dtype):
    n, r = hvd.size(), hvd.rank()
    x = jnp.asarray(value(r, (r + 1, 2), dtype))
    out = run(mode, hvd.allgather, x)
    want = np.concatenate([value(k, (k + 1, 2), dtype) for k in range(n)])
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(out), want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast(mode, dtype):
    n, r = hvd.size(), hvd.rank()
    for root in range(n):
        x = jnp.asarray(value(r, (2, 3), dtype))
        out = run(mode, lambda x: hvd.broadcast(x, root), x)
        np.testing.assert_array_equal(np.asarray(out), value(root, (2, 3), dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_alltoall_splits(mode, dtype):
    n, r = hvd.size(), hvd.rank()

    def rows(src, dst):  # rows rank src sends to rank dst
        return (src + dst) % 3

    def sent_by(src):
        total = sum(rows(src, d) for d in range(n))
        return value(src, (total, 2), dtype)

    splits = [rows(r, d) for d in range(n)]
    out, received = run(mode, lambda x: hvd.alltoall(x, splits=splits), jnp.asarray(sent_by(r)))
    want = []
    for src in range(n):
        start = sum(rows(src, d) for d in range(r))
        want.append(sent_by(src)[start:start + rows(src, r)])
    np.testing.assert_array_equal(np.asarray(out), np.concatenate(want))
    np.testing.assert_array_equal(np.asarray(received), [rows(s, r) for s in range(n)])
    assert received.dtype == jnp.int32


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_even(mode):
    n, r = hvd.size(), hvd.rank()
    x = jnp.arange(2 * n, dtype=jnp.float32) + 100 * r
    out = run(mode, hvd.alltoall, x)
    want = np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * s for s in range(n)])
    np.testing.assert_array_equal(np.asarray(out), want)


REDUCESCATTER_CASES = ([(d, "Sum") for d in DTYPES if d != np.bool_]
                       + [(d, "Average") for d in FLOATS])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,op", REDUCESCATTER_CASES)
def test_reducescatter(mode, dtype, op):
    op = getattr(hvd, op)
    n, r = hvd.size(), hvd.rank()
    d0 = 2 * n + 1  # does not divide: the first rank gets one more row
    x = jnp.asarray(value(r, (d0, 3), dtype))
    out = run(mode, lambda x: hvd.reducescatter(x, op=op), x)
    full = reduce_ref(op, dtype, (d0, 3), n)
    counts = [d0 // n + (1 if k < d0 % n else 0) for k in range(n)]
    start = sum(counts[:r])
    close(out, full[start:start + counts[r]], dtype)


@pytest.mark.parametrize("mode", MODES)
def test_adasum(mode):
    n = hvd.size()
    x = jnp.asarray([1.0, -2.0, 3.0], jnp.float32)
    if n & (n - 1):
        with pytest.raises(NotImplementedError):
            run(mode, lambda x: hvd.allreduce(x, op=hvd.Adasum), x)
        return
    # Adasum of equal vectors is that vector; of orthogonal ones their sum.
    np.testing.assert_allclose(run(mode, lambda x: hvd.allreduce(x, op=hvd.Adasum), x), x)
    e = jnp.zeros(n, jnp.float32).at[hvd.rank()].set(hvd.rank() + 1.0)
    np.testing.assert_allclose(run(mode, lambda x: hvd.allreduce(x, op=hvd.Adasum), e),
                               np.arange(1, n + 1), rtol=1e-6)


def test_jit_reuses_compiled_ops():
    f = jax.jit(lambda x: hvd.allreduce(x, op=hvd.Sum) + hvd.allgather(x)[:1])
    x = jnp.ones(2, jnp.float32) * (hvd.rank() + 1)
    n = hvd.size()
    for _ in range(5):
        out = f(x)
    np.testing.assert_allclose(out, np.full(2, n * (n + 1) / 2 + 1))


def test_independent_ops_in_any_order():
    # Two collectives with no data dependency, issued in opposite orders on odd and even
    # ranks: they are matched by name, and both are in flight whatever order XLA runs them.
    r = hvd.rank()

    def f(a, b):
        if r % 2:
            y = hvd.allreduce(b, name="second", op=hvd.Sum)
            x = hvd.allreduce(a, name="first", op=hvd.Sum)
        else:
            x = hvd.allreduce(a, name="first", op=hvd.Sum)
            y = hvd.allreduce(b, name="second", op=hvd.Sum)
        return x, y

    x, y = jax.jit(f)(jnp.ones(3), jnp.full(4, 2.0))
    np.testing.assert_allclose(x, np.full(3, hvd.size()))
    np.testing.assert_allclose(y, np.full(4, 2.0 * hvd.size()))


def test_barrier_and_join():
    hvd.barrier()
    assert hvd.join() in range(hvd.size())
