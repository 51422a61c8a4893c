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


def test_job_still_healthy_after_errors():
    np.testing.assert_allclose(hvd.allreduce(np.ones(3), op=hvd.Sum), np.full(3, hvd.size()))
