# SPDX-License-Identifier: Apache-2.0
"""hvd.shared_zeros: arrays on hvd_mem_alloc memory, reduced in place by the ranks of one host;
against references every rank computes on its own."""

import gc

import numpy as np
import pytest

import hvd
from hvd import _shared_memory
from hvd._backend import backend


def rank_values(r, n):
    return ((np.arange(n) * 7 + r * 3) % 11 - 5).astype(np.float32)


def test_allreduce_in_place_on_shared_array():
    a = hvd.shared_zeros((300, 1000), np.float32)  # 1.2 MB: reduced in the ranks' buffers
    assert a.shape == (300, 1000) and a.dtype == np.float32 and not a.any()
    a[...] = rank_values(hvd.rank(), a.size).reshape(a.shape)
    hvd.allreduce_(a, op=hvd.Sum, name="shared.whole")
    expected = sum(rank_values(r, a.size) for r in range(hvd.size())).reshape(a.shape)
    np.testing.assert_array_equal(a, expected)


def test_views_of_one_flat_buffer_fused():
    flat = hvd.shared_zeros(64 * 5000, np.float32)
    views = [flat[k * 5000:(k + 1) * 5000] for k in range(64)]
    for k, v in enumerate(views):
        v[...] = rank_values(hvd.rank() + k, v.size)
    handles = [hvd.allreduce_async_(v, op=hvd.Sum, name="shared.view.%d" % k)
               for k, v in enumerate(views)]
    for h in handles:
        hvd.synchronize(h)
    for k, v in enumerate(views):
        expected = sum(rank_values(r + k, v.size) for r in range(hvd.size()))
        np.testing.assert_array_equal(v, expected)


def test_memory_is_freed_with_its_last_view():
    buf = _shared_memory.shared_buffer(4096)
    address = np.frombuffer(buf, dtype=np.uint8).ctypes.data
    del buf
    gc.collect()
    with pytest.raises(hvd._errors.HvdValueError):
        backend.mem_free(address)  # freed already by the finalizer


def test_sizes():
    assert hvd.shared_zeros(0).size == 0
    assert hvd.shared_zeros((2, 3), np.int64).dtype == np.int64
    with pytest.raises(ValueError):
        hvd.shared_zeros((4, -1))
