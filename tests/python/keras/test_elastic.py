# SPDX-License-Identifier: Apache-2.0
"""hvd.keras.elastic (and hvd.tensorflow.keras.elastic) on the backend under test: KerasState
commits, restores and synchronises the model's and optimizer's variables by value; the
callbacks keep state.epoch and state.batch current and commit at their points; run rolls
back when a collective fails inside a compiled step. The test that resets comes last."""

import numpy as np
import pytest

import keras
from conftest import hvd_keras, make_model, regression_data


def _compiled(seed):
    model = make_model(seed)
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
    return model


def _values(model):
    return [np.array(v.numpy()) for v in model.variables + model.optimizer.variables]


def test_keras_state_sync_commit_restore():
    model = _compiled(7 + hvd_keras.rank())
    state = hvd_keras.elastic.KerasState(model, epoch=hvd_keras.rank())
    assert model.optimizer.built  # built by the state, so every rank lists the same variables
    state.sync()
    reference = _compiled(7)
    reference.optimizer.build(reference.trainable_variables)
    for got, want in zip(_values(model), _values(reference)):
        np.testing.assert_array_equal(got, want)
    assert state.epoch == 0

    x, y = regression_data(8, hvd_keras.rank())
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    committed = _values(model)
    state.epoch = 1
    state.commit()
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    state.epoch = 2
    assert any(not np.array_equal(a, b) for a, b in zip(_values(model), committed))
    state.restore()
    for got, want in zip(_values(model), committed):
        np.testing.assert_array_equal(got, want)
    assert state.epoch == 1


def test_callbacks_keep_the_state():
    model = _compiled(3)
    state = hvd_keras.elastic.KerasState(model, batch=0, epoch=2)
    commits = []
    real_commit = state.commit

    def counting_commit():
        commits.append((state.epoch, state.batch))
        real_commit()

    state.commit = counting_commit
    x, y = regression_data(8, 5)
    # Keras runs the callbacks in list order: the state is updated before the commit.
    model.fit(x, y, batch_size=2, initial_epoch=2, epochs=4, verbose=0, shuffle=False,
              callbacks=[hvd_keras.elastic.UpdateEpochStateCallback(state),
                         hvd_keras.elastic.UpdateBatchStateCallback(state),
                         hvd_keras.elastic.CommitStateCallback(state, batches_per_commit=3)])
    # 4 batches an epoch: a commit after batch index 2 and one at each epoch's end; the
    # count of batches runs on over epochs.
    assert commits == [(2, 2), (3, 0), (3, 1), (4, 0)]
    assert (state.epoch, state.batch) == (4, 0)
    with pytest.raises(ValueError, match="batches_per_commit"):
        hvd_keras.elastic.CommitStateCallback(state, batches_per_commit=0)


def _failing_compiled_op():
    """A collective that fails on every rank (the shapes disagree), compiled as Keras's train
    step is on the backend under test."""
    x = np.zeros(1 + hvd_keras.rank(), np.float32)
    if keras.backend.backend() == "jax":
        import jax
        import hvd.jax
        jax.jit(lambda a: hvd.jax.allreduce(a, name="elastic.mismatch"))(x).block_until_ready()
    elif keras.backend.backend() == "tensorflow":
        import tensorflow as tf
        import hvd.tensorflow
        tf.function(lambda a: hvd.tensorflow.allreduce(a, name="elastic.mismatch"))(x)
    else:
        hvd_keras.allreduce(x, name="elastic.mismatch")


def test_run_recovers_from_a_failed_compiled_op():
    model = _compiled(11 + hvd_keras.rank())
    state = hvd_keras.elastic.KerasState(model, epoch=0)
    attempts = []

    @hvd_keras.elastic.run
    def train(state):
        attempts.append(state.epoch)
        if len(attempts) == 1:
            state.epoch = 1
            state.commit()
            state.epoch = 2
            model.layers[0].kernel.assign(np.zeros(model.layers[0].kernel.shape))
            _failing_compiled_op()
            raise AssertionError("the mismatched allreduce did not fail")
        return state.epoch

    assert train(state) == 1
    assert attempts == [0, 1]
    for got, want in zip(model.get_weights(), _compiled(11).get_weights()):
        np.testing.assert_array_equal(got, want)
