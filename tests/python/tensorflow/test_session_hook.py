# SPDX-License-Identifier: Apache-2.0
"""BroadcastGlobalVariablesHook in a TensorFlow 1-style graph under MonitoredTrainingSession:
every rank ends with root's values of every global variable, of several dtypes, for each
root; broadcast_global_variables refuses eager execution."""

import numpy as np
import pytest
import tensorflow as tf

import hvd.tensorflow as hvd


@pytest.mark.parametrize("root", [0, 1])
def test_hook_broadcasts_global_variables(root):
    root = root % hvd.size()
    with tf.Graph().as_default():
        a = tf.compat.v1.Variable(np.full((3, 2), hvd.rank() + 1.5, np.float32), name="a")
        b = tf.compat.v1.Variable(np.arange(4, dtype=np.int64) * (hvd.rank() + 7), name="b")
        c = tf.compat.v1.Variable(np.float64(hvd.rank() * 10.25), name="c")
        hook = hvd.BroadcastGlobalVariablesHook(root)
        with tf.compat.v1.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            va, vb, vc = sess.run([a, b, c])
    np.testing.assert_array_equal(va, np.full((3, 2), root + 1.5, np.float32))
    np.testing.assert_array_equal(vb, np.arange(4, dtype=np.int64) * (root + 7))
    assert vc == root * 10.25


def test_broadcast_global_variables_refuses_eager():
    with pytest.raises(RuntimeError, match="eager"):
        hvd.broadcast_global_variables(0)
