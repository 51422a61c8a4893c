# SPDX-License-Identifier: Apache-2.0
"""DistributedGradientTape (horovod.tensorflow's): a tf.GradientTape whose gradient() returns
the gradients averaged (or reduced with op) over the ranks of a process set."""

import tensorflow as tf

from hvd import _op_args
from hvd.process_sets import global_process_set
from hvd.tensorflow import functions
from hvd.tensorflow.compression import Compression
from hvd.tensorflow.mpi_ops import Adasum, Average


def _split_groups(n, num_groups):
    """Indices 0..n-1 cut into num_groups runs as even as possible (Horovod's split)."""
    num_groups = max(1, min(num_groups, n))
    base, extra = divmod(n, num_groups)
    out, start = [], 0
    for g in range(num_groups):
        end = start + base + (1 if g < extra else 0)
        out.append(list(range(start, end)))
        start = end
    return out


class _Reducer:
    """What DistributedGradientTape does to a list of gradients."""

    def __init__(self, compression, sparse_as_dense, op, gradient_predivide_factor,
                 num_groups, groups, process_set):
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("gradient_predivide_factor not supported with op != Average")
        if op == Adasum and (num_groups or groups):
            raise ValueError("Adasum does not support grouped allreduce")
        if groups is not None:
            if not (isinstance(groups, list) and all(isinstance(g, list) for g in groups)):
                raise ValueError("groups must be a list of lists of tf.Variable")
            if num_groups:
                raise ValueError("pass either num_groups or groups, not both")
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        self.prescale = 1.0
        self.postscale = 1.0
        if op == Average:
            # libhvd divides by the set size after postscale: the average split in two.
            self.prescale = 1.0 / gradient_predivide_factor
            self.postscale = gradient_predivide_factor
        self.num_groups = num_groups
        self.groups = groups
        self.process_set = process_set

    def _index_groups(self, sources, present):
        if self.groups is not None:
            ids = {id(v): i for i, v in enumerate(sources)}
            listed = [[ids[id(v)] for v in g if id(v) in ids and ids[id(v)] in present]
                      for g in self.groups]
            grouped = {i for g in listed for i in g}
            return [g for g in listed if g] + [[i] for i in present if i not in grouped]
        if self.num_groups:
            return [[present[j] for j in g] for g in _split_groups(len(present),
                                                                     self.num_groups)]
        return [present]  # one group: every gradient in flight at once

    def reduce(self, grads, sources):
        if _op_args.set_size(self.process_set) == 1 and self.op != Adasum:
            return list(grads)  # (Average's pre- and postscale cancel on one rank)
        grads = list(grads)
        if self.sparse_as_dense:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        present = [i for i, g in enumerate(grads) if g is not None]
        out = list(grads)
        for group in self._index_groups(sources, present):
            if self.op == Adasum:
                reduced = [functions.allreduce(grads[i], op=Adasum,
                                               compression=self.compression,
                                               process_set=self.process_set) for i in group]
            else:
                reduced = functions.grouped_allreduce(
                    [grads[i] for i in group], op=self.op, compression=self.compression,
                    prescale_factor=self.prescale, postscale_factor=self.postscale,
                    process_set=self.process_set)
            for i, r in zip(group, reduced):
                out[i] = r
        return out


def DistributedGradientTape(gradtape, device_dense="", device_sparse="",
                            compression=Compression.none, sparse_as_dense=False, op=Average,
                            gradient_predivide_factor=1.0, num_groups=0, groups=None,
                            process_set=global_process_set):
    """Wraps gradtape (a tf.GradientTape) so that gradient() allreduces the gradients.

    op: Average (default), Sum or Adasum; gradient_predivide_factor: with Average, the
    gradients are divided by it before the sum and multiplied by it / size after;
    sparse_as_dense: IndexedSlices gradients are made dense and allreduced (else
    allgathered); num_groups / groups: gradients reduced in that many grouped allreduces,
    or grouped by lists of variables (default: one group)."""
    reducer = _Reducer(compression, sparse_as_dense, op, gradient_predivide_factor, num_groups,
                       groups, process_set)
    cls = type(gradtape.__class__.__name__, (gradtape.__class__,),
               dict(_DistributedGradientTape.__dict__))
    tape = cls.__new__(cls)
    tape.__dict__.update(gradtape.__dict__)
    tape._hvd_reducer = reducer
    return tape


class _DistributedGradientTape(tf.GradientTape):
    def gradient(self, target, sources, output_gradients=None, *args, **kwargs):
        grads = super(self.__class__, self).gradient(target, sources, output_gradients, *args,
                                                     **kwargs)
        flat = tf.nest.flatten(grads)
        reduced = self._hvd_reducer.reduce(flat, tf.nest.flatten(sources))
        return tf.nest.pack_sequence_as(grads, reduced)

