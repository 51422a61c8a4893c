# SPDX-License-Identifier: Apache-2.0
"""The arrays of one NumPy-package op: all in host memory (NumPy arrays, or anything
numpy.asarray or numpy.from_dlpack takes) or all on one CUDA device (see _device_arrays)."""

import ctypes
import threading

import numpy as np

from hvd import _device_arrays, _dtypes, _runtime
from hvd._backend import backend


def _as_array(obj):
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack__") and not hasattr(obj, "__array_interface__"):
        return np.from_dlpack(obj)
    return np.asarray(obj)


def _contiguous(obj):
    if type(obj) is np.ndarray and obj.flags.c_contiguous:
        return obj
    return np.require(_as_array(obj), requirements="C")  # keeps 0-d arrays 0-d


def _writable(obj):
    if not isinstance(obj, np.ndarray):
        raise ValueError("in-place operations need a numpy.ndarray or a writable CUDA array, "
                         "got %s" % type(obj).__name__)
    if not obj.flags.c_contiguous or not obj.flags.writeable:
        raise ValueError("in-place operations need a writable C-contiguous array")
    return obj


class _Held:
    """What ops on a stream still use after their requests completed (the request completes
    before the device work ends): kept until an event recorded after the op has passed."""

    def __init__(self):
        self._lock = threading.Lock()
        self._items = []  # (framework, event, objects)

    def add(self, framework, event, objects):
        with self._lock:
            self._items.append((framework, event, objects))

    def drop_finished(self):
        with self._lock:
            items, self._items = self._items, []
        left = [item for item in items if not item[0].done(item[1])]
        if left:
            with self._lock:
                self._items[:0] = left


_held = _Held()

_MIXED = "the arrays of one op must all be in host memory or all in CUDA memory"


class OpArrays:
    """arrays: the op's inputs as it uses them (contiguous NumPy arrays, or the caller's CUDA
    arrays themselves); outputs: the outputs the caller gave, likewise; stream: the
    cudaStream_t to pass to the op (None for host arrays); keep: what must stay alive until
    the op completes. writable: the inputs are written in place; outputs: the caller's
    outputs (written)."""

    def __init__(self, objs, writable=False, outputs=()):
        objs, outputs = list(objs), list(outputs)
        self._framework = None
        self.cuda = self.stream = None
        every = objs + outputs
        for o in every:
            if type(o) is not np.ndarray:
                cuda = [_device_arrays.describe(o) for o in every]
                break
        else:
            cuda = ()  # the common case, decided without looking further
        if all(c is None for c in cuda):
            check = _writable if writable else _contiguous
            self.arrays = [check(o) for o in objs]
            self.outputs = [_writable(o) for o in outputs]
            self.keep = self.arrays + self.outputs
            return
        if any(c is None for c in cuda):
            raise ValueError(_MIXED)
        self._set_up_cuda(cuda, len(objs), writable)

    def _set_up_cuda(self, cuda, n_inputs, writable):
        _held.drop_finished()
        for i, c in enumerate(cuda):  # before any DLPack export: those are read-only
            if (writable or i >= n_inputs) and not c.writable:
                why = ("exported through DLPack, which counts as read-only"
                       if c.stream == "dlpack" else "read-only")
                raise ValueError("in-place operations and outputs need a writable array; this "
                                 "%s is %s" % (type(c.obj).__name__, why))
        self.stream = _device_arrays.op_stream(cuda)
        cuda = [_device_arrays.export_dlpack(c, self.stream) if c.stream == "dlpack" else c
                for c in cuda]
        # Without usable CUDA the op goes on without a framework: the library refuses it at
        # enqueue, saying what it searched (only a new array made first fails here).
        if _runtime.cuda_built():
            self._framework = _device_arrays.framework_for(cuda[0].obj, [c.code for c in cuda])
        for c in cuda:
            if c.device_id is None:
                c.device_id = self._framework.device_of(c.ptr) if self._framework else 0
        devices = sorted({c.device_id for c in cuda})
        if len(devices) > 1:
            raise ValueError("the arrays of one op must be on one CUDA device, not on %s" %
                             ", ".join(str(d) for d in devices))
        self.cuda = cuda
        self.device_id = devices[0]
        self.arrays = [c.obj for c in cuda[:n_inputs]]
        self.outputs = [c.obj for c in cuda[n_inputs:]]
        self.keep = [c.owner for c in cuda]
        self._by_id = {id(c.obj): c for c in cuda}

    def desc(self, arr):
        """The description of one of the op's arrays for the backend."""
        if self.cuda is None:
            return (arr.ctypes.data, _dtypes.code_of_numpy(arr.dtype), arr.shape)
        return self._by_id[id(arr)].desc()

    def descs(self, arrays):
        return [self.desc(a) for a in arrays]

    def _maker(self):
        if self._framework is None:
            raise ValueError("the op's arrays are in CUDA memory, but this libhvd has no usable "
                             "CUDA here (hvd.cuda_built() is False: no GPU module, CUDA driver "
                             "or device; an in-place op says which)")
        return self._framework

    def empty_like(self, i):
        """A new array like input i, which the op writes (out-of-place forms)."""
        if self.cuda is None:
            out = np.empty_like(self.arrays[i])
            self.keep.append(out)
            return out
        c = self.cuda[i]
        out, ptr = self._maker().empty(c.shape, c.code, self.device_id, self.stream)
        self._by_id[id(out)] = _device_arrays.CudaArray(out, ptr, c.code, c.shape,
                                                        self.device_id, True, None, out)
        self.keep.append(out)
        return out

    def output(self, req, i):
        """A copy of the library-owned output i of a completed request, as a new array."""
        ptr, code, shape = backend.output(req, i)
        if self.cuda is not None:
            # Queued on the op's stream, where the output is valid. The request is released
            # after this, which frees the library's output in order on that same stream: after
            # the copy.
            return self._maker().copy_from(ptr, shape, code, self.device_id, self.stream)
        out = np.empty(shape, dtype=_dtypes.numpy_dtype(code))
        if out.nbytes:
            ctypes.memmove(out.ctypes.data, ptr, out.nbytes)
        return out

    def finishing(self, finish):
        """finish(req), and for CUDA arrays then: the op's arrays kept alive until its device
        work is over (their memory must not be reused before)."""
        if self.cuda is None or self._framework is None:
            return finish

        def finish_on_device(req):
            result = finish(req)
            event = self._framework.record(self.stream, self.device_id)
            _held.drop_finished()
            _held.add(self._framework, event, self.keep)
            return result

        return finish_on_device
