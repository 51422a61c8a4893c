# SPDX-License-Identifier: Apache-2.0
"""hvd.torch.shared_zeros: CPU tensors on hvd_mem_alloc memory (see hvd._shared_memory)."""

import torch

from hvd._shared_memory import element_count, shared_buffer


def shared_zeros(*size, dtype=torch.float32):
    """A zero-filled CPU tensor on hvd_mem_alloc memory, which the ranks of one host reduce in
    place in each other's buffers (no staging copies); views of it (e.g. gradients carved
    from one flat buffer) take the same path. Freed with its last view."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    count = element_count(size)
    itemsize = torch.empty((), dtype=dtype).element_size()
    buf = shared_buffer(count * itemsize)
    return torch.frombuffer(buf, dtype=dtype, count=count).view(size)
