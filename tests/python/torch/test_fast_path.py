# SPDX-License-Identifier: Apache-2.0
"""hvd.torch's allreduce fast path (pybind11 backend) and the handle table behind every
backend's handles: the fast path takes exactly the common case, everything else behaves as on
the generic path, and handles keep Horovod's semantics across threads."""

import threading
import time

import pytest
import torch

import hvd.torch as hvd
from hvd import _runtime
from hvd._backend import backend
from hvd.torch import _tensors

PYBIND = backend.NAME == "pybind"
needs_pybind = pytest.mark.skipif(not PYBIND, reason="the fast path is the pybind11 backend's")


def fast(tensor, output=None, average=None, name=None, op=None, prescale=1.0, postscale=1.0,
         process_set=hvd.global_process_set):
    return _tensors.fast_allreduce(tensor, output, average, name, op, prescale, postscale,
                                   process_set)


@needs_pybind
def test_fast_path_takes_the_common_case():
    n = hvd.size()
    x = torch.full((4, 2), float(hvd.rank()))
    h = fast(x, x, name="fast.inplace", op=hvd.Sum)
    assert isinstance(h, int)
    assert hvd.synchronize(h) is x
    assert torch.equal(x, torch.full((4, 2), float(sum(range(n)))))
    y = torch.arange(6, dtype=torch.int32)
    h = fast(y, None, op=hvd.Max, prescale=2, postscale=0.5)
    out = hvd.synchronize(h)
    assert out is not y and out.dtype == torch.int32 and out.tolist() == list(range(6))
    assert y.tolist() == list(range(6))
    z = torch.ones(3, dtype=torch.float64)
    assert torch.equal(hvd.synchronize(fast(z, z)), torch.ones(3, dtype=torch.float64))


@needs_pybind
def test_fast_path_leaves_everything_else_to_the_generic_path():
    t = torch.ones(4)
    others = [
        dict(tensor=torch.ones(4, 2).t(), output=None),  # not contiguous
        dict(tensor=torch.ones(4, dtype=torch.complex64)),  # unsupported dtype
        dict(tensor=torch.ones(2).to_sparse()),
        dict(tensor=torch.ones(2, device="meta")),
        dict(tensor=[1.0, 2.0]),
        dict(tensor=t, output=torch.ones(4)),  # an output other than tensor or None
        dict(tensor=t, average=True),
        dict(tensor=t, op=hvd.Adasum),
        dict(tensor=t, op=True),
        dict(tensor=t, op=17),
        dict(tensor=t, name=7),
        dict(tensor=t, name="nul\0name"),
        dict(tensor=t, prescale="2"),
        dict(tensor=t, process_set=hvd.ProcessSet([0])),  # not registered
    ]
    for kwargs in others:
        assert fast(**kwargs) is None, kwargs
    # None of them started anything: the next op runs as usual on every rank.
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), hvd.size() * 1.0))


@needs_pybind
def test_allreduce_now_reduces_in_one_call_or_leaves_it_to_the_generic_path():
    n = hvd.size()
    now = _tensors.fast_allreduce_now
    gps = hvd.global_process_set
    x = torch.full((3,), float(hvd.rank() + 1))
    assert now(x, None, "now.avg", None, 1.0, 1.0, gps) is x  # op None: Average
    assert torch.equal(x, torch.full((3,), (n + 1) / 2.0))
    y = torch.arange(4, dtype=torch.int64) * (hvd.rank() + 1)
    assert now(y, None, None, hvd.Sum, 1.0, 2.0, gps) is y
    assert y.tolist() == [2 * i * n * (n + 1) // 2 for i in range(4)]
    assert hvd.allreduce_(torch.ones(2), op=hvd.Max).tolist() == [1.0, 1.0]
    t = torch.ones(4)
    assert now(torch.ones(4, 2).t(), None, None, None, 1.0, 1.0, gps) is None
    assert now(t, True, None, None, 1.0, 1.0, gps) is None
    assert now(t, None, None, hvd.Adasum, 1.0, 1.0, gps) is None
    assert torch.equal(t, torch.ones(4))  # nothing started
    # A failed op raises as synchronize does, and leaves nothing behind.
    with pytest.raises(hvd.HorovodInternalError, match="HVD_ERR"):
        now(torch.ones(2 + hvd.rank()), None, "now.mismatch", None, 1.0, 1.0, gps)
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), n * 1.0))


@needs_pybind
def test_fast_path_on_a_process_set_and_after_reinit():
    ps = hvd.add_process_set(list(range(hvd.size() - 1)))
    try:
        if ps.included():
            x = torch.ones(2)
            h = fast(x, x, op=hvd.Sum, process_set=ps)
            assert isinstance(h, int)
            assert torch.equal(hvd.synchronize(h), torch.full((2,), hvd.size() - 1.0))
    finally:
        assert hvd.remove_process_set(ps)
    assert fast(torch.ones(2), process_set=ps) is None  # removed: the generic path refuses it
    hvd.shutdown()
    assert fast(torch.ones(2)) is None  # not initialised: the generic path raises
    with pytest.raises(ValueError, match="not been initialized"):
        hvd.allreduce_async_(torch.ones(2))
    hvd.init()
    x = torch.ones(2)
    assert torch.equal(hvd.synchronize(fast(x, x, op=hvd.Sum)), torch.full((2,), hvd.size() * 1.0))


def test_generic_path_errors_stay_as_they_were():
    with pytest.raises(ValueError, match="contiguous"):
        hvd.allreduce_async_(torch.ones(4, 2).t())
    with pytest.raises(ValueError, match="not supported"):
        hvd.allreduce_async_(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="name must be a str"):
        hvd.allreduce_async_(torch.ones(2), name=7)
    with pytest.raises(ValueError, match="reduction op"):
        hvd.allreduce_async_(torch.ones(2), op=True)
    ps = hvd.ProcessSet([0])
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce_async_(torch.ones(2), process_set=ps)
    out = hvd.synchronize(hvd.allreduce_async(torch.ones(4, 2).t(), op=hvd.Sum))
    assert out.is_contiguous() and torch.equal(out, torch.full((2, 4), hvd.size() * 1.0))


def test_duplicate_name_in_flight_is_a_value_error():
    """On rank 0 the first op cannot finish before the others enqueue it, 0.3 s later."""
    if hvd.rank() != 0:
        time.sleep(0.3)
    x = torch.ones(2)
    h = hvd.allreduce_async_(x, name="fast.dup")
    if hvd.rank() == 0:
        with pytest.raises(ValueError, match="fast.dup"):
            hvd.allreduce_async_(torch.ones(2), name="fast.dup")
    hvd.synchronize(h)


def test_handles_across_threads():
    """A handle synchronized from another thread; two threads waiting on one handle: one gets
    the result, the other a ValueError; poll of a consumed handle is a ValueError."""
    late = hvd.size() - 1
    if hvd.rank() == late:
        time.sleep(0.3)
    x = torch.ones(3)
    h = hvd.allreduce_async_(x, op=hvd.Sum, name="fast.threads")
    results, errors = [], []

    def wait():
        try:
            results.append(hvd.synchronize(h))
        except ValueError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=wait) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(not t.is_alive() for t in threads)
    assert len(results) + len(errors) == 2
    tensors = [r for r in results if r is not None]
    assert len(tensors) == 1 and tensors[0] is x
    assert torch.equal(x, torch.full((3,), hvd.size() * 1.0))
    # The other thread waited too (ValueError) or came after the first had finished (None).
    assert len(results) == 2 or "synchronized by another thread" in errors[0]
    with pytest.raises(ValueError, match="unknown or already synchronized"):
        hvd.poll(h)
    assert hvd.synchronize(h) is None


def test_failed_op_raises_horovod_internal_error_and_consumes_the_handle():
    h = hvd.allreduce_async_(torch.ones(2 + hvd.rank()), name="fast.mismatch")
    with pytest.raises(hvd.HorovodInternalError, match="HVD_ERR"):
        hvd.synchronize(h)
    assert hvd.synchronize(h) is None
    with pytest.raises(ValueError, match="unknown or already synchronized handle"):
        _runtime.synchronize(h)


def test_shutdown_with_outstanding_handles():
    """Handles not synchronized at shutdown are gone afterwards; the next init works."""
    x = torch.ones(2)
    h = hvd.allreduce_async_(x, op=hvd.Sum, name="fast.orphan")
    deadline = time.monotonic() + 30
    while not hvd.poll(h):
        assert time.monotonic() < deadline
        time.sleep(0.001)
    hvd.shutdown()
    assert hvd.synchronize(h) is None
    with pytest.raises(ValueError, match="unknown or already synchronized"):
        hvd.poll(h)
    hvd.init()
    assert torch.equal(x, torch.full((2,), hvd.size() * 1.0))
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), hvd.size() * 1.0))


def fast_grouped(tensors, in_place=True, average=None, name=None, op=None, prescale=1.0,
                 postscale=1.0, process_set=hvd.global_process_set):
    return _tensors.fast_grouped_allreduce(tensors, in_place, average, name, op, prescale,
                                           postscale, process_set)


@needs_pybind
def test_grouped_fast_path_takes_the_common_case():
    n, r = hvd.size(), hvd.rank()
    xs = [torch.full((3,), float(r)), torch.full((2, 2), r + 1, dtype=torch.int64),
          torch.full((5,), 2.0 * r, dtype=torch.float64)]
    h = fast_grouped(xs, True, name="fast.grouped", op=hvd.Sum)
    assert isinstance(h, int)
    out = hvd.synchronize(h)
    assert len(out) == 3 and all(o is x for o, x in zip(out, xs))
    assert xs[0].tolist() == [float(sum(range(n)))] * 3
    assert xs[1].tolist() == [[sum(range(1, n + 1))] * 2] * 2
    assert xs[2].tolist() == [2.0 * sum(range(n))] * 5
    ys = (torch.full((4,), float(r)), torch.arange(3, dtype=torch.int32))
    out = hvd.synchronize(fast_grouped(ys, False, op=hvd.Max, postscale=2))
    assert [o is y for o, y in zip(out, ys)] == [False, False]
    assert out[0].tolist() == [2.0 * (n - 1)] * 4 and out[1].tolist() == [0, 2, 4]
    assert out[1].dtype == torch.int32 and ys[0].tolist() == [float(r)] * 4


@needs_pybind
def test_grouped_fast_path_leaves_everything_else_to_the_generic_path():
    t = torch.ones(4)
    others = [
        dict(tensors=[]),
        dict(tensors=iter([t])),
        dict(tensors=[t, torch.ones(4, 2).t()]),  # one not contiguous
        dict(tensors=[t, torch.ones(2, dtype=torch.complex64)]),
        dict(tensors=[t, [1.0]]),
        dict(tensors=[t], in_place=1),
        dict(tensors=[t], average=False),
        dict(tensors=[t], op=hvd.Adasum),
        dict(tensors=[t], name=b"bytes"),
        dict(tensors=[t], postscale=None),
        dict(tensors=[t], process_set=hvd.ProcessSet([0])),
    ]
    for kwargs in others:
        assert fast_grouped(**kwargs) is None, kwargs
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), hvd.size() * 1.0))


def test_grouped_allreduce_async_values_and_errors():
    """The public calls, whichever path takes them: results and the generic path's errors."""
    n, r = hvd.size(), hvd.rank()
    xs = [torch.full((2,), float(r + 1)) for _ in range(4)]
    out = hvd.synchronize(hvd.grouped_allreduce_async_(xs, name="fast.public"))
    assert all(o is x for o, x in zip(out, xs))
    assert all(x.tolist() == [(n + 1) / 2.0] * 2 for x in xs)
    out = hvd.synchronize(hvd.grouped_allreduce_async((torch.ones(2), torch.ones(4, 2).t()),
                                                      op=hvd.Sum))
    assert out[1].is_contiguous() and torch.equal(out[1], torch.full((2, 4), n * 1.0))
    with pytest.raises(ValueError, match="contiguous"):
        hvd.grouped_allreduce_async_([torch.ones(2), torch.ones(4, 2).t()])
    with pytest.raises(ValueError, match="not supported"):
        hvd.grouped_allreduce_async_([torch.ones(2, dtype=torch.complex64)])
    with pytest.raises(ValueError, match="name must be a str"):
        hvd.grouped_allreduce_async_([torch.ones(2)], name=7)
    with pytest.raises(ValueError, match="not registered"):
        hvd.grouped_allreduce_async_([torch.ones(2)], process_set=hvd.ProcessSet([0]))
    if n > 1:
        h = hvd.grouped_allreduce_async_([torch.ones(2), torch.ones(1 + r)], name="fast.gmis")
        with pytest.raises(hvd.HorovodInternalError, match="HVD_ERR"):
            hvd.synchronize(h)
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), n * 1.0))
