# SPDX-License-Identifier: Apache-2.0
"""Horovod's basic API (init, shutdown, topology, timeline, capability queries), shared by
``hvd`` and ``hvd.torch``."""

from hvd import _runtime, process_sets
from hvd._backend import backend
from hvd._runtime import (Adasum, Average, Max, Min, Product, Sum, cross_rank, cross_size,
                          is_homogeneous, is_initialized, local_rank, local_size, rank, size,
                          start_timeline, stop_timeline)

__all__ = [
    "init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank",
    "cross_size", "cross_rank", "is_homogeneous", "start_timeline", "stop_timeline",
    "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
    "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "Average", "Sum",
    "Adasum", "Min", "Max", "Product", "backend_name", "version"
]


def init(comm=None, process_sets=None):
    """Joins the job (collective; a no-op when already initialised).

    comm: None (all ranks the launcher started). Horovod's rank-list and mpi4py communicator
    forms need MPI, which libhvd does not use: they raise ValueError.
    process_sets: ProcessSet objects to register now (all ranks pass the same list), or
    "dynamic" (accepted for compatibility: sets can always be added later)."""
    if comm is not None and comm != []:
        raise ValueError("hvd.init(comm=...) needs an MPI build; libhvd joins the ranks its "
                         "launcher started (hvdrun, mpirun, srun, torchrun)")
    if isinstance(process_sets, str):
        if process_sets.lower() != "dynamic":
            raise ValueError("process_sets must be a list of ProcessSet or 'dynamic'")
        process_sets = []
    wanted = list(process_sets or [])
    for ps in wanted:
        if not isinstance(ps, process_sets_module.ProcessSet):
            raise ValueError("process_sets entries must be hvd.ProcessSet, got %r" % (ps,))
    if not _runtime.init_context():
        return
    process_sets_module.global_process_set.ranks = list(range(_runtime.size()))
    try:
        for index, ps in enumerate(wanted):
            try:
                process_sets_module._register(ps)
            except ValueError as e:
                raise ValueError("Horovod could not be initialized because process_sets entry "
                                 "number %d is invalid: %s" % (index, e)) from None
    except BaseException:
        shutdown()
        raise


process_sets_module = process_sets


def shutdown():
    """Leaves the job; registered process sets become invalid. Safe to call repeatedly."""
    process_sets_module._reset_registry()
    _runtime.shutdown_context()


def mpi_threads_supported():
    return False


def mpi_enabled():
    return False


def mpi_built():
    return False


def gloo_enabled():
    return False


def gloo_built():
    return False


def nccl_built():
    return _runtime.nccl_built()


def ddl_built():
    return False


def ccl_built():
    return False


def cuda_built():
    return _runtime.cuda_built()


def rocm_built():
    return False


def backend_name():
    """'pybind' or 'ctypes': how this process reaches libhvd (see HVD_PY_BACKEND)."""
    return backend.NAME


def version():
    """libhvd's version string, e.g. '0.1.0'."""
    return backend.version_string()
