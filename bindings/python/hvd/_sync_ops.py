# SPDX-License-Identifier: Apache-2.0
"""join and barrier: collectives that move no tensor, shared by every array API."""

from hvd import _runtime
from hvd._backend import backend
from hvd.process_sets import global_process_set


def join(device=-1):
    """Says this rank has no more batches; until all ranks joined it contributes zeros to
    the others' allreduces. Blocks until every rank joined; returns the rank that joined
    last. device is accepted for Horovod compatibility (CPU zeros are always used)."""
    return _runtime.run("join", finish=backend.value)


def barrier(process_set=global_process_set):
    """Returns once every rank of the set has called barrier."""
    _runtime.run("barrier", process_set=process_set)
