# SPDX-License-Identifier: Apache-2.0
"""hvd.torch: horovod.torch's API on libhvd. Change `import horovod.torch as hvd` to
`import hvd.torch as hvd`; nothing here is compiled against PyTorch."""

from hvd._errors import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from hvd.torch.compression import Compression  # noqa: F401
from hvd.torch.mpi_ops import (Adasum, Average, Max, Min, Product, ProcessSet, Sum,  # noqa: F401
                               add_process_set, allgather, allgather_async, allgather_object,
                               allreduce, allreduce_, allreduce_async, allreduce_async_,
                               alltoall, alltoall_async, barrier, broadcast, broadcast_,
                               broadcast_async, broadcast_async_, broadcast_object, ccl_built,
                               cross_rank, cross_size, cuda_built, ddl_built, gloo_built,
                               gloo_enabled, global_process_set, grouped_allgather,
                               grouped_allgather_async, grouped_allreduce, grouped_allreduce_,
                               grouped_allreduce_async, grouped_allreduce_async_,
                               grouped_reducescatter, grouped_reducescatter_async, init,
                               is_homogeneous, is_initialized, join, local_rank, local_size,
                               mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, poll,
                               rank, reducescatter, reducescatter_async, remove_process_set,
                               rocm_built, shutdown, size, sparse_allreduce_async,
                               start_timeline, stop_timeline, synchronize)
from hvd.torch.optimizer import DistributedOptimizer  # noqa: F401
from hvd.torch import elastic  # noqa: F401
from hvd.torch.functions import (broadcast_optimizer_state,  # noqa: F401
                                 broadcast_parameters)
from hvd.torch.shared_memory import shared_zeros  # noqa: F401
from hvd.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401
