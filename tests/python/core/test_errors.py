# SPDX-License-Identifier: Apache-2.0
"""Wrong calls raise ValueError on the rank that made them, before anything is queued;
collectives that fail while running raise HorovodInternalError on every rank."""

import time

import numpy as np
import pytest

import hvd


def test_unsupported_dtype():
    with pytest.raises(ValueError, match="complex64"):
        hvd.allreduce(np.ones(3, dtype=np.complex64))


def test_unknown_op():
    with pytest.raises(ValueError, match="op"):
        hvd.allreduce(np.ones(3), op=42)


def test_op_and_average_together():
    with pytest.raises(ValueError):
        hvd.allreduce(np.ones(3), op=hvd.Sum, average=True)


def test_root_out_of_range():
    with pytest.raises(ValueError, match="root_rank"):
        hvd.broadcast(np.ones(3), root_rank=hvd.size())


def test_in_place_needs_contiguous_array():
    with pytest.raises(ValueError, match="contiguous"):
        hvd.allreduce_(np.ones((4, 4))[:, 1])


def test_alltoall_wrong_number_of_splits():
    with pytest.raises(ValueError):
        hvd.alltoall(np.ones(4), splits=[1] * (hvd.size() + 1))


def test_alltoall_splits_must_be_integers():
    n = hvd.size()
    for splits in (np.ones(n, dtype=np.float32), [1.5] * n, np.ones(n, dtype=bool)):
        with pytest.raises(ValueError, match="splits"):
            hvd.alltoall(np.ones(n), splits=splits)
    out, received = hvd.alltoall(np.arange(n, dtype=np.float64), splits=np.ones(n, np.int64))
    assert out.tolist() == [float(hvd.rank())] * n and list(received) == [1] * n


def test_allgather_of_scalar():
    with pytest.raises(ValueError):
        hvd.allgather(np.float32(1))


def test_reducescatter_with_max_is_rejected():
    with pytest.raises(ValueError):
        hvd.reducescatter(np.ones((4, 2)), op=hvd.Max)


def test_shape_mismatch_fails_on_every_rank():
    with pytest.raises(hvd.HorovodInternalError, match="shape") as info:
        hvd.allreduce(np.ones(2 + hvd.rank()), name="mismatch.shape")
    assert isinstance(info.value, RuntimeError)


def test_dtype_mismatch_fails_on_every_rank():
    dtype = np.float32 if hvd.rank() == 0 else np.float64
    with pytest.raises(hvd.HorovodInternalError):
        hvd.allreduce(np.ones(2, dtype=dtype), name="mismatch.dtype")


def test_duplicate_name_in_flight():
    """On rank 0 the first 'dup' cannot finish before the others enqueue it, 0.3 s later."""
    if hvd.rank() != 0:
        time.sleep(0.3)
    h = hvd.allreduce_async(np.ones(2), name="dup")
    if hvd.rank() == 0:
        with pytest.raises(ValueError, match="dup"):
            hvd.allreduce_async(np.ones(2), name="dup")
    hvd.synchronize(h)


def test_unknown_handle():
    with pytest.raises(ValueError):
        hvd.synchronize(123456789)


def test_sizes_past_64_bits_are_rejected_not_wrapped():
    """Shapes no array can have, given to the backend directly: a shape whose size overflows,
    a dimension or split past its integer type, an even alltoall split past int32. Each is a
    ValueError naming the problem; none is truncated into a valid op."""
    from hvd import _runtime

    buf = np.zeros(8, dtype=np.uint8)
    ptr, u8 = buf.ctypes.data, 0  # HVD_DTYPE_UINT8

    def enqueue(kind, shape, **kwargs):
        return _runtime.backend.enqueue(kind, _runtime.context(), [(ptr, u8, shape)], None, None,
                                        0, None, 1.0, 1.0, None, kwargs.get("splits"), None)

    with pytest.raises(ValueError, match="overflows a 64-bit integer at dimension 1"):
        enqueue("allgather", (1 << 32, 1 << 32))
    with pytest.raises(ValueError, match="out of range of a 64-bit integer"):
        enqueue("allgather", ((1 << 64) + 5,))
    with pytest.raises(ValueError, match="out of range of a 32-bit integer"):
        enqueue("alltoall", ((1 << 32) + 8,), splits=[(1 << 32) + 8] + [0] * (hvd.size() - 1))
    rows = ((1 << 32) + 8) * hvd.size()
    with pytest.raises(ValueError, match="more than a split holds"):
        enqueue("alltoall", (rows,))


def test_job_still_healthy_after_errors():
    np.testing.assert_allclose(hvd.allreduce(np.ones(3), op=hvd.Sum), np.full(3, hvd.size()))
