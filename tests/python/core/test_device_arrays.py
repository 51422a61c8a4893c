# SPDX-License-Identifier: Apache-2.0
"""Arrays in CUDA memory in the NumPy package, where no CUDA is usable (every machine the suite
runs on): how __cuda_array_interface__ and DLPack exports are read, and that an op on them fails
with a clear ValueError on every rank while the job goes on. scripts/gpu_check.sh runs the same
package on a GPU (tests/gpu/numpy_cuda_check.py)."""

import ctypes

import numpy as np
import pytest

import hvd
from hvd import _device_arrays as da
from hvd import _dtypes, _op_arrays

FAKE_PTR = 0x7F0000001000  # never dereferenced: no CUDA is usable where this suite runs


class CaiArray:
    """An exporter of __cuda_array_interface__ with the fields given."""

    def __init__(self, shape=(4, 3), typestr="<f4", ptr=FAKE_PTR, readonly=False, device=None,
                 version=3, **fields):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr,
                                             data=(ptr, readonly), version=version, **fields)
        if device is not None:
            self.device = device


class _Device:
    def __init__(self, id):
        self.id = id


_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                   ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))


class DLPackArray:
    """A DLPack exporter of a CUDA tensor described by hand (the struct stays alive with the
    object; the capsule has no destructor). Records the stream each export was asked for."""

    def __init__(self, shape=(5,), code=2, bits=32, device=(2, 0), data=FAKE_PTR, strides=None,
                 byte_offset=0, lanes=1):
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self._strides = (ctypes.c_int64 * max(len(shape), 1))(*(strides or ()))
        self.managed = da._DLManagedTensor()
        t = self.managed.dl_tensor
        t.data, t.ndim, t.byte_offset = data, len(shape), byte_offset
        t.device.device_type, t.device.device_id = device
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, lanes
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        self.device = device
        self.streams = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return _PyCapsule_New(ctypes.addressof(self.managed), b"dltensor", None)


# ------------------------------------------------------------------ reading the exports


@pytest.mark.parametrize("typestr,code", [("|u1", _dtypes.UINT8), ("|i1", _dtypes.INT8),
                                          ("<u2", _dtypes.UINT16), ("<i2", _dtypes.INT16),
                                          ("<i4", _dtypes.INT32), ("<i8", _dtypes.INT64),
                                          ("<f2", _dtypes.FLOAT16), ("<f4", _dtypes.FLOAT32),
                                          ("<f8", _dtypes.FLOAT64), ("|b1", _dtypes.BOOL)])
def test_interface_dtypes(typestr, code):
    a = da.describe(CaiArray(typestr=typestr, device=_Device(1)))
    assert (a.ptr, a.code, a.shape, a.device_id, a.writable) == (FAKE_PTR, code, (4, 3), 1, True)
    assert a.desc() == (FAKE_PTR, code, (4, 3), da.DEVICE_CUDA, 1)


def test_interface_layouts():
    assert da.describe(CaiArray(strides=(12, 4))).shape == (4, 3)  # C order, given explicitly
    assert da.describe(CaiArray(shape=(4, 1), strides=(4, 99))).shape == (4, 1)  # extent 1
    assert da.describe(CaiArray(shape=(0, 3), ptr=0)).shape == (0, 3)
    assert not da.describe(CaiArray(readonly=True)).writable
    with pytest.raises(ValueError, match="not C-contiguous"):
        da.describe(CaiArray(strides=(4, 16)))
    with pytest.raises(ValueError, match="masked"):
        da.describe(CaiArray(mask=CaiArray()))
    with pytest.raises(ValueError, match="no element type"):
        da.describe(CaiArray(typestr="<V2"))
    with pytest.raises(ValueError, match="not supported"):
        da.describe(CaiArray(typestr="<c8"))
    with pytest.raises(ValueError, match="null data pointer"):
        da.describe(CaiArray(ptr=0))
    with pytest.raises(ValueError, match="negative"):
        da.describe(CaiArray(shape=(-1,)))
    with pytest.raises(ValueError, match="not a valid interface"):
        da.from_cuda_array_interface(object(), {"shape": (1,)})


def test_interface_device_from_dlpack_device():
    class Both(CaiArray):
        def __dlpack_device__(self):
            return (2, 3)

    assert da.describe(Both(device=_Device(1))).device_id == 3
    assert da.describe(CaiArray()).device_id is None  # asked of the pointer at the op


def test_interface_gaps_go_through_dlpack():
    """An interface that cannot name the dtype, or that refuses, falls back to DLPack."""

    class Bfloat16(DLPackArray):
        __cuda_array_interface__ = CaiArray(typestr="<V2").__cuda_array_interface__

    class Refusing(DLPackArray):
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("Can't get __cuda_array_interface__ on a tensor that requires "
                               "grad")

    for cls in (Bfloat16, Refusing):
        a = da.describe(cls(code=4, bits=16))
        assert a.stream == "dlpack"
        assert da.export_dlpack(a, 0).code == _dtypes.BFLOAT16
    with pytest.raises(RuntimeError, match="requires grad"):
        da.describe(type("RefusingOnly", (), {"__cuda_array_interface__":
                                              Refusing.__cuda_array_interface__})())


def test_streams():
    def streams(*values, version=3):
        return da.op_stream([da.describe(CaiArray(stream=v, version=version)) for v in values])

    assert streams(None) == 0  # none named: CUDA's legacy default stream, passed as NULL
    assert streams(1) == 0
    assert streams(0x5A5A, 0x5A5A, None) == 0x5A5A
    assert streams(2, version=2) == 0  # version 2 has no stream
    with pytest.raises(ValueError, match="different CUDA streams"):
        streams(0x5A5A, 0x6B6B)
    with pytest.raises(ValueError, match="per-thread default stream"):
        streams(2)
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        streams(0)


def test_framework_choice(monkeypatch):
    class Missing:
        def __init__(self):
            raise ImportError("not installed")

    class NoBfloat16:
        def supports(self, code):
            return code != _dtypes.BFLOAT16

    class Every:
        def supports(self, code):
            return True

    monkeypatch.setattr(da, "_CuPy", NoBfloat16)
    monkeypatch.setattr(da, "_Torch", Every)
    assert isinstance(da.framework_for(CaiArray(), [_dtypes.FLOAT32]), NoBfloat16)
    assert isinstance(da.framework_for(CaiArray(), [_dtypes.FLOAT32, _dtypes.BFLOAT16]), Every)
    monkeypatch.setattr(da, "_Torch", Missing)
    with pytest.raises(ValueError, match="needs CuPy.*PyTorch.*float32, bfloat16"):
        da.framework_for(CaiArray(), [_dtypes.FLOAT32, _dtypes.BFLOAT16])


def test_held_until_device_work_is_over():
    class Events:
        def done(self, event):
            return event["done"]

    first, second = {"done": False}, {"done": False}
    held = _op_arrays._Held()
    held.add(Events(), first, ["a"])
    held.add(Events(), second, ["b"])
    held.drop_finished()
    assert [item[2] for item in held._items] == [["a"], ["b"]]
    second["done"] = True
    held.drop_finished()
    assert [item[2] for item in held._items] == [["a"]]
    first["done"] = True
    held.drop_finished()
    assert held._items == []


def test_dlpack_layout_matches_numpy_export():
    """The ctypes view of DLPack's structs, read against a real exporter (NumPy, on the CPU)."""
    src = np.arange(24, dtype=np.int16).reshape(2, 3, 4)[1]
    capsule = src.__dlpack__()
    t = da._DLManagedTensor.from_address(da._capsule_pointer(capsule, b"dltensor")).dl_tensor
    assert t.data + t.byte_offset == src.ctypes.data
    assert (t.device.device_type, t.ndim) == (1, 2)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 16, 1)
    assert tuple(t.shape[i] for i in range(t.ndim)) == (3, 4)
    with pytest.raises(ValueError, match="device type 1 is not CUDA memory"):
        da.from_dlpack_capsule(src, src.__dlpack__())


@pytest.mark.parametrize("dl,code", [((0, 8), _dtypes.INT8), ((0, 64), _dtypes.INT64),
                                     ((1, 8), _dtypes.UINT8), ((1, 16), _dtypes.UINT16),
                                     ((2, 16), _dtypes.FLOAT16), ((2, 64), _dtypes.FLOAT64),
                                     ((4, 16), _dtypes.BFLOAT16), ((6, 8), _dtypes.BOOL)])
def test_dlpack_export(dl, code):
    src = DLPackArray(shape=(2, 3), code=dl[0], bits=dl[1], device=(2, 1), byte_offset=64,
                      strides=(3, 1))
    a = da.describe(src)
    assert a.stream == "dlpack" and a.device_id == 1
    a = da.export_dlpack(a, 0x77)
    assert src.streams == [0x77]
    assert (a.ptr, a.code, a.shape, a.device_id, a.writable) == (FAKE_PTR + 64, code, (2, 3), 1,
                                                                 False)
    da.export_dlpack(da.describe(src), 0)
    assert src.streams[-1] == 1  # CUDA's default stream in DLPack's numbering


def test_dlpack_refusals():
    assert da.describe(DLPackArray(device=(1, 0))) is None  # a host array: NumPy's path
    with pytest.raises(ValueError, match="not supported"):
        da.export_dlpack(da.describe(DLPackArray(code=5, bits=64)), 0)  # complex
    with pytest.raises(ValueError, match="not supported"):
        da.export_dlpack(da.describe(DLPackArray(lanes=4)), 0)
    with pytest.raises(ValueError, match="not C-contiguous"):
        da.export_dlpack(da.describe(DLPackArray(shape=(2, 3), strides=(1, 2))), 0)


# ------------------------------------------------------------------ ops on every rank


def _assert_job_goes_on(tag):
    out = hvd.allreduce(np.array([hvd.rank() + 1.0]), op=hvd.Sum, name="after." + tag)
    np.testing.assert_allclose(out, [hvd.size() * (hvd.size() + 1) / 2.0])


def test_in_place_op_on_cuda_memory_fails_cleanly():
    for op, call in (("allreduce_", lambda x: hvd.allreduce_(x, op=hvd.Sum)),
                     ("broadcast_", lambda x: hvd.broadcast_(x, root_rank=0)),
                     ("grouped_allreduce_", lambda x: hvd.grouped_allreduce_([x, x]))):
        with pytest.raises(ValueError, match="CUDA device 0") as info:
            call(CaiArray(stream=1))
        assert "tensor" in str(info.value), (op, str(info.value))
    _assert_job_goes_on("in_place")


def test_new_arrays_need_cuda():
    for call in (lambda x: hvd.allreduce(x), lambda x: hvd.allgather(x),
                 lambda x: hvd.reducescatter(x), lambda x: hvd.alltoall(x),
                 lambda x: hvd.broadcast(x, root_rank=0)):
        with pytest.raises(ValueError, match="CUDA"):
            call(CaiArray())
    with pytest.raises(ValueError, match="CUDA"):
        hvd.allreduce(DLPackArray())
    _assert_job_goes_on("new")


def test_mixed_and_read_only_arrays_are_refused():
    with pytest.raises(ValueError, match="in host memory or all in CUDA memory"):
        hvd.allgather_into(np.zeros(3), CaiArray(shape=(3 * hvd.size(),)))
    with pytest.raises(ValueError, match="in host memory or all in CUDA memory"):
        hvd.allgather_into(CaiArray(shape=(3,)), np.zeros(3 * hvd.size()))
    with pytest.raises(ValueError, match="in host memory or all in CUDA memory"):
        hvd.grouped_allreduce([np.zeros(3), CaiArray()])
    with pytest.raises(ValueError, match="different CUDA streams"):  # outputs' streams count
        hvd.allgather_into(CaiArray(shape=(3,), stream=0x5A5A),
                           CaiArray(shape=(3 * hvd.size(),), stream=0x6B6B))
    with pytest.raises(ValueError, match="one CUDA device"):
        hvd.grouped_allreduce_([CaiArray(device=_Device(0)), CaiArray(device=_Device(1))])
    with pytest.raises(ValueError, match="read-only"):
        hvd.allreduce_(CaiArray(readonly=True))
    with pytest.raises(ValueError, match="read-only"):
        hvd.allreduce_(DLPackArray())
    _assert_job_goes_on("mixed")


def test_grouped_ops_take_any_iterable():
    outs = hvd.grouped_allreduce((np.full(3, r + 1.0) for r in (hvd.rank(), 0)), op=hvd.Sum)
    np.testing.assert_allclose(outs[0], np.full(3, hvd.size() * (hvd.size() + 1) / 2.0))
    np.testing.assert_allclose(outs[1], np.full(3, float(hvd.size())))


def test_backend_takes_a_ready_event_in_descriptions():
    """hvd.torch describes a CUDA tensor with its ready event as a sixth item; every backend
    takes it (None or 0: no event), for host tensors and CUDA ones alike."""
    from hvd import _dtypes
    from hvd._backend import backend
    from hvd import _runtime
    ctx = _runtime.context()
    x = np.array([hvd.rank() + 1.0])
    desc = (x.ctypes.data, _dtypes.FLOAT64, (1,), 1, 0, None)  # 1: HVD_DEVICE_CPU
    req = backend.enqueue("allreduce", ctx, [desc], [desc], name="six_items", op=hvd.Sum)
    try:
        assert backend.wait(req, 60000) == 0
    finally:
        backend.release(req)
    np.testing.assert_allclose(x, [hvd.size() * (hvd.size() + 1) / 2.0])
    # A CUDA tensor with an event: refused for want of CUDA, not for its description.
    cuda = (FAKE_PTR, _dtypes.FLOAT32, (4,), da.DEVICE_CUDA, 0, 0x5A5A)
    with pytest.raises(ValueError, match="CUDA device 0") as info:
        backend.enqueue("allreduce", ctx, [cuda], [cuda], name="six_items_cuda", op=hvd.Sum)
    assert "items" not in str(info.value)
    _assert_job_goes_on("six_items")
