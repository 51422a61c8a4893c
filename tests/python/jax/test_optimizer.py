# SPDX-License-Identifier: Apache-2.0
"""hvd.jax.DistributedOptimizer and broadcast_parameters: training on shards of a global
batch gives the parameters one process gets on the whole batch."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import hvd.jax as hvd

STEPS = 6


def init_params(seed):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return {"hidden": {"w": jax.random.normal(k1, (5, 8), jnp.float32) * 0.3,
                       "b": jnp.zeros(8, jnp.float32)},
            "out": [jax.random.normal(k2, (8, 1), jnp.float32) * 0.3]}


def loss(params, x, y):
    h = jnp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return jnp.mean((h @ params["out"][0] - y) ** 2)


def global_batch(step, n):
    rng = np.random.default_rng(100 + step)
    x = rng.normal(size=(4 * n, 5)).astype(np.float32)
    return x, (np.sin(x.sum(axis=1, keepdims=True))).astype(np.float32)


def shard(a, n, r):
    rows = len(a) // n
    return a[r * rows:(r + 1) * rows]


def reference(params, tx, n):
    """One process training on the whole global batch."""
    state = tx.init(params)
    for step in range(STEPS):
        x, y = global_batch(step, n)
        grads = jax.grad(loss)(params, x, y)
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params


def assert_trees_close(a, b, tol=1e-5):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("make_tx", [lambda: optax.sgd(0.1, momentum=0.9),
                                     lambda: optax.adam(1e-2)], ids=["sgd", "adam"])
def test_matches_one_process_on_global_batch(mode, make_tx):
    n, r = hvd.size(), hvd.rank()
    params = hvd.broadcast_parameters(init_params(seed=r), root_rank=0)
    assert_trees_close(params, init_params(seed=0), tol=0)
    tx = hvd.DistributedOptimizer(make_tx())
    state = tx.init(params)

    def step_fn(params, state, x, y):
        grads = jax.grad(loss)(params, x, y)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    if mode == "jit":
        step_fn = jax.jit(step_fn)
    for step in range(STEPS):
        x, y = global_batch(step, n)
        params, state = step_fn(params, state, shard(x, n, r), shard(y, n, r))
    assert_trees_close(params, reference(init_params(seed=0), make_tx(), n))


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_backward_passes_per_step(mode):
    # Two micro-batches per step, each loss scaled by 1/2 (Horovod sums the local passes):
    # the mean gradient over the global batch again.
    n, r = hvd.size(), hvd.rank()
    params = init_params(seed=0)
    tx = hvd.DistributedOptimizer(optax.sgd(0.1), backward_passes_per_step=2)
    state = tx.init(params)

    def pass_fn(params, state, x, y):
        grads = jax.grad(lambda p: loss(p, x, y) / 2)(params)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    if mode == "jit":
        pass_fn = jax.jit(pass_fn)
    for step in range(STEPS):
        x, y = global_batch(step, n)
        xs, ys = shard(x, n, r), shard(y, n, r)
        half = len(xs) // 2
        held = params
        params, state = pass_fn(params, state, xs[:half], ys[:half])
        assert_trees_close(params, held, tol=0)  # the first pass only accumulates
        params, state = pass_fn(params, state, xs[half:], ys[half:])
    assert_trees_close(params, reference(init_params(seed=0), optax.sgd(0.1), n))


def test_broadcast_parameters_under_jit_and_roots():
    r = hvd.rank()
    tree = {"a": jnp.full((2, 2), r, jnp.float32), "b": (jnp.arange(3) * r, jnp.int8(r))}
    for root in range(hvd.size()):
        out = jax.jit(lambda t: hvd.broadcast_parameters(t, root_rank=root))(tree)
        np.testing.assert_array_equal(out["a"], np.full((2, 2), root))
        np.testing.assert_array_equal(out["b"][0], np.arange(3) * root)
        assert out["b"][1] == root and out["b"][1].dtype == jnp.int8


def test_argument_errors():
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(optax.sgd(0.1), backward_passes_per_step=0)
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(optax.sgd(0.1), op=hvd.Sum, gradient_predivide_factor=2.0)
    with pytest.raises(ValueError):
        hvd.broadcast_parameters({"a": jnp.ones(1)}, root_rank=hvd.size())
