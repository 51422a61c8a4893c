# SPDX-License-Identifier: Apache-2.0
"""Horovod's TensorFlow helpers: allreduce and grouped_allreduce with compression and
IndexedSlices, broadcast_variables, and the object collectives."""

import tensorflow as tf

from hvd import _op_args
from hvd._objects import allgather_object, broadcast_object  # noqa: F401
from hvd.process_sets import global_process_set
from hvd.tensorflow import mpi_ops
from hvd.tensorflow.compression import Compression
from hvd.tensorflow.mpi_ops import Adasum, Average


def _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, name, process_set):
    """An IndexedSlices reduced as Horovod does: values and indices allgathered (a sum of
    the slices), values divided by the set size for Average."""
    if op == Adasum:
        raise NotImplementedError("The Adasum reduction does not currently support sparse "
                                  "tensors. As a workaround please pass sparse_as_dense=True "
                                  "to DistributedOptimizer")
    if op != Average and op != mpi_ops.Sum:
        raise NotImplementedError("IndexedSlices are reduced by Sum or Average only")
    values = mpi_ops.allgather(tensor.values, name=None if name is None else name + ".values",
                               process_set=process_set)
    indices = mpi_ops.allgather(tensor.indices,
                                name=None if name is None else name + ".indices",
                                process_set=process_set)
    scale = prescale_factor * postscale_factor
    if op == Average:
        scale /= _op_args.set_size(process_set)
    if scale != 1:
        values = values * tf.cast(scale, values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)


def allreduce(tensor, average=None, device_dense="", device_sparse="",
              compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, name=None, process_set=global_process_set,
              ignore_name_scope=False):
    """tensor averaged (default) or reduced with op over all ranks of the set. An
    IndexedSlices is allgathered (values and indices), as Horovod does. Differentiable."""
    op = _op_args.reduce_op(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        return _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, name,
                                 process_set)
    compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
    reduced = mpi_ops._allreduce(compressed, name=name, op=op, prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor, process_set=process_set)
    return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="",
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set, name=None):
    """allreduce of a list of tensors negotiated and completed as one unit (IndexedSlices
    among them are allgathered one by one)."""
    if not tensors:
        return tensors
    op = _op_args.reduce_op(op, average)
    out = list(tensors)
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            out[i] = _sparse_allreduce(t, op, prescale_factor, postscale_factor,
                                       None if name is None else "%s.%d" % (name, i),
                                       process_set)
    if dense:
        pairs = [compression.compress(tf.convert_to_tensor(tensors[i])) for i in dense]
        reduced = mpi_ops._grouped_allreduce([p[0] for p in pairs], name=name, op=op,
                                             prescale_factor=prescale_factor,
                                             postscale_factor=postscale_factor,
                                             process_set=process_set)
        for i, r, (_, ctx) in zip(dense, reduced, pairs):
            out[i] = compression.decompress(r, ctx)
    return out


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Assigns root_rank's value to each variable (in one tf.function when eager, so all the
    broadcasts are in flight together)."""
    variables = list(variables)
    if not variables:
        return None

    def assign_all():
        for v in variables:
            v.assign(mpi_ops.broadcast(tf.convert_to_tensor(v), root_rank,
                                       process_set=process_set))

    if tf.executing_eagerly():
        tf.function(assign_all, autograph=False)()  # the variables are captured
    else:
        assign_all()
    return None


def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=False):
    """Broadcasts variables from root_rank to every rank of the set (assigning them)."""
    return broadcast_(variables, root_rank, process_set=process_set)
