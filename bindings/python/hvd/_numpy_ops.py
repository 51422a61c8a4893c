# SPDX-License-Identifier: Apache-2.0
"""Horovod's collectives on NumPy arrays (and anything np.asarray or np.from_dlpack takes), and
on arrays in CUDA memory: CuPy arrays, or anything exporting __cuda_array_interface__ or DLPack
on a CUDA device (see _device_arrays for streams and for the type of new arrays).

Names, arguments and results follow horovod.torch: foo() returns a new array, foo_() works
in place, foo_async() returns a handle for poll()/synchronize()."""

import numpy as np

from hvd import _op_args, _runtime
from hvd._backend import backend
from hvd._op_arrays import OpArrays
from hvd._shared_memory import element_count, shared_buffer
from hvd.process_sets import global_process_set


# ------------------------------------------------------------------ allreduce


def _allreduce_async(args, output, average, name, op, prescale_factor, postscale_factor,
                     process_set):
    op = _op_args.reduce_op(op, average)
    tensor = args.arrays[0]
    ins = [args.desc(tensor)]
    outs = ins if output is tensor else [args.desc(output)]  # in place: described once
    return _runtime.enqueue("allreduce", ins, outs, keep=args.keep,
                            finish=args.finishing(lambda req: output),
                            name=_op_args.check_name(name),
                            process_set=process_set, op=op, prescale=prescale_factor,
                            postscale=postscale_factor, stream=args.stream)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing tensor over the set; synchronize(handle) returns a new array."""
    args = OpArrays([tensor])
    return _allreduce_async(args, args.empty_like(0), average, name, op, prescale_factor,
                            postscale_factor, process_set)


def allreduce(tensor, average=None, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    """The reduction (default Average) of tensor over all ranks of the set, as a new array."""
    return _runtime.synchronize(
        allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor,
                        process_set))


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    args = OpArrays([tensor], writable=True)
    return _allreduce_async(args, args.arrays[0], average, name, op, prescale_factor,
                            postscale_factor, process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces tensor in place and returns it."""
    return _runtime.synchronize(
        allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                         process_set))


def _grouped_allreduce_async(args, outputs, average, name, op, prescale_factor,
                             postscale_factor, process_set):
    op = _op_args.reduce_op(op, average)
    return _runtime.enqueue("grouped_allreduce", args.descs(args.arrays), args.descs(outputs),
                            keep=args.keep, stream=args.stream,
                            finish=args.finishing(lambda req: list(outputs)),
                            name=_op_args.check_name(name),
                            process_set=process_set, op=op, prescale=prescale_factor,
                            postscale=postscale_factor)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    args = OpArrays(tensors)
    outputs = [args.empty_like(i) for i in range(len(args.arrays))]
    return _grouped_allreduce_async(args, outputs, average, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    """Reduces a list of arrays as one unit; returns a list of new arrays."""
    return _runtime.synchronize(
        grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor,
                                process_set))


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    args = OpArrays(tensors, writable=True)
    return _grouped_allreduce_async(args, args.arrays, average, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return _runtime.synchronize(
        grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                 process_set))


# ------------------------------------------------------------------ allgather


def allgather_async(tensor, name=None, process_set=global_process_set):
    args = OpArrays([tensor])
    return _runtime.enqueue("allgather", args.descs(args.arrays), keep=args.keep,
                            finish=args.finishing(lambda req: args.output(req, 0)),
                            name=_op_args.check_name(name), process_set=process_set,
                            stream=args.stream)


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenation of every rank's tensor along the first dimension, in rank order."""
    return _runtime.synchronize(allgather_async(tensor, name, process_set))


def allgather_into_async(tensor, output, name=None, process_set=global_process_set):
    args = OpArrays([tensor], outputs=[output])
    out = args.outputs[0]
    return _runtime.enqueue("allgather_into", args.descs(args.arrays), [args.desc(out)],
                            keep=args.keep, finish=args.finishing(lambda req: out),
                            name=_op_args.check_name(name), process_set=process_set,
                            stream=args.stream)


def allgather_into(tensor, output, name=None, process_set=global_process_set):
    """Gathers every rank's tensor into output (a writable C-contiguous array of the same dtype
    whose first dimension is the sum of every rank's) in rank order, and returns output. In
    place when tensor is this rank's rows of output (e.g. output[start:start + rows]): they stay
    where they are. A wrong output size on any rank fails the op on every rank."""
    return _runtime.synchronize(allgather_into_async(tensor, output, name, process_set))


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    args = OpArrays(tensors)
    arrays = args.arrays
    return _runtime.enqueue(
        "grouped_allgather", args.descs(args.arrays), keep=args.keep,
        finish=args.finishing(lambda req: [args.output(req, i) for i in range(len(arrays))]),
        name=_op_args.check_name(name), process_set=process_set, stream=args.stream)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    return _runtime.synchronize(grouped_allgather_async(tensors, name, process_set))


# ------------------------------------------------------------------ broadcast


def _broadcast_async(args, output, root_rank, name, process_set):
    root = _op_args.root_in_set(root_rank, process_set)
    arr = args.arrays[0]
    ins = [args.desc(arr)]
    outs = ins if output is arr else [args.desc(output)]
    return _runtime.enqueue("broadcast", ins, outs, keep=args.keep,
                            finish=args.finishing(lambda req: output),
                            name=_op_args.check_name(name),
                            process_set=process_set, root=root, stream=args.stream)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    args = OpArrays([tensor])
    return _broadcast_async(args, args.empty_like(0), root_rank, name, process_set)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's tensor (root_rank is a global rank), as a new array on every rank."""
    return _runtime.synchronize(broadcast_async(tensor, root_rank, name, process_set))


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    args = OpArrays([tensor], writable=True)
    return _broadcast_async(args, args.arrays[0], root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return _runtime.synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ------------------------------------------------------------------ alltoall


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """synchronize(handle) returns (output, received_splits)."""
    args = OpArrays([tensor])
    split_list = _op_args.splits_list(splits)
    n = _op_args.set_size(process_set)

    def finish(req):
        received = np.array(backend.received_splits(req, n), dtype=np.int32)
        return args.output(req, 0), received

    return _runtime.enqueue("alltoall", args.descs(args.arrays), keep=args.keep,
                            finish=args.finishing(finish),
                            name=_op_args.check_name(name), process_set=process_set,
                            splits=split_list, stream=args.stream)


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends splits[j] rows to rank j of the set. Returns the rows received, and when splits
    were given also how many came from each rank."""
    output, received = _runtime.synchronize(alltoall_async(tensor, splits, name, process_set))
    return output if splits is None else (output, received)


# ------------------------------------------------------------------ reducescatter


def reducescatter_async(tensor, name=None, op=_runtime.Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    args = OpArrays([tensor])
    return _runtime.enqueue("reducescatter", args.descs(args.arrays), keep=args.keep,
                            finish=args.finishing(lambda req: args.output(req, 0)),
                            name=_op_args.check_name(name), process_set=process_set,
                            op=_op_args.reduce_op(op, None), prescale=prescale_factor,
                            postscale=postscale_factor, stream=args.stream)


def reducescatter(tensor, name=None, op=_runtime.Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of rows of the reduction (Average or Sum) over the set."""
    return _runtime.synchronize(
        reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor))


def grouped_reducescatter_async(tensors, name=None, op=_runtime.Average,
                                process_set=global_process_set, prescale_factor=1.0,
                                postscale_factor=1.0):
    args = OpArrays(tensors)
    arrays = args.arrays
    return _runtime.enqueue(
        "grouped_reducescatter", args.descs(args.arrays), keep=args.keep,
        finish=args.finishing(lambda req: [args.output(req, i) for i in range(len(arrays))]),
        name=_op_args.check_name(name), process_set=process_set,
        op=_op_args.reduce_op(op, None), prescale=prescale_factor, postscale=postscale_factor,
        stream=args.stream)


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
