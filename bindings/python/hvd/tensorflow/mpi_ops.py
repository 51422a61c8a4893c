# SPDX-License-Identifier: Apache-2.0
"""Horovod's collectives as TensorFlow ops, eagerly and inside tf.function, with Horovod's
gradients: allreduce's is the same allreduce of the gradient, allgather's this rank's rows of
the gradient averaged over the set, broadcast's the averaged gradient on the root (zero
elsewhere), alltoall's the alltoall back, reducescatter's an allgather (times the set size for
Sum, as Horovod; times the forward op's scale factors).

Errors are TensorFlow's: ranks that disagree (shape, dtype, op) raise
tf.errors.FailedPreconditionError on every rank, a call wrong on this rank
tf.errors.InvalidArgumentError, an aborted job tf.errors.AbortedError; the message names the
op, the rank and libhvd's status.
"""

import tensorflow as tf

from hvd import _op_args, _runtime
from hvd._basics import (Adasum, Average, Max, Min, Product, Sum, ccl_built,  # noqa: F401
                         cross_rank, cross_size, cuda_built, ddl_built, gloo_built,
                         gloo_enabled, init, is_homogeneous, is_initialized, local_rank,
                         local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built,
                         rank, rocm_built, shutdown, size, start_timeline, stop_timeline)
from hvd.process_sets import (ProcessSet, _registered, add_process_set,  # noqa: F401
                              global_process_set, remove_process_set)
from hvd.tensorflow import _ops


def _set_of(process_set_id):
    return global_process_set if process_set_id == 0 else _registered[process_set_id]


def size_op(process_set_id=0, name=None):
    """The set's size as an int32 tensor (a constant of the live job)."""
    return tf.constant(_op_args.set_size(_set_of(process_set_id)), tf.int32, name=name)


def rank_op(process_set_id=0, name=None):
    return tf.constant(_op_args.set_rank(_set_of(process_set_id)), tf.int32, name=name)


def local_size_op(name=None):
    return tf.constant(local_size(), tf.int32, name=name)


def local_rank_op(name=None):
    return tf.constant(local_rank(), tf.int32, name=name)


# ------------------------------------------------------------------ the raw ops


def _allreduce(tensor, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    """tensor reduced with op over the set (no compression, no IndexedSlices)."""
    _op_args.check_adasum(op, process_set)
    return _ops.ops().hvd_allreduce(tensor, reduce_op=int(op), prescale=float(prescale_factor),
                                    postscale=float(postscale_factor),
                                    process_set=_ops.process_set_id(process_set),
                                    **_ops.naming(name))


def _grouped_allreduce(tensors, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set):
    _op_args.check_adasum(op, process_set)
    return _ops.ops().hvd_grouped_allreduce(
        list(tensors), reduce_op=int(op), prescale=float(prescale_factor),
        postscale=float(postscale_factor), process_set=_ops.process_set_id(process_set),
        **_ops.naming(name))


@tf.RegisterGradient("HvdAllreduce")
def _allreduce_grad(op, grad):
    return _allreduce(grad, op=op.get_attr("reduce_op"), prescale_factor=op.get_attr("prescale"),
                      postscale_factor=op.get_attr("postscale"),
                      process_set=_set_of(op.get_attr("process_set")))


@tf.RegisterGradient("HvdGroupedAllreduce")
def _grouped_allreduce_grad(op, *grads):
    grads = [tf.zeros_like(x) if g is None else g for g, x in zip(grads, op.inputs)]
    return _grouped_allreduce(grads, op=op.get_attr("reduce_op"),
                              prescale_factor=op.get_attr("prescale"),
                              postscale_factor=op.get_attr("postscale"),
                              process_set=_set_of(op.get_attr("process_set")))


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Every rank's tensor concatenated along dimension 0 in rank order (the first dimension
    may differ between ranks). Differentiable."""
    return _ops.ops().hvd_allgather(tensor, process_set=_ops.process_set_id(process_set),
                                    **_ops.naming(name))


@tf.RegisterGradient("HvdAllgather")
def _allgather_grad(op, grad):
    process_set = _set_of(op.get_attr("process_set"))
    grad = _allreduce(grad, op=Average, process_set=process_set)
    rows = tf.reshape(tf.shape(op.inputs[0], out_type=tf.int64)[0], [1])
    every = allgather(rows, process_set=process_set)
    offset = tf.reduce_sum(every[:_op_args.set_rank(process_set)])
    return tf.slice(grad, tf.concat([[offset], tf.zeros([tf.rank(grad) - 1], tf.int64)], 0),
                    tf.shape(op.inputs[0], out_type=tf.int64))


def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """allgather of each tensor of a list, negotiated and completed as one unit.
    Differentiable."""
    if not tensors:
        return []
    return list(_ops.ops().hvd_grouped_allgather(list(tensors),
                                                 process_set=_ops.process_set_id(process_set),
                                                 **_ops.naming(name)))


@tf.RegisterGradient("HvdGroupedAllgather")
def _grouped_allgather_grad(op, *grads):
    process_set = _set_of(op.get_attr("process_set"))
    grads = [tf.zeros_like(y) if g is None else g for g, y in zip(grads, op.outputs)]
    reduced = _grouped_allreduce(grads, op=Average, process_set=process_set)
    rows = tf.stack([tf.shape(x, out_type=tf.int64)[0] for x in op.inputs])
    every = tf.reshape(allgather(tf.reshape(rows, [1, -1]), process_set=process_set),
                       [-1, len(op.inputs)])
    offsets = tf.reduce_sum(every[:_op_args.set_rank(process_set)], axis=0)
    return [tf.slice(g, tf.concat([[offsets[i]], tf.zeros([tf.rank(g) - 1], tf.int64)], 0),
                     tf.shape(x, out_type=tf.int64))
            for i, (g, x) in enumerate(zip(reduced, op.inputs))]


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """root_rank's tensor (root_rank: a global rank) on every rank of the set.
    Differentiable."""
    root = _op_args.root_in_set(root_rank, process_set)
    return _ops.ops().hvd_broadcast(tensor, root_rank=root,
                                    process_set=_ops.process_set_id(process_set),
                                    **_ops.naming(name))


@tf.RegisterGradient("HvdBroadcast")
def _broadcast_grad(op, grad):
    process_set = _set_of(op.get_attr("process_set"))
    reduced = _allreduce(grad, op=Average, process_set=process_set)
    if _op_args.set_rank(process_set) != op.get_attr("root_rank"):
        return reduced * 0
    return reduced


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends splits[j] rows (dimension 0) to rank j of the set (an even split by default).
    Returns the received rows and how many came from each rank (int32). Differentiable."""
    if splits is None:
        splits = tf.zeros([0], tf.int32)
    else:
        splits = tf.cast(tf.convert_to_tensor(splits), tf.int32) if not isinstance(
            splits, (list, tuple)) else tf.constant(_op_args.splits_list(splits), tf.int32)
    return tuple(_ops.ops().hvd_alltoall(tensor, splits,
                                         process_set=_ops.process_set_id(process_set),
                                         **_ops.naming(name)))


@tf.RegisterGradient("HvdAlltoall")
def _alltoall_grad(op, grad_wrt_output, grad_wrt_received_splits):
    process_set = _set_of(op.get_attr("process_set"))
    back, _ = alltoall(grad_wrt_output, splits=op.outputs[1], process_set=process_set)
    rows = tf.shape(op.inputs[0])[0]
    pad = rows - tf.shape(back)[0]  # rows the forward op did not send get no gradient
    back = tf.concat([back, tf.zeros(tf.concat([[pad], tf.shape(back)[1:]], 0), back.dtype)], 0)
    return back, None


def reducescatter(tensor, name=None, op=Average, ignore_name_scope=False,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of rows of the reduction over the set (Average or Sum); lower ranks
    get one more row when the first dimension does not divide. Differentiable."""
    op = _op_args.reduce_op(op, None)
    if op not in (Average, Sum):
        raise ValueError("reducescatter supports Average and Sum only")
    return _ops.ops().hvd_reducescatter(tensor, reduce_op=int(op),
                                        prescale=float(prescale_factor),
                                        postscale=float(postscale_factor),
                                        process_set=_ops.process_set_id(process_set),
                                        **_ops.naming(name))


@tf.RegisterGradient("HvdReducescatter")
def _reducescatter_grad(op, grad):
    process_set = _set_of(op.get_attr("process_set"))
    # As Horovod: the set size times the gradient of the ranks' summed loss.
    factor = op.get_attr("prescale") * op.get_attr("postscale")
    if op.get_attr("reduce_op") == Sum:
        factor *= _op_args.set_size(process_set)
    gathered = allgather(grad, process_set=process_set)
    return gathered * tf.cast(factor, gathered.dtype) if factor != 1 else gathered


def grouped_reducescatter(tensors, device_dense="", compression=None, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0, name=None):
    """reducescatter of each tensor of a list, negotiated and completed as one unit (Average
    or Sum; compression: hvd.tensorflow.Compression, none by default). Differentiable."""
    if not tensors:
        return []
    op = _op_args.reduce_op(op, None)
    if op not in (Average, Sum):
        raise ValueError("reducescatter supports Average and Sum only")
    pairs = [(t, None) if compression is None else compression.compress(t) for t in tensors]
    out = _ops.ops().hvd_grouped_reducescatter(
        [p[0] for p in pairs], reduce_op=int(op), prescale=float(prescale_factor),
        postscale=float(postscale_factor), process_set=_ops.process_set_id(process_set),
        **_ops.naming(name))
    if compression is None:
        return list(out)
    return [compression.decompress(o, p[1]) for o, p in zip(out, pairs)]


@tf.RegisterGradient("HvdGroupedReducescatter")
def _grouped_reducescatter_grad(op, *grads):
    process_set = _set_of(op.get_attr("process_set"))
    factor = op.get_attr("prescale") * op.get_attr("postscale")
    if op.get_attr("reduce_op") == Sum:
        factor *= _op_args.set_size(process_set)
    grads = [tf.zeros_like(y) if g is None else g for g, y in zip(grads, op.outputs)]
    gathered = grouped_allgather(grads, process_set=process_set)
    return [g * tf.cast(factor, g.dtype) if factor != 1 else g for g in gathered]


def join():
    """Says this rank has no more batches; until all ranks joined it contributes zeros to
    the others' allreduces. Returns the rank that joined last (an int32 tensor)."""
    return _ops.ops().hvd_join(process_set=_ops.process_set_id(global_process_set))


def barrier(process_set=global_process_set):
    """Returns once every rank of the set has called barrier (an op inside tf.function)."""
    return _ops.ops().hvd_barrier(process_set=_ops.process_set_id(process_set),
                                  **_ops.naming(None))


tf.no_gradient("HvdJoin")
tf.no_gradient("HvdBarrier")
