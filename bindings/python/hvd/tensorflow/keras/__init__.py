# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow.keras: horovod.tensorflow.keras for Keras 3 on the TensorFlow backend
(model.fit's train step runs in a tf.function, where hvd.tensorflow's ops run as graph ops):
DistributedOptimizer, load_model and the callbacks (hvd.tensorflow.keras.callbacks).

    import hvd.tensorflow.keras as hvd
    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())),
                  loss="mse")
    model.fit(x, y, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                               hvd.callbacks.MetricAverageCallback()])

The optimizer wrapper, load_model and the callbacks are hvd.keras's: the wrapped optimizer's
gradients go through DistributedGradientTape's reduction (IndexedSlices allgathered unless
sparse_as_dense, Adasum, num_groups / groups).
"""

import keras

from hvd.process_sets import (ProcessSet, add_process_set, global_process_set,  # noqa: F401
                              remove_process_set)
from hvd.keras import functions as _keras_functions
from hvd.keras import optimizer as _keras_optimizer
from hvd.tensorflow import (Adasum, Average, Compression, Max, Min, Product, Sum,  # noqa: F401
                            allgather, allreduce, broadcast, broadcast_variables, ccl_built,
                            cross_rank, cross_size, cuda_built, ddl_built, gloo_built,
                            gloo_enabled, init, is_initialized, local_rank, local_size,
                            mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank,
                            reducescatter, rocm_built, shutdown, size, start_timeline,
                            stop_timeline)
from hvd.tensorflow.gradient_tape import _Reducer
from hvd.tensorflow.keras import callbacks, elastic  # noqa: F401
from hvd.tensorflow.keras.callbacks import (BroadcastGlobalVariablesCallback,  # noqa: F401
                                            MetricAverageCallback)


def _settings(base, name=None, compression=Compression.none, sparse_as_dense=False,
              gradient_predivide_factor=1.0, op=Average, backward_passes_per_step=1,
              average_aggregated_gradients=False, num_groups=0, groups=None,
              process_set=global_process_set):
    _keras_optimizer.check_passes(backward_passes_per_step)
    if isinstance(groups, int) and not isinstance(groups, bool):
        num_groups, groups = groups, None
    reducer = _Reducer(compression, sparse_as_dense, op, gradient_predivide_factor, num_groups,
                       groups, process_set)
    return _keras_optimizer._Settings(
        name or "Distributed%s" % base.__name__, compression, op, gradient_predivide_factor,
        groups, backward_passes_per_step, bool(average_aggregated_gradients), process_set,
        reduce=reducer.reduce)


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set):
    """A new optimizer of optimizer's class and config (its state is not copied, as in
    Horovod) whose apply()/apply_gradients() first reduce the gradients over process_set as
    DistributedGradientTape does (Average by default; Sum, Adasum; compression,
    gradient_predivide_factor, sparse_as_dense, num_groups / groups).
    backward_passes_per_step k sums k passes' gradients locally before one reduction (their
    mean with average_aggregated_gradients). A model saved with it loads without hvd too."""
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise ValueError("hvd.tensorflow.keras.DistributedOptimizer wraps a "
                         "keras.optimizers.Optimizer, got %r" % (optimizer,))
    base = type(optimizer)
    if _keras_optimizer.is_distributed(optimizer):
        base = base.__mro__[2]
    settings = _settings(base, name, compression, sparse_as_dense, gradient_predivide_factor,
                         op, backward_passes_per_step, average_aggregated_gradients,
                         num_groups, groups, process_set)
    return _keras_optimizer.wrap_class(base, settings).from_config(optimizer.get_config())


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none):
    """keras.models.load_model(filepath) with the model's optimizer wrapped in
    DistributedOptimizer (with compression), its state (iterations, slots, learning rate)
    kept. custom_optimizers: optimizer classes the saved model may use beyond Keras's own;
    custom_objects: passed to Keras."""
    return _keras_functions.load_wrapped(filepath, custom_optimizers, custom_objects,
                                         lambda base: _settings(base, compression=compression))
