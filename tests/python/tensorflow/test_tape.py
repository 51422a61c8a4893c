# SPDX-License-Identifier: Apache-2.0
"""DistributedGradientTape: every rank training on its shard of the global batch ends with
the weights of one process training on the whole batch."""

import numpy as np
import pytest
import tensorflow as tf

import hvd.tensorflow as hvd
from conftest import run

STEPS = 4
LR = 0.1


def make_params(seed):
    rng = np.random.default_rng(seed)
    return [tf.Variable(rng.normal(size=(10, 4))),  # embedding rows (sparse gradients)
            tf.Variable(rng.normal(size=(4, 3))), tf.Variable(rng.normal(size=(3,)))]


def global_batch(step):
    rng = np.random.default_rng(100 + step)
    n = 4 * hvd.size()
    return (tf.constant(rng.integers(0, 10, size=n)), tf.constant(rng.normal(size=(n, 3))))


def loss_of(params, ids, y):
    emb, w, b = params
    h = tf.gather(emb, ids)
    return tf.reduce_mean((tf.matmul(h, w) + b - y) ** 2)


def train(params, shard, mode, tape_args, lr=LR):
    """STEPS of SGD on shard(global batch); tape_args None: a plain tf.GradientTape."""
    def step(ids, y):
        with tf.GradientTape() as tape:
            loss = loss_of(params, ids, y)
        if tape_args is not None:
            tape = hvd.DistributedGradientTape(tape, **tape_args)
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            if isinstance(g, tf.IndexedSlices):
                p.scatter_sub(tf.IndexedSlices(lr * g.values, g.indices))
            else:
                p.assign_sub(lr * g)
        return loss

    fn = tf.function(step) if mode == "function" else step
    for s in range(STEPS):
        ids, y = global_batch(s)
        fn(*shard(ids, y))


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("tape_args", [
    {},
    {"sparse_as_dense": True, "num_groups": 2},
    {"gradient_predivide_factor": 2.0},
    {"op": hvd.Sum, "groups": "by-variable"},
], ids=["default", "dense-groups", "predivide", "sum-groups"])
def test_matches_one_process_on_global_batch(mode, tape_args):
    tape_args = dict(tape_args)
    params = make_params(seed=hvd.rank())  # different on each rank until broadcast
    hvd.broadcast_variables(params, root_rank=0)
    if tape_args.get("groups") == "by-variable":
        tape_args["groups"] = [[params[0]], [params[1], params[2]]]
    n, r = hvd.size(), hvd.rank()
    rows = 4

    def mine(ids, y):
        return ids[r * rows:(r + 1) * rows], y[r * rows:(r + 1) * rows]

    train(params, mine, mode, tape_args)
    # Sum: each rank's gradient is of its shard's mean loss, so the sum is n times the
    # gradient of the global batch's mean loss.
    reference = make_params(seed=0)
    train(reference, lambda ids, y: (ids, y), "eager", None,
          lr=LR * n if tape_args.get("op") == hvd.Sum else LR)
    for got, want in zip(params, reference):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-5)


def test_argument_errors():
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd.DistributedGradientTape(tf.GradientTape(), op=hvd.Sum, gradient_predivide_factor=2.0)
    with pytest.raises(ValueError, match="groups"):
        hvd.DistributedGradientTape(tf.GradientTape(), num_groups=2, groups=[[]])
