# SPDX-License-Identifier: Apache-2.0
"""hvd.keras.elastic: horovod.keras.elastic for Keras 3 on every backend: the run decorator,
KerasState and the callbacks that keep it current during model.fit.

    state = hvd.elastic.KerasState(model, batch=0, epoch=0)

    @hvd.elastic.run
    def train(state):
        model.fit(x, y, initial_epoch=state.epoch, epochs=epochs, callbacks=[
            hvd.elastic.UpdateEpochStateCallback(state),
            hvd.elastic.UpdateBatchStateCallback(state),
            hvd.elastic.CommitStateCallback(state, batches_per_commit=10)])

On a failed collective every surviving rank restores its last commit, rejoins the job
(hvd.shutdown() + hvd.init()) and calls train again from rank 0's state, as hvd.torch.elastic.
A failed collective is HorovodInternalError, or the TensorFlow or JAX runtime error of an hvd
op inside Keras's compiled train step.
"""

import keras

from hvd._basics import init, shutdown
from hvd.common.elastic import (ObjectState, State, framework_internal_error,  # noqa: F401
                                run_fn)
from hvd.common.elastic_variables import VariablesState
from hvd.keras.functions import broadcast_variables

__all__ = ["run", "KerasState", "CommitStateCallback", "UpdateBatchStateCallback",
           "UpdateEpochStateCallback", "State", "ObjectState"]


def _reset():
    shutdown()
    init()


def run(func=None, reset_limit=None):
    """Decorator for the elastic training function ``func(state, *args, **kwargs)``, whose
    first argument is a State (e.g. KerasState); as hvd.torch.elastic.run. Usable as ``@run``
    or ``@run(reset_limit=n)``."""
    if func is None:
        return lambda f: run(f, reset_limit=reset_limit)
    return run_fn(func, reset_limit, lambda: _reset(), "hvd.keras.elastic", "KerasState",
                  translate=framework_internal_error)


class KerasState(VariablesState):
    """The state of a Keras model: its variables and its optimizer's (optimizer defaults to
    model.optimizer; one not built yet is built for the model's trainable variables first, so
    every rank holds the same list), committed by value and synchronised from rank 0 with
    hvd.keras.broadcast_variables; keyword arguments become plain Python attributes. backend
    is accepted for Horovod's signature and not used."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer",
                                                                         None)
        self.backend = backend
        super().__init__(lambda vs, root: broadcast_variables(vs, root, name="KerasState"),
                         **kwargs)

    def _variables(self):
        variables = list(self.model.variables)
        optimizer = self.optimizer
        if optimizer is not None:
            if not optimizer.built and self.model.built:
                optimizer.build(self.model.trainable_variables)
            variables += list(optimizer.variables)
        return variables


class CommitStateCallback(keras.callbacks.Callback):
    """Commits the state every batches_per_commit batches and at the end of every epoch."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        if isinstance(batches_per_commit, bool) or not isinstance(batches_per_commit, int) or \
                batches_per_commit < 1:
            raise ValueError("batches_per_commit must be a positive int, got %r"
                             % (batches_per_commit,))
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs=None):
        self.batches_remaining = self.batches_per_commit  # the same count on every rank

    def _commit(self):
        # Keras's `model` property first writes the JAX train loop's state into the variables.
        if self.model is None:
            raise ValueError("CommitStateCallback runs inside model.fit")
        self.state.commit()

    def on_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self._commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self._commit()


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """Keeps state.batch at the index of the last finished batch of the epoch (0 again at
    the end of each epoch)."""

    def __init__(self, state):
        super().__init__()
        self.state = state

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """Keeps state.epoch at the number of epochs finished over all attempts: Keras counts the
    epochs of each fit from initial_epoch, so pass initial_epoch=state.epoch (or count
    from 0 with epochs=total - state.epoch)."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self._first_epoch = None
        self._initial = state.epoch

    def on_train_begin(self, logs=None):
        self._first_epoch = None
        self._initial = self.state.epoch

    def on_epoch_begin(self, epoch, logs=None):
        if self._first_epoch is None:
            self._first_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self._initial + epoch - self._first_epoch + 1
