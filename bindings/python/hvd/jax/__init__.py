# SPDX-License-Identifier: Apache-2.0
"""hvd.jax: Horovod's collectives on jax.Arrays, eagerly and inside jax.jit (XLA FFI custom
calls into libhvd's C ABI, nothing compiled against a JAX release's C++), with gradients,
an optax wrapper that averages gradients across ranks, and broadcast_parameters.

    import hvd.jax as hvd
    hvd.init()
    params = hvd.broadcast_parameters(params, root_rank=0)
    tx = hvd.DistributedOptimizer(optax.sgd(0.1))
"""

from hvd._errors import HorovodInternalError  # noqa: F401
from hvd.jax.mpi_ops import (Adasum, Average, Max, Min, Product, ProcessSet, Sum,  # noqa: F401
                             add_process_set, allgather, allgather_object, allreduce, alltoall,
                             barrier, broadcast, broadcast_object, cross_rank, cross_size,
                             global_process_set, grouped_allreduce, init, is_initialized, join,
                             local_rank, local_size, rank, reducescatter, remove_process_set,
                             shutdown, size, start_timeline, stop_timeline)
from hvd.jax.functions import broadcast_parameters  # noqa: F401
from hvd.jax.grouped_ops import grouped_allgather, grouped_reducescatter  # noqa: F401
from hvd.jax.optimizer import DistributedOptimizer  # noqa: F401
