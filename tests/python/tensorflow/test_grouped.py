# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow's grouped_allgather and grouped_reducescatter, eager and inside tf.function,
against what each rank computes itself, and their gradients."""

import numpy as np
import pytest
import tensorflow as tf

import hvd.tensorflow as hvd
from conftest import run
from test_collectives import MODES, close, reduce_ref, tensor, value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [tf.uint8, tf.int64, tf.float16, tf.bfloat16, tf.float32,
                                   tf.bool])
def test_grouped_allgather_ragged_mixed(mode, dtype):
    """Each tensor of the group gathered, ranks' rows differing, with a float64 tensor of
    another shape in the same group."""
    n, r = hvd.size(), hvd.rank()
    xs = [tensor(r, (r + 1, 3), dtype), tensor(r + 7, (2, 2, 2), tf.float64)]
    outs = run(mode, lambda a, b: hvd.grouped_allgather([a, b]), *xs)
    assert len(outs) == 2
    want = np.concatenate([value(k, (k + 1, 3), dtype) for k in range(n)])
    assert outs[0].dtype == dtype and outs[0].shape == want.shape
    close(outs[0], want, dtype)
    close(outs[1], np.concatenate([value(k + 7, (2, 2, 2), tf.float64) for k in range(n)]),
          tf.float64)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,op", [(tf.float32, "Sum"), (tf.float64, "Average"),
                                      (tf.int32, "Sum"), (tf.bfloat16, "Sum"),
                                      (tf.float16, "Average")])
def test_grouped_reducescatter(mode, dtype, op):
    n, r = hvd.size(), hvd.rank()
    shapes = [(2 * n + 1, 2), (n, 3)]  # the first does not divide: rank 0 gets a row more
    outs = run(mode, lambda a, b: hvd.grouped_reducescatter([a, b], op=getattr(hvd, op)),
               *[tensor(r, s, dtype) for s in shapes])
    for out, shape in zip(outs, shapes):
        d0 = shape[0]
        start = sum(d0 // n + (1 if k < d0 % n else 0) for k in range(r))
        rows = d0 // n + (1 if r < d0 % n else 0)
        assert out.dtype == dtype and out.shape[0] == rows
        close(out, reduce_ref(op, dtype, shape, n)[start:start + rows], dtype)


def test_grouped_reducescatter_scales_and_compression():
    n, r = hvd.size(), hvd.rank()
    x = tensor(r, (n, 2), tf.float32)
    (out,) = hvd.grouped_reducescatter([x], op=hvd.Sum, prescale_factor=2.0,
                                       postscale_factor=0.5, compression=hvd.Compression.fp16)
    assert out.dtype == tf.float32
    close(out, reduce_ref("Sum", tf.float32, (n, 2), n)[r:r + 1], tf.float32)
    assert hvd.grouped_allgather([]) == [] and hvd.grouped_reducescatter([]) == []


@pytest.mark.parametrize("mode", MODES)
def test_grouped_gradients(mode):
    """grouped_allgather's gradient: the cotangents averaged over the ranks, cut to this rank's
    rows; grouped_reducescatter's (Sum): the cotangents gathered, times the set size."""
    n, r = hvd.size(), hvd.rank()
    total = n * (n + 1) // 2
    w = tf.constant(np.arange(total * 2, dtype=np.float64).reshape(total, 2))

    def grads(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            gathered = hvd.grouped_allgather([a])[0]
            scattered = hvd.grouped_reducescatter([b], op=hvd.Sum)[0]
            loss = tf.reduce_sum(gathered * w) + tf.reduce_sum(scattered * (r + 1.0))
        return tape.gradient(loss, [a, b])

    a = tf.constant(np.ones((r + 1, 2)))  # rank k has k + 1 rows
    b = tf.constant(np.ones((n, 2)))
    ga, gb = run(mode, grads, a, b)
    start = r * (r + 1) // 2
    np.testing.assert_allclose(ga.numpy(), w.numpy()[start:start + r + 1])
    # Rank k's row of the reducescatter is weighted by k + 1.
    want_b = np.repeat(np.arange(1.0, n + 1.0)[:, None], 2, axis=1) * n
    np.testing.assert_allclose(gb.numpy(), want_b)
