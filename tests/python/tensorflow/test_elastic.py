# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow.elastic: TensorFlowState commits, restores and synchronises by value,
TensorFlowKerasState synchronises the model; run rolls back to the last commit when an
hvd.tensorflow op fails. The tests that reset (shutdown + init inside run) come last."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hvd.tensorflow as hvd


def _ref(rank):
    return np.arange(6, dtype=np.float64).reshape(2, 3) + 10.0 * rank


def test_tensorflow_state_sync_commit_restore():
    v = tf.Variable(_ref(hvd.rank()))
    w = tf.Variable(np.full(4, hvd.rank(), np.float32))
    state = hvd.elastic.TensorFlowState([v, w], batch=hvd.rank(), note="r%d" % hvd.rank())
    state.sync()
    np.testing.assert_array_equal(v.numpy(), _ref(0))
    np.testing.assert_array_equal(w.numpy(), np.zeros(4, np.float32))
    assert (state.batch, state.note) == (0, "r0")

    v.assign_add(np.ones((2, 3)))
    state.batch = 7
    state.commit()
    v.assign_add(100.0 * np.ones((2, 3)))
    w.assign(np.full(4, 5.0, np.float32))
    state.batch = 9
    state.restore()
    np.testing.assert_array_equal(v.numpy(), _ref(0) + 1)
    np.testing.assert_array_equal(w.numpy(), np.zeros(4, np.float32))
    assert state.batch == 7
    # The commit holds values, not the variables: later assignments leave it as it was.
    v.assign_add(np.full((2, 3), 3.0))
    state.restore()
    np.testing.assert_array_equal(v.numpy(), _ref(0) + 1)


def test_tensorflow_state_sync_commits_rank0s_values():
    v = tf.Variable(_ref(hvd.rank()))
    state = hvd.elastic.TensorFlowState([v])
    state.sync()
    v.assign(np.zeros((2, 3)))
    state.restore()
    np.testing.assert_array_equal(v.numpy(), _ref(0))


def test_tensorflow_state_arguments():
    with pytest.raises(ValueError, match="sessions"):
        hvd.elastic.TensorFlowState([tf.Variable(1.0)], session=object())
    with pytest.raises(ValueError, match="needs the variables"):
        hvd.elastic.TensorFlowState()


def test_tensorflow_keras_state_syncs_rank0s_model():
    # KerasState's own tests run in tests/python/keras on every Keras backend.
    keras.utils.set_random_seed(7 + hvd.rank())
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    state = hvd.elastic.TensorFlowKerasState(model, epoch=hvd.rank())
    state.sync()
    keras.utils.set_random_seed(7)
    reference = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(got, want)
    assert state.epoch == 0


def test_run_passes_other_errors_through():
    calls = []

    @hvd.elastic.run
    def train(state):
        calls.append(1)
        raise KeyError("not a collective")

    with pytest.raises(KeyError):
        train(hvd.elastic.TensorFlowState([tf.Variable(1.0)]))
    assert calls == [1]


def test_run_recovers_from_a_failed_op():
    v = tf.Variable(_ref(hvd.rank()))
    state = hvd.elastic.TensorFlowState([v], epoch=0)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(hvd.is_initialized())])
    attempts = []

    @hvd.elastic.run
    def train(state):
        attempts.append(state.epoch)
        if len(attempts) == 1:
            v.assign_add(np.ones((2, 3)))
            state.epoch = 1
            state.commit()
            # Uncommitted progress, then an op that fails on every rank (the shapes
            # disagree): run rolls back to the commit and starts over.
            v.assign_add(np.ones((2, 3)))
            state.epoch = 2
            hvd.allreduce(tf.zeros(1 + hvd.rank()), name="elastic.mismatch")
            raise AssertionError("the mismatched allreduce did not fail")
        return v.numpy(), state.epoch

    value, epoch = train(state)
    assert attempts == [0, 1]
    assert resets == [True]
    assert epoch == 1
    np.testing.assert_array_equal(value, _ref(0) + 1)
    assert hvd.allreduce(tf.ones(1), op=hvd.Sum).numpy()[0] == hvd.size()
