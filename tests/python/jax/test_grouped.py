# SPDX-License-Identifier: Apache-2.0
"""hvd.jax's grouped_allgather and grouped_reducescatter, eager and under jax.jit, against what
each rank computes itself, and their gradients."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import hvd.jax as hvd
from test_collectives import MODES, close, reduce_ref, run, value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.float16, ml_dtypes.bfloat16,
                                   np.float32, np.bool_])
def test_grouped_allgather_ragged_mixed(mode, dtype):
    """Each array of the group gathered, ranks' rows differing, with a float32 array of
    another shape in the same group."""
    n, r = hvd.size(), hvd.rank()
    xs = [jnp.asarray(value(r, (r + 1, 3), dtype)), jnp.asarray(value(r + 7, (2, 2, 2),
                                                                      np.float32))]
    outs = run(mode, lambda a, b: hvd.grouped_allgather([a, b]), *xs)
    assert len(outs) == 2 and outs[0].dtype == xs[0].dtype
    np.testing.assert_array_equal(np.asarray(outs[0]),
                                  np.concatenate([value(k, (k + 1, 3), dtype) for k in range(n)]))
    np.testing.assert_array_equal(
        np.asarray(outs[1]), np.concatenate([value(k + 7, (2, 2, 2), np.float32)
                                             for k in range(n)]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,op", [(np.float32, "Sum"), (np.float64, "Average"),
                                      (np.int32, "Sum"), (ml_dtypes.bfloat16, "Sum"),
                                      (np.float16, "Average")])
def test_grouped_reducescatter(mode, dtype, op):
    op = getattr(hvd, op)
    n, r = hvd.size(), hvd.rank()
    shapes = [(2 * n + 1, 2), (n, 3)]  # the first does not divide: rank 0 gets a row more
    outs = run(mode, lambda a, b: hvd.grouped_reducescatter([a, b], op=op),
               *[jnp.asarray(value(r, s, dtype)) for s in shapes])
    for out, shape in zip(outs, shapes):
        d0 = shape[0]
        start = sum(d0 // n + (1 if k < d0 % n else 0) for k in range(r))
        rows = d0 // n + (1 if r < d0 % n else 0)
        assert out.shape[0] == rows
        close(out, reduce_ref(op, dtype, shape, n)[start:start + rows], dtype)


def test_grouped_scales_and_empty():
    n, r = hvd.size(), hvd.rank()
    x = jnp.asarray(value(r, (n, 2), np.float32))
    (out,) = jax.jit(lambda x: hvd.grouped_reducescatter([x], op=hvd.Sum, prescale_factor=2.0,
                                                         postscale_factor=0.25))(x)
    close(out, reduce_ref(hvd.Sum, np.float32, (n, 2), n)[r:r + 1] * 0.5, np.float32)
    assert hvd.grouped_allgather([]) == [] and hvd.grouped_reducescatter([]) == []


@pytest.mark.parametrize("mode", MODES)
def test_grouped_gradients(mode):
    """grouped_allgather's gradient: the cotangents averaged over the ranks, cut to this rank's
    rows; grouped_reducescatter's (Sum): the cotangents gathered, times the set size."""
    n, r = hvd.size(), hvd.rank()
    total = n * (n + 1) // 2
    w = jnp.asarray(np.arange(total * 2, dtype=np.float32).reshape(total, 2))

    def loss(a, b):
        gathered = hvd.grouped_allgather([a])[0]
        scattered = hvd.grouped_reducescatter([b], op=hvd.Sum)[0]
        return jnp.sum(gathered * w) + jnp.sum(scattered * (r + 1.0))

    a = jnp.ones((r + 1, 2), jnp.float32)  # rank k has k + 1 rows
    b = jnp.ones((n, 2), jnp.float32)
    ga, gb = run(mode, jax.grad(loss, argnums=(0, 1)), a, b)
    start = r * (r + 1) // 2
    np.testing.assert_allclose(np.asarray(ga), np.asarray(w)[start:start + r + 1])
    want_b = np.repeat(np.arange(1.0, n + 1.0)[:, None], 2, axis=1) * n
    np.testing.assert_allclose(np.asarray(gb), want_b)
