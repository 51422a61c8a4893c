# SPDX-License-Identifier: Apache-2.0
"""horovod.keras.callbacks for Keras 3: broadcast of the initial state, metric averaging,
learning-rate warmup and schedules, and the best model's checkpoint written by rank 0.

They run between Keras's steps, eagerly, through hvd's NumPy path, so they work on every
Keras backend. They reach the model through `self.model`, which on the JAX backend first
writes the train loop's state back into the variables (and makes the loop read them again).
"""

import keras
import numpy as np

from hvd import _basics, _numpy_ops
from hvd.keras.functions import broadcast_variables


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Broadcasts the model's variables and its optimizer's from root_rank to every rank when
    training starts, so that all ranks start from the same state (random initial weights, or
    a checkpoint one rank restored). An optimizer not built yet (Keras's TensorFlow backend
    builds it in the first traced step) is built here first; only a model not built yet
    either (no input shape known before the first batch) is broadcast after the first batch
    instead, as Horovod does. local_variables: variables left as they are on each rank."""

    def __init__(self, root_rank, device="", local_variables=None):
        super().__init__()
        del device  # hvd.keras's callbacks run on host memory
        self.root_rank = root_rank
        self.broadcast_done = False
        if local_variables is None:
            local_variables = []
        elif isinstance(local_variables, keras.Variable):
            local_variables = [local_variables]
        elif not all(isinstance(v, keras.Variable) for v in local_variables):
            raise ValueError("All local variables must be of keras.Variable type.")
        self._local_vars = {id(v) for v in local_variables}

    def register_local_var(self, var):
        """Leaves var out of the broadcast."""
        self._local_vars.add(id(var))

    def _broadcast(self):
        model = self.model
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None and not optimizer.built:
            if not model.built:
                return
            optimizer.build(model.trainable_variables)
        variables = [v for v in model.variables if id(v) not in self._local_vars]
        if optimizer is not None:
            variables += [v for v in optimizer.variables if id(v) not in self._local_vars]
        broadcast_variables(variables, self.root_rank, name="BroadcastGlobalVariablesCallback")
        self.broadcast_done = True

    def on_train_begin(self, logs=None):
        if not self.broadcast_done:
            self._broadcast()

    def on_batch_end(self, batch, logs=None):
        if not self.broadcast_done:
            self._broadcast()


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages the epoch's logs (every metric, validation ones included) over the ranks at
    the end of each epoch, in place, so that callbacks after it (ReduceLROnPlateau,
    EarlyStopping, TensorBoard, checkpoints...) see the job's values. Put it before them."""

    def __init__(self, device=""):
        super().__init__()
        del device

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        names = sorted(logs)
        values = np.array([float(np.asarray(keras.ops.convert_to_numpy(logs[k])))
                           for k in names], dtype=np.float64)
        averaged = _numpy_ops.allreduce(values, name="MetricAverageCallback",
                                        op=_basics.Average)
        for k, v in zip(names, averaged):
            logs[k] = float(v)


def _lr(optimizer):
    lr = optimizer.learning_rate
    return float(keras.ops.convert_to_numpy(getattr(lr, "value", lr)))


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to initial_lr * multiplier between start_epoch and end_epoch
    (exclusive). multiplier is a constant (then the rate is initial_lr *
    multiplier ** (epoch - start_epoch)) or a function of the epoch. With staircase the rate
    changes at the start of each epoch with an integer epoch; without, at every batch with
    epoch + batch / steps_per_epoch (steps_per_epoch found from model.fit's when not given).

    momentum_correction: when the rate changes from lr to lr', SGD's momentum buffers are
    scaled by lr'/lr, which is what Horovod's correction (the momentum scaled by lr'/lr for
    that one step) amounts to for Keras's SGD (exactly without Nesterov). Optimizers without
    momentum buffers are left as they are."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        if not callable(multiplier):
            factor = multiplier
            self.multiplier = lambda epoch: factor ** (epoch - start_epoch)
        else:
            self.multiplier = multiplier

    def _autodetect_steps_per_epoch(self):
        if self.params.get("steps"):
            return self.params["steps"]
        raise ValueError("Could not autodetect the number of steps per epoch. Please specify "
                         "the steps_per_epoch parameter to the %s()." % self.__class__.__name__)

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        old_lr = _lr(optimizer)
        new_lr = self.initial_lr * self.multiplier(epoch)
        optimizer.learning_rate = new_lr
        if self.momentum_correction and old_lr > 0 and new_lr != old_lr:
            for m in getattr(optimizer, "momentums", None) or []:
                if m is not None:
                    m.assign(keras.ops.multiply(m.value, new_lr / old_lr))

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_batch_begin(self, batch, logs=None):
        if (self.current_epoch < self.start_epoch
                or (self.end_epoch is not None and self.current_epoch >= self.end_epoch)):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _lr(self.model.optimizer)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Gradual warmup (Goyal et al., "Accurate, Large Minibatch SGD"): the rate goes from
    initial_lr / size to initial_lr over warmup_epochs, batch by batch:

        lr(epoch) = initial_lr / size * (epoch * (size - 1) / warmup_epochs + 1)

    with epoch = full epochs + (batch + 1) / steps_per_epoch, so it reaches initial_lr at the
    last batch of the warmup. verbose=1 makes rank 0 print when the warmup ends."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            epoch += 1.0 / self.steps_per_epoch
            n = _basics.size()
            return 1.0 / n * (epoch * (n - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and _basics.rank() == 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g."
                  % (epoch + 1, _lr(self.model.optimizer)))


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """keras.callbacks.ModelCheckpoint with save_best_only on rank 0 only: the model (or its
    weights, with save_weights_only) is written to filepath whenever `monitor` improves.
    filepath is required on Keras 3 (it ends in .keras, or .weights.h5 with
    save_weights_only); the other ranks write nothing."""

    def __init__(self, monitor="val_loss", verbose=0, mode="auto", save_freq="epoch",
                 filepath=None, save_weights_only=False):
        if filepath is None:
            raise ValueError("BestModelCheckpoint needs filepath (a .keras file, or a "
                             ".weights.h5 file with save_weights_only)")
        super().__init__(filepath, monitor=monitor, verbose=verbose, save_best_only=True,
                         save_weights_only=save_weights_only, mode=mode, save_freq=save_freq)

    def on_train_batch_end(self, batch, logs=None):
        if _basics.rank() == 0:
            super().on_train_batch_end(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if _basics.rank() == 0:
            super().on_epoch_end(epoch, logs)
