# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow's gradients against central differences, its errors on every rank, and
re-init cycles.

Each rank's loss is L_r = sum(w_r * op(x)) with weights of its own. Horovod's gradients are
those of the sum of the ranks' losses for allreduce and alltoall, the set size times that for
reducescatter, and those of their mean for allgather and broadcast (whose gradients average
over the ranks); the central
differences perturb one element of one rank's input at a time, every rank evaluating that
objective together."""

import numpy as np
import pytest
import tensorflow as tf

import hvd.tensorflow as hvd
from conftest import run

MODES = ["eager", "function"]
EPS = 1e-6


def weights(shape):
    n = tf.reduce_prod(shape)
    return tf.reshape(tf.cos(tf.cast(tf.range(n), tf.float64) + 0.7 * hvd.rank()), shape)


def local_loss(op, x):
    y = op(x)
    return tf.reduce_sum(weights(tf.shape(y)) * y)


def numeric_grad(op, x, mean):
    """This rank's share of d objective / dx by central differences."""
    sizes = hvd.allgather_object(int(np.prod(x.shape)))
    flat = x.numpy().ravel()
    mine = np.zeros_like(flat)
    reduce_op = hvd.Average if mean else hvd.Sum
    for k, count in enumerate(sizes):
        for j in range(count):
            values = []
            for sign in (1.0, -1.0):
                bumped = flat.copy()
                if hvd.rank() == k:
                    bumped[j] += sign * EPS
                xb = tf.constant(bumped.reshape(x.shape))
                values.append(float(hvd.allreduce(local_loss(op, xb), op=reduce_op)))
            if hvd.rank() == k:
                mine[j] = (values[0] - values[1]) / (2 * EPS)
    return mine.reshape(x.shape)


def tape_grad(mode, op, x):
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = local_loss(op, x)
        return tape.gradient(loss, x)

    return run(mode, grad, x).numpy()


def check(mode, op, x, mean=False, factor=1.0):
    np.testing.assert_allclose(tape_grad(mode, op, x), numeric_grad(op, x, mean) * factor,
                               rtol=1e-5, atol=1e-6)


def rank_input(rows, cols=2):
    r = hvd.rank()
    return tf.constant(np.sin(np.arange(rows * cols).reshape(rows, cols) + 1.3 * r + 0.2))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_allreduce_grad(mode, op):
    check(mode, lambda x: hvd.allreduce(x, op=getattr(hvd, op), prescale_factor=0.5,
                                        postscale_factor=3.0), rank_input(2))


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_grad(mode):
    check(mode, lambda x: tf.add_n(hvd.grouped_allreduce([x, 2 * x], op=hvd.Sum)),
          rank_input(2))


@pytest.mark.parametrize("mode", MODES)
def test_allgather_grad(mode):
    check(mode, hvd.allgather, rank_input(hvd.rank() + 1), mean=True)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_grad(mode):
    check(mode, lambda x: hvd.broadcast(x, root_rank=hvd.size() - 1), rank_input(2), mean=True)


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_grad(mode):
    n, r = hvd.size(), hvd.rank()
    splits = [(r + j) % 2 + 1 for j in range(n)]
    check(mode, lambda x: hvd.alltoall(x, splits=splits)[0], rank_input(sum(splits)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_reducescatter_grad(mode, op):
    check(mode, lambda x: hvd.reducescatter(x, op=getattr(hvd, op), prescale_factor=2.0),
          rank_input(hvd.size() + 1), factor=hvd.size())


@pytest.mark.parametrize("mode", MODES)
def test_mismatch_raises_on_every_rank_then_next_op_works(mode):
    x = tf.ones([hvd.rank() + 2])
    with pytest.raises(tf.errors.FailedPreconditionError, match="HVD_ERR_MISMATCH"):
        run(mode, lambda x: hvd.allreduce(x, name="mismatch"), x)
    out = run(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, name="after"), tf.ones([3]))
    np.testing.assert_array_equal(out.numpy(), [hvd.size()] * 3)


def test_caller_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="HVD_ERR_INVALID_ARG"):
        hvd.alltoall(tf.ones([4]), splits=tf.constant([1] * (hvd.size() + 1)))
    with pytest.raises(ValueError):
        hvd.broadcast(tf.ones([1]), root_rank=hvd.size())
    with pytest.raises(ValueError):
        hvd.reducescatter(tf.ones([2]), op=hvd.Max)


def test_reinit_keeps_traced_functions_working():
    @tf.function
    def step(x):
        return hvd.allreduce(x, op=hvd.Sum)

    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(step(x).numpy(), [hvd.size(), 2.0 * hvd.size()])
    for _ in range(2):
        hvd.shutdown()
        with pytest.raises(ValueError, match="not been initialized"):
            hvd.allreduce(x)
        with pytest.raises(tf.errors.FailedPreconditionError, match="HVD_ERR_NOT_READY"):
            step(x)  # the traced function, without a job
        hvd.init()
        np.testing.assert_array_equal(step(x).numpy(), [hvd.size(), 2.0 * hvd.size()])
