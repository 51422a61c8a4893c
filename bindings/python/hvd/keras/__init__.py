# SPDX-License-Identifier: Apache-2.0
"""hvd.keras: horovod.keras's API for Keras 3, on its JAX backend (through hvd.jax, inside
the jax.jit of Keras's train step), its torch backend (through hvd.torch) and its TensorFlow
backend (through hvd.tensorflow's ops, inside the tf.function of Keras's train step;
hvd.tensorflow.keras is the same API with horovod.tensorflow.keras's optimizer options).

    import hvd.keras as hvd
    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())),
                  loss=...)
    model.fit(x, y, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                               hvd.callbacks.MetricAverageCallback()])
"""

from hvd._basics import (Adasum, Average, Sum, ccl_built, cross_rank,  # noqa: F401
                         cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
                         is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
                         mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size,
                         start_timeline, stop_timeline)
from hvd._errors import HorovodInternalError  # noqa: F401
from hvd._objects import allgather_object, broadcast_object  # noqa: F401
from hvd._sync_ops import barrier, join  # noqa: F401
from hvd.process_sets import (ProcessSet, add_process_set, global_process_set,  # noqa: F401
                              remove_process_set)
from hvd.keras import callbacks, elastic  # noqa: F401
from hvd.keras.compression import Compression  # noqa: F401
from hvd.keras.functions import (allgather, allreduce, broadcast,  # noqa: F401
                                 broadcast_variables, load_model, reducescatter)
from hvd.keras.optimizer import DistributedOptimizer  # noqa: F401
