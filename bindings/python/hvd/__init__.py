# SPDX-License-Identifier: Apache-2.0
"""hvd: Horovod's distributed-training API over libhvd's C ABI.

    import hvd
    hvd.init()
    total = hvd.allreduce(numpy_array, op=hvd.Sum)

NumPy arrays (and anything numpy.asarray or numpy.from_dlpack accepts) go through every
collective, and so do arrays in CUDA memory (CuPy, or anything exporting
__cuda_array_interface__ or DLPack on a CUDA device); hvd.torch is the drop-in for
horovod.torch. The backend that talks to libhvd is
the pybind11 extension when it was built, else ctypes (HVD_PY_BACKEND=ctypes|pybind forces
one).
"""

from hvd._basics import (Adasum, Average, Max, Min, Product, Sum, backend_name, ccl_built,
                         cross_rank, cross_size, cuda_built, ddl_built, gloo_built,
                         gloo_enabled, init, is_homogeneous, is_initialized, local_rank,
                         local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built,
                         rank, rocm_built, shutdown, size, start_timeline, stop_timeline,
                         version)
from hvd._errors import HorovodInternalError, HostsUpdatedInterrupt
from hvd._objects import allgather_object, broadcast_object
from hvd._runtime import poll, synchronize
from hvd._sync_ops import barrier, join
from hvd.process_sets import (ProcessSet, add_process_set, global_process_set,
                              remove_process_set)

try:
    from hvd._numpy_ops import (allgather, allgather_async, allgather_into,
                                allgather_into_async, allreduce, allreduce_,
                                allreduce_async, allreduce_async_, alltoall, alltoall_async,
                                broadcast, broadcast_, broadcast_async, broadcast_async_,
                                grouped_allgather, grouped_allgather_async, grouped_allreduce,
                                grouped_allreduce_, grouped_allreduce_async,
                                grouped_allreduce_async_, grouped_reducescatter,
                                grouped_reducescatter_async, reducescatter,
                                reducescatter_async, shared_zeros)
except ImportError:  # NumPy missing: the array collectives are unavailable, the rest works
    pass

__version__ = version()
