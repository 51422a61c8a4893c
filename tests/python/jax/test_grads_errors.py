# SPDX-License-Identifier: Apache-2.0
"""Gradients through hvd.jax's collectives checked by finite differences, errors raised on
every rank, process sets and re-init cycles under jax.jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hvd.jax as hvd

MODES = ["eager", "jit"]


def maybe_jit(mode, fn):
    return jax.jit(fn) if mode == "jit" else fn


def numeric_grad(loss, x, h=1e-4):
    """d(sum over ranks of loss)/dx on this rank, by central differences: each rank in turn
    perturbs its own x while the others hold theirs (every rank makes the same calls)."""
    n, r = hvd.size(), hvd.rank()
    grad = np.zeros(x.shape)
    sizes = [int(v) for v in hvd.allgather(jnp.asarray([x.size]))]  # x may differ per rank
    for p in range(n):
        for i in range(sizes[p]):
            e = np.zeros(x.shape)
            if p == r:
                e.flat[i] = h
            up = hvd.allreduce(jnp.asarray(loss(x + e)), op=hvd.Sum)
            down = hvd.allreduce(jnp.asarray(loss(x - e)), op=hvd.Sum)
            if p == r:
                grad.flat[i] = (float(up) - float(down)) / (2 * h)
    return grad


def weights(shape):
    return jnp.asarray(np.arange(1, 1 + int(np.prod(shape))).reshape(shape) / 7.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_allreduce_grad(mode, op):
    op = getattr(hvd, op)
    x = jnp.asarray(np.linspace(-1, 1, 4) + hvd.rank(), dtype=jnp.float64)
    w = weights((4,))

    def loss(x):
        return jnp.sum(jnp.sin(hvd.allreduce(x * x, op=op, prescale_factor=1.5)) * w)

    got = maybe_jit(mode, jax.grad(loss))(x)
    np.testing.assert_allclose(got, numeric_grad(loss, x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_allgather_grad(mode):
    # Horovod's allgather gradient averages the cotangent over the ranks: the gradient of the
    # mean over ranks of the loss.
    r, n = hvd.rank(), hvd.size()
    x = jnp.asarray(np.linspace(0, 1, 2 * (r + 1)).reshape(r + 1, 2), dtype=jnp.float64)
    total = sum(k + 1 for k in range(n))
    w = weights((total, 2)) * (r + 1)

    def loss(x):
        return jnp.sum(jnp.cos(hvd.allgather(x)) * w)

    got = maybe_jit(mode, jax.grad(loss))(x)
    np.testing.assert_allclose(got, numeric_grad(loss, x) / n, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_grad(mode):
    r, n = hvd.rank(), hvd.size()
    x = jnp.asarray(np.linspace(0, 1, 3) + r, dtype=jnp.float64)
    w = weights((3,)) * (r + 1)

    def loss(x):
        return jnp.sum(hvd.broadcast(x, 1) ** 2 * w)

    got = maybe_jit(mode, jax.grad(loss))(x)
    np.testing.assert_allclose(got, numeric_grad(loss, x) / n, rtol=1e-5, atol=1e-7)
    if r != 1:
        assert not np.any(np.asarray(got))


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_and_reducescatter_grads(mode):
    r, n = hvd.rank(), hvd.size()
    x = jnp.asarray(np.linspace(0, 1, 2 * n) + r, dtype=jnp.float64)
    w = weights((2 * n,))

    def loss_a2a(x):
        return jnp.sum(hvd.alltoall(x) ** 2 * w)

    got = maybe_jit(mode, jax.grad(loss_a2a))(x)
    np.testing.assert_allclose(got, numeric_grad(loss_a2a, x), rtol=1e-5, atol=1e-7)

    def loss_rs(x):
        return jnp.sum(jnp.sin(hvd.reducescatter(x, op=hvd.Sum)) * w[:2])

    # Horovod scales reducescatter's gradient by the set size (an allgather of size * ct).
    got = maybe_jit(mode, jax.grad(loss_rs))(x)
    np.testing.assert_allclose(got, numeric_grad(loss_rs, x) * n, rtol=1e-5, atol=1e-7)


def test_mismatch_raises_on_every_rank_eager():
    x = jnp.ones(hvd.rank() + 2, jnp.float32)  # a shape that differs between ranks
    with pytest.raises(hvd.HorovodInternalError, match="HVD_ERR_MISMATCH"):
        hvd.allreduce(x, name="eager.mismatch")
    # The job goes on: the next collective succeeds.
    assert float(hvd.allreduce(jnp.float32(1), op=hvd.Sum)) == hvd.size()


def test_mismatch_raises_on_every_rank_jit():
    # Inside jax.jit the failure surfaces as JAX's runtime error, carrying Horovod's
    # exception type and libhvd's status in its message.
    f = jax.jit(lambda x: hvd.allreduce(x, name="jit.mismatch"))
    x = jnp.ones(hvd.rank() + 2, jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError,
                       match="HorovodInternalError: HVD_ERR_MISMATCH: hvd.jax allreduce"):
        np.asarray(f(x))
    assert float(hvd.allreduce(jnp.float32(1), op=hvd.Sum)) == hvd.size()


def test_stale_trace_of_ragged_allgather_fails_on_every_rank():
    # Both ranks trace with 2 rows, then with 3; then rank 0 passes 2 rows and the others 3:
    # every rank reuses a trace whose row counts are no longer true, and every rank fails.
    r = hvd.rank()
    f = jax.jit(lambda x: hvd.allgather(x, name="stale"))
    for rows in (2, 3):
        assert f(jnp.ones((rows, 1))).shape == (rows * hvd.size(), 1)
    with pytest.raises(jax.errors.JaxRuntimeError, match="HorovodInternalError: HVD_ERR_"):
        np.asarray(f(jnp.ones((2 if r == 0 else 3, 1))))
    assert f(jnp.ones((3, 1))).shape == (3 * hvd.size(), 1)


def test_caller_errors_are_value_errors():
    with pytest.raises(ValueError):
        jax.jit(lambda x: hvd.allgather(x))(jnp.float32(1))
    with pytest.raises(ValueError):
        jax.jit(lambda x: hvd.allreduce(x))(jnp.ones(2, jnp.uint32))
    with pytest.raises(ValueError):
        hvd.broadcast(jnp.ones(2), hvd.size())
    with pytest.raises(ValueError):
        jax.jit(lambda x: hvd.alltoall(x, splits=[1] * (hvd.size() + 1)))(jnp.ones(9))


def test_process_set_under_jit():
    n = hvd.size()
    ranks = [0, 1] if n > 2 else [1]  # a set other than the global one
    ps = hvd.add_process_set(ranks)
    try:
        if hvd.rank() in ranks:
            # Named: unnamed traced ops count per process, and only the set's ranks trace.
            f = jax.jit(lambda x: hvd.allreduce(x, op=hvd.Sum, process_set=ps, name="ps.sum"))
            out = f(jnp.full(3, hvd.rank() + 1.0))
            np.testing.assert_allclose(out, np.full(3, sum(r + 1.0 for r in ranks)))
            root = ranks[-1]
            b = jax.jit(lambda x: hvd.broadcast(x, root, process_set=ps, name="ps.root"))(
                jnp.full(2, hvd.rank()))
            np.testing.assert_array_equal(b, [root, root])
        hvd.barrier()
    finally:
        assert hvd.remove_process_set(ps)


def test_compiled_function_survives_reinit():
    f = jax.jit(lambda x: hvd.allreduce(x, op=hvd.Sum, name="reinit"))
    x = jnp.ones(2, jnp.float32)
    for _ in range(2):
        np.testing.assert_allclose(f(x), np.full(2, hvd.size()))
        hvd.shutdown()
        with pytest.raises(jax.errors.JaxRuntimeError, match="not been initialized"):
            np.asarray(f(x))
        hvd.init()
    np.testing.assert_allclose(f(x), np.full(2, hvd.size()))


def test_eager_grad_runs_eagerly():
    # jax.grad outside jit sees concrete values: no custom call is traced (none is named).
    from hvd.jax import _ffi

    before = dict(_ffi._counts)
    x = jnp.ones((2 * hvd.size(), 2))
    for f in (hvd.allreduce, hvd.allgather, lambda x: hvd.broadcast(x, 0), hvd.alltoall,
              hvd.reducescatter):
        g = jax.grad(lambda x: jnp.sum(f(x) ** 2))(x)
        assert g.shape == x.shape and np.all(np.isfinite(np.asarray(g)))
    assert dict(_ffi._counts) == before
