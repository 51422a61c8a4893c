# SPDX-License-Identifier: Apache-2.0
"""Horovod's collectives on NumPy arrays (and anything np.asarray or np.from_dlpack takes).

Names, arguments and results follow horovod.torch: foo() returns a new array, foo_() works
in place, foo_async() returns a handle for poll()/synchronize()."""

import ctypes

import numpy as np

from hvd import _dtypes, _op_args, _runtime
from hvd._shared_memory import element_count, shared_buffer
from hvd._backend import backend
from hvd.process_sets import global_process_set


def _as_array(obj):
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack__") and not hasattr(obj, "__array_interface__"):
        return np.from_dlpack(obj)
    return np.asarray(obj)


def _contiguous(obj):
    return np.require(_as_array(obj), requirements="C")  # keeps 0-d arrays 0-d


def _writable(obj):
    arr = obj
    if not isinstance(arr, np.ndarray):
        raise ValueError("in-place operations need a numpy.ndarray, got %s" % type(obj).__name__)
    if not arr.flags.c_contiguous or not arr.flags.writeable:
        raise ValueError("in-place operations need a writable C-contiguous array")
    return arr


def _desc(arr):
    return (arr.ctypes.data, _dtypes.code_of_numpy(arr.dtype), arr.shape)


def _copy_output(req, i):
    ptr, code, shape = backend.output(req, i)
    out = np.empty(shape, dtype=_dtypes.numpy_dtype(code))
    if out.nbytes:
        ctypes.memmove(out.ctypes.data, ptr, out.nbytes)
    return out


# ------------------------------------------------------------------ allreduce


def _allreduce_async(tensor, output, average, name, op, prescale_factor, postscale_factor,
                     process_set):
    op = _op_args.reduce_op(op, average)
    ins = [_desc(tensor)]
    outs = ins if output is tensor else [_desc(output)]  # in place: described once
    return _runtime.enqueue("allreduce", ins, outs, keep=(tensor, output),
                            finish=lambda req: output, name=_op_args.check_name(name),
                            process_set=process_set, op=op, prescale=prescale_factor,
                            postscale=postscale_factor)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing tensor over the set; synchronize(handle) returns a new array."""
    arr = _contiguous(tensor)
    return _allreduce_async(arr, np.empty_like(arr), average, name, op, prescale_factor,
                            postscale_factor, process_set)


def allreduce(tensor, average=None, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    """The reduction (default Average) of tensor over all ranks of the set, as a new array."""
    return _runtime.synchronize(
        allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor,
                        process_set))


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    arr = _writable(tensor)
    return _allreduce_async(arr, arr, average, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces tensor in place and returns it."""
    return _runtime.synchronize(
        allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                         process_set))


def _grouped_allreduce_async(arrays, outputs, average, name, op, prescale_factor,
                             postscale_factor, process_set):
    op = _op_args.reduce_op(op, average)
    return _runtime.enqueue("grouped_allreduce", [_desc(a) for a in arrays],
                            [_desc(o) for o in outputs], keep=(arrays, outputs),
                            finish=lambda req: list(outputs), name=_op_args.check_name(name),
                            process_set=process_set, op=op, prescale=prescale_factor,
                            postscale=postscale_factor)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    arrays = [_contiguous(t) for t in tensors]
    return _grouped_allreduce_async(arrays, [np.empty_like(a) for a in arrays], average, name,
                                    op, prescale_factor, postscale_factor, process_set)


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    """Reduces a list of arrays as one unit; returns a list of new arrays."""
    return _runtime.synchronize(
        grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor,
                                process_set))


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    arrays = [_writable(t) for t in tensors]
    return _grouped_allreduce_async(arrays, arrays, average, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return _runtime.synchronize(
        grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                 process_set))


# ------------------------------------------------------------------ allgather


def allgather_async(tensor, name=None, process_set=global_process_set):
    arr = _contiguous(tensor)
    return _runtime.enqueue("allgather", [_desc(arr)], keep=arr,
                            finish=lambda req: _copy_output(req, 0),
                            name=_op_args.check_name(name), process_set=process_set)


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenation of every rank's tensor along the first dimension, in rank order."""
    return _runtime.synchronize(allgather_async(tensor, name, process_set))


def allgather_into_async(tensor, output, name=None, process_set=global_process_set):
    out = _writable(output)
    arr = _contiguous(tensor)
    return _runtime.enqueue("allgather_into", [_desc(arr)], [_desc(out)], keep=(arr, out),
                            finish=lambda req: out, name=_op_args.check_name(name),
                            process_set=process_set)


def allgather_into(tensor, output, name=None, process_set=global_process_set):
    """Gathers every rank's tensor into output (a writable C-contiguous array of the same dtype
    whose first dimension is the sum of every rank's) in rank order, and returns output. In
    place when tensor is this rank's rows of output (e.g. output[start:start + rows]): they stay
    where they are. A wrong output size on any rank fails the op on every rank."""
    return _runtime.synchronize(allgather_into_async(tensor, output, name, process_set))


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    arrays = [_contiguous(t) for t in tensors]
    return _runtime.enqueue(
        "grouped_allgather", [_desc(a) for a in arrays], keep=arrays,
        finish=lambda req: [_copy_output(req, i) for i in range(len(arrays))],
        name=_op_args.check_name(name), process_set=process_set)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    return _runtime.synchronize(grouped_allgather_async(tensors, name, process_set))


# ------------------------------------------------------------------ broadcast


def _broadcast_async(arr, output, root_rank, name, process_set):
    root = _op_args.root_in_set(root_rank, process_set)
    ins = [_desc(arr)]
    outs = ins if output is arr else [_desc(output)]
    return _runtime.enqueue("broadcast", ins, outs, keep=(arr, output),
                            finish=lambda req: output, name=_op_args.check_name(name),
                            process_set=process_set, root=root)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    arr = _contiguous(tensor)
    return _broadcast_async(arr, np.empty_like(arr), root_rank, name, process_set)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's tensor (root_rank is a global rank), as a new array on every rank."""
    return _runtime.synchronize(broadcast_async(tensor, root_rank, name, process_set))


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    arr = _writable(tensor)
    return _broadcast_async(arr, arr, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return _runtime.synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ------------------------------------------------------------------ alltoall


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """synchronize(handle) returns (output, received_splits)."""
    arr = _contiguous(tensor)
    split_list = _op_args.splits_list(splits)
    n = _op_args.set_size(process_set)

    def finish(req):
        received = np.array(backend.received_splits(req, n), dtype=np.int32)
        return _copy_output(req, 0), received

    return _runtime.enqueue("alltoall", [_desc(arr)], keep=arr, finish=finish,
                            name=_op_args.check_name(name), process_set=process_set,
                            splits=split_list)


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends splits[j] rows to rank j of the set. Returns the rows received, and when splits
    were given also how many came from each rank."""
    output, received = _runtime.synchronize(alltoall_async(tensor, splits, name, process_set))
    return output if splits is None else (output, received)


# ------------------------------------------------------------------ reducescatter


def reducescatter_async(tensor, name=None, op=_runtime.Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    arr = _contiguous(tensor)
    return _runtime.enqueue("reducescatter", [_desc(arr)], keep=arr,
                            finish=lambda req: _copy_output(req, 0),
                            name=_op_args.check_name(name), process_set=process_set,
                            op=_op_args.reduce_op(op, None), prescale=prescale_factor,
                            postscale=postscale_factor)


def reducescatter(tensor, name=None, op=_runtime.Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of rows of the reduction (Average or Sum) over the set."""
    return _runtime.synchronize(
        reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor))


def grouped_reducescatter_async(tensors, name=None, op=_runtime.Average,
                                process_set=global_process_set, prescale_factor=1.0,
                                postscale_factor=1.0):
    arrays = [_contiguous(t) for t in tensors]
    return _runtime.enqueue(
        "grouped_reducescatter", [_desc(a) for a in arrays], keep=arrays,
        finish=lambda req: [_copy_output(req, i) for i in range(len(arrays))],
        name=_op_args.check_name(name), process_set=process_set,
        op=_op_args.reduce_op(op, None), prescale=prescale_factor, postscale=postscale_factor)


def grouped_reducescatter(tensors, name=None, op=_runtime.Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    return _runtime.synchronize(
        grouped_reducescatter_async(tensors, name, op, process_set, prescale_factor,
                                    postscale_factor))


def shared_zeros(shape, dtype=np.float32):
    """A zero-filled array on hvd_mem_alloc memory, which the ranks of one host reduce in
    place in each other's buffers (no staging copies). Freed with its last view."""
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    dt = np.dtype(dtype)
    count = element_count(shape)
    buf = shared_buffer(count * dt.itemsize)
    return np.frombuffer(buf, dtype=dt, count=count).reshape(shape)
