# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow.keras: horovod.tensorflow.keras's DistributedOptimizer and its basic
callbacks for Keras 3 on the TensorFlow backend (model.fit's train step runs in a
tf.function, where hvd.tensorflow's ops run as graph ops).

    import hvd.tensorflow.keras as hvd
    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())),
                  loss="mse")
    model.fit(x, y, callbacks=[hvd.BroadcastGlobalVariablesCallback(0),
                               hvd.MetricAverageCallback()])
"""

import keras
import tensorflow as tf

from hvd.process_sets import global_process_set
from hvd.tensorflow import (Adasum, Average, Compression, Max, Min, Product, Sum,  # noqa: F401
                            allgather, allreduce, broadcast, broadcast_variables, init,
                            is_initialized, local_rank, local_size, rank, shutdown, size)
from hvd.tensorflow.gradient_tape import _Reducer


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=Average, num_groups=0, groups=None,
                         process_set=global_process_set):
    """A copy of the Keras optimizer whose apply()/apply_gradients() first reduce the
    gradients over the set (Average by default), as DistributedGradientTape does."""
    reducer = _Reducer(compression, sparse_as_dense, op, gradient_predivide_factor,
                       num_groups, groups, process_set)
    base = optimizer.__class__

    def apply(self, grads, trainable_variables=None):
        variables = (list(trainable_variables) if trainable_variables is not None
                     else list(self._trainable_variables))
        return base.apply(self, reducer.reduce(list(grads), variables), trainable_variables)

    cls = type(base.__name__, (base,), {"apply": apply, "_hvd_reducer": reducer})
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    return cls.from_config(config)


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Broadcasts the model's variables from root_rank when training starts, so every rank
    starts from the same weights."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank

    def on_train_begin(self, logs=None):
        broadcast_variables(self.model.variables, root_rank=self.root_rank)


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages the epoch's metrics over the ranks at each epoch's end."""

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        keys = sorted(k for k, v in logs.items() if isinstance(v, (int, float)) or
                      (hasattr(v, "shape") and tuple(v.shape) == ()))
        if not keys:
            return
        values = tf.constant([float(logs[k]) for k in keys], tf.float64)
        averaged = allreduce(values, op=Average, name="metric_average.%d" % epoch).numpy()
        for k, v in zip(keys, averaged):
            logs[k] = float(v)
