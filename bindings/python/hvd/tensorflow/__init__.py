# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow: horovod.tensorflow's API on libhvd. Change `import horovod.tensorflow as
hvd` to `import hvd.tensorflow as hvd`. The collectives are TensorFlow ops (eager and inside
tf.function, differentiable) from a small library built against TensorFlow's stable C
kernel API and linked only to libhvd's C ABI.

    import hvd.tensorflow as hvd
    hvd.init()
    hvd.broadcast_variables(model.variables, root_rank=0)
    with tf.GradientTape() as tape:
        loss = ...
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
"""

from hvd._errors import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from hvd.tensorflow.compression import Compression  # noqa: F401
from hvd.tensorflow.gradient_tape import DistributedGradientTape  # noqa: F401
from hvd.tensorflow.functions import (allgather_object, allreduce, broadcast_,  # noqa: F401
                                      broadcast_object, broadcast_variables,
                                      grouped_allreduce)
from hvd.tensorflow.mpi_ops import (Adasum, Average, Max, Min, Product, ProcessSet,  # noqa: F401
                                    Sum, add_process_set, allgather, alltoall, barrier,
                                    broadcast, ccl_built, cross_rank, cross_size, cuda_built,
                                    ddl_built, gloo_built, gloo_enabled, global_process_set,
                                    grouped_allgather, grouped_reducescatter, init,
                                    is_homogeneous, is_initialized, join, local_rank,
                                    local_rank_op, local_size, local_size_op, mpi_built,
                                    mpi_enabled, mpi_threads_supported, nccl_built, rank,
                                    rank_op, reducescatter, remove_process_set, rocm_built,
                                    shutdown, size, size_op, start_timeline, stop_timeline)
from hvd.tensorflow import elastic  # noqa: F401
from hvd.tensorflow.hooks import (BroadcastGlobalVariablesHook,  # noqa: F401
                                  broadcast_global_variables)
