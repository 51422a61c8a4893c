# SPDX-License-Identifier: Apache-2.0
"""DistributedOptimizer: a Keras 3 optimizer whose gradients are reduced over the ranks
inside Keras's train step before they are applied.

Keras 3 hands every gradient to Optimizer.apply (apply_gradients calls it): the torch
backend eagerly, the JAX backend through stateless_apply while jax.jit traces the train step.
The wrapped optimizer is a subclass of the given one's class, made on the fly and named like
it, whose apply reduces the gradients (one grouped allreduce per group, hvd.jax's custom
call under jit, hvd.torch's eagerly) and then runs the wrapped class's apply. A model saved
with it records the wrapped class's module and name, so it loads without hvd as well.

With backward_passes_per_step k > 1 the gradients are summed locally over k passes in
optimizer variables; every k-th pass reduces the sum (divided by k with
average_aggregated_gradients) and applies it, the other passes change nothing else, and
`iterations` counts the applied steps. Under jax.jit the reduction runs inside a lax.cond
taken on every k-th pass only; the update is computed on every pass and kept on those.
"""

import warnings

import keras

from hvd._basics import Average, Sum
from hvd._gradients import even_groups
from hvd.process_sets import global_process_set
from hvd.keras import _collectives
from hvd.keras.compression import Compression


class _Settings:
    """What DistributedOptimizer was given (a class attribute of the wrapped class, kept out
    of Keras's variable tracking)."""

    def __init__(self, name, compression, op, gradient_predivide_factor, groups,
                 backward_passes_per_step, average_aggregated_gradients, process_set,
                 sparse_as_dense=False, reduce=None):
        self.name = name
        self.sparse_as_dense = sparse_as_dense
        self.compression = compression
        self.op = op
        self.prescale = 1.0 / gradient_predivide_factor
        self.postscale = gradient_predivide_factor
        self.groups = groups
        self.passes = backward_passes_per_step
        self.average_passes = average_aggregated_gradients
        self.process_set = process_set
        # reduce(grads, variables): the reduced gradients, in place of hvd.keras's grouped
        # allreduce (hvd.tensorflow.keras passes DistributedGradientTape's reduction).
        self.reduce = reduce


class _DistributedOptimizer:
    """Put before the wrapped optimizer's class in the class made by wrap_class."""

    _hvd = None  # the _Settings, set on each wrapped class

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        if self._hvd.passes > 1:
            self._hvd_accumulators = self.add_optimizer_variables(variables, "hvd_accumulator")
            self._hvd_pass = self.add_variable(shape=(), dtype="int32", name="hvd_pass")

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        if not grads:
            return None
        if trainable_variables is None:
            if not self.built:
                return super().apply(grads, None)  # Keras's error for this case
            variables = list(self._trainable_variables)
        else:
            variables = list(trainable_variables)
            if not self.built:
                with keras.name_scope(self.name, caller=self):
                    self.build(variables)
                self.built = True
        if len(variables) != len(grads):
            raise ValueError("hvd.keras.DistributedOptimizer: %d gradients for %d variables"
                             % (len(grads), len(variables)))
        if self._hvd.passes == 1:
            return super().apply(self._hvd_reduce(grads, variables), trainable_variables)
        return self._hvd_accumulate(grads, variables, trainable_variables)

    def _hvd_groups(self, variables, present):
        """The indices (into variables) of the gradients present, as the groups reduced
        together: one group by default, `groups` near-equal runs for an int, or the given
        lists of variables (each other variable alone)."""
        groups = self._hvd.groups
        if groups is None:
            return [present]
        if isinstance(groups, int):
            return even_groups(present, groups)
        group_of = {}
        for g, members in enumerate(groups):
            for v in members:
                group_of[id(v)] = g
        listed = [[] for _ in groups]
        alone = []
        for i in present:
            g = group_of.get(id(variables[i]))
            if g is None:
                alone.append([i])
            else:
                listed[g].append(i)
        return [members for members in listed if members] + alone

    def _hvd_reduce(self, grads, variables):
        """grads reduced over the process set (None entries stay None)."""
        s = self._hvd
        if s.reduce is not None:
            return s.reduce(list(grads), variables)
        fw = _collectives.framework()
        if s.sparse_as_dense:
            grads = [g if g is None else keras.ops.convert_to_tensor(g) for g in grads]
        present = [i for i, g in enumerate(grads) if g is not None]
        out = list(grads)
        if not present:
            return out
        for n, members in enumerate(self._hvd_groups(variables, present)):
            pairs = [s.compression.compress(grads[i]) for i in members]
            reduced = fw.grouped_allreduce([p[0] for p in pairs], name="%s.%d" % (s.name, n),
                                           op=s.op, prescale_factor=s.prescale,
                                           postscale_factor=s.postscale,
                                           process_set=s.process_set)
            for i, r, p in zip(members, reduced, pairs):
                out[i] = s.compression.decompress(r, p[1])
        return out

    def _hvd_accumulate(self, grads, variables, trainable_variables):
        s = self._hvd
        ops = keras.ops
        accumulators = [self._hvd_accumulators[self._get_variable_index(v)] for v in variables]
        summed = [None if g is None or a is None else ops.add(a.value, ops.cast(g, a.dtype))
                  for g, a in zip(grads, accumulators)]
        count = ops.add(self._hvd_pass.value, 1)
        is_step = ops.equal(count, s.passes)

        def reduced():
            scaled = [g if g is None or not s.average_passes else ops.divide(g, s.passes)
                      for g in summed]
            return self._hvd_reduce(scaled, variables)

        if not _collectives.is_symbolic(count):
            if bool(ops.convert_to_numpy(is_step)):
                super().apply(reduced(), trainable_variables)
                for a in accumulators:
                    if a is not None:
                        a.assign(ops.zeros_like(a.value))
                self._hvd_pass.assign(0)
            else:
                for a, g in zip(accumulators, summed):
                    if g is not None:
                        a.assign(g)
                self._hvd_pass.assign(count)
            return None

        # Traced (JAX, or a tf.function): the reduction runs on the k-th pass only; the update
        # is computed on every pass (variables cannot be assigned inside a traced JAX branch)
        # and kept on those. (copy: a TensorFlow variable's value is the variable itself.)
        new_grads = ops.cond(is_step, reduced, lambda: summed)
        state = list(self._trainable_variables) + list(self.variables)
        before = [ops.copy(v.value) for v in state]
        super().apply(new_grads, trainable_variables)
        for v, old in zip(state, before):
            v.assign(ops.where(is_step, v.value, old))
        for a, g in zip(accumulators, summed):
            if g is not None:
                a.assign(ops.where(is_step, ops.zeros_like(g), g))
        self._hvd_pass.assign(ops.where(is_step, 0, count))
        return None


def is_distributed(optimizer):
    """Whether optimizer was made by DistributedOptimizer (or hvd.keras.load_model)."""
    return isinstance(optimizer, _DistributedOptimizer)


def wrap_class(cls, settings):
    """A subclass of the Keras optimizer class cls, with cls's name and module, whose apply
    reduces gradients as settings say."""
    return type(cls.__name__, (_DistributedOptimizer, cls),
                {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "_hvd": settings})


def check_passes(backward_passes_per_step):
    if isinstance(backward_passes_per_step, bool) or not isinstance(backward_passes_per_step,
                                                                    int) \
            or backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be an int >= 1, got %r"
                         % (backward_passes_per_step,))


def make_settings(optimizer_class, name=None, compression=Compression.none,
                  sparse_as_dense=False, gradient_predivide_factor=1.0, op=Average,
                  backward_passes_per_step=1, average_aggregated_gradients=False,
                  num_groups=0, groups=None, process_set=global_process_set):
    """Checks DistributedOptimizer's arguments as horovod.tensorflow.keras does."""
    _collectives.framework()  # NotImplementedError on a backend without hvd collectives
    # Gradients are dense tensors on the JAX and torch backends; on TensorFlow's, an
    # IndexedSlices is allgathered (as Horovod does) unless sparse_as_dense.
    if op not in (Average, Sum):
        raise ValueError("op currently only supports Average and Sum")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if gradient_predivide_factor <= 0:
        raise ValueError("gradient_predivide_factor must be > 0")
    check_passes(backward_passes_per_step)
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be "
                      "removed in v0.23.0.", DeprecationWarning, stacklevel=3)
        if groups is None:
            groups = num_groups
    if groups is not None:
        if isinstance(groups, int) and not isinstance(groups, bool):
            if groups <= 0:
                raise ValueError("groups should be a non-negative integer or a list of list "
                                 "of keras.Variable.")
        elif not isinstance(groups, list) or not all(isinstance(g, (list, tuple))
                                                     for g in groups):
            raise ValueError("groups should be a non-negative integer or a list of list of "
                             "keras.Variable.")
        else:
            groups = [list(g) for g in groups]
    return _Settings(name or "Distributed%s" % optimizer_class.__name__, compression, op,
                     float(gradient_predivide_factor), groups, backward_passes_per_step,
                     bool(average_aggregated_gradients), process_set, bool(sparse_as_dense))


def DistributedOptimizer(optimizer, name=None, compression=Compression.none,
                         sparse_as_dense=False, gradient_predivide_factor=1.0, op=Average,
                         backward_passes_per_step=1, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=global_process_set):
    """A new optimizer of optimizer's class and config (its state is not copied, as in
    Horovod) that reduces gradients over process_set before applying them: averaged by
    default, summed with op=Sum; scaled by 1/gradient_predivide_factor before the sum and
    gradient_predivide_factor/size after it; sent through compression (Compression.fp16
    halves floating-point gradients on the wire). groups: None reduces all gradients as one
    grouped allreduce, an int n in n groups, a list of lists of variables in those groups.
    backward_passes_per_step k sums k passes' gradients locally before one reduction (their
    mean with average_aggregated_gradients). name prefixes the collectives' names
    (default "Distributed<class name>"). sparse_as_dense: on the TensorFlow backend,
    IndexedSlices gradients (embeddings) are made dense and allreduced instead of allgathered;
    the JAX and torch backends produce dense gradients."""
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise ValueError("hvd.keras.DistributedOptimizer wraps a keras.optimizers.Optimizer, "
                         "got %r" % (optimizer,))
    base = type(optimizer)
    if is_distributed(optimizer):
        base = base.__mro__[2]  # (the wrapped class, _DistributedOptimizer, its base, ...)
    settings = make_settings(base, name, compression, sparse_as_dense,
                             gradient_predivide_factor, op, backward_passes_per_step,
                             average_aggregated_gradients, num_groups, groups, process_set)
    return wrap_class(base, settings).from_config(optimizer.get_config())
