# SPDX-License-Identifier: Apache-2.0
"""Memory from hvd_mem_alloc for NumPy arrays and torch tensors.

The ranks of one host reduce (and gather, and broadcast) such buffers in place in each
other's memory, without staging copies: a flat gradient buffer allocated here makes every
allreduce on views of it take that path. Anywhere else it is ordinary memory. The memory is
zero-filled and freed when the last array or tensor on it is garbage-collected.
"""

import ctypes
import weakref

from hvd._backend import backend
from hvd._errors import HvdValueError


def shared_buffer(nbytes):
    """A writable ctypes byte array of max(nbytes, 1) bytes on hvd_mem_alloc memory, freed
    (hvd_mem_free) when it is garbage-collected. Raises HvdValueError for a negative size,
    the library's error when memory runs out."""
    nbytes = int(nbytes)
    if nbytes < 0:
        raise HvdValueError("shared memory: negative size %d" % nbytes)
    nbytes = max(nbytes, 1)
    ptr = backend.mem_alloc(nbytes)
    try:
        buf = (ctypes.c_uint8 * nbytes).from_address(ptr)
    except BaseException:
        backend.mem_free(ptr)
        raise
    weakref.finalize(buf, backend.mem_free, ptr)
    return buf


def element_count(shape):
    count = 1
    for d in shape:
        if int(d) < 0:
            raise HvdValueError("shared_zeros: negative dimension in %r" % (tuple(shape),))
        count *= int(d)
    return count
