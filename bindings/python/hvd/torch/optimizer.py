# SPDX-License-Identifier: Apache-2.0
"""DistributedOptimizer: wraps a torch optimizer so that step() applies gradients averaged
over all ranks.

Each parameter's gradient accumulator gets a hook; the moment backward has produced a
gradient, the hook starts its allreduce (libhvd's engine fuses the small ones), so
communication overlaps the rest of the backward pass. step() (or synchronize()) waits for
the outstanding reductions and writes the results into the gradients.
"""

import os
import warnings
from contextlib import contextmanager

import torch

from hvd._gradients import even_groups
from hvd.process_sets import global_process_set
from hvd.torch.compression import Compression
from hvd.torch.mpi_ops import (Adasum, Average, grouped_allreduce_async_, allreduce_async_, size,
                               sparse_allreduce_async, synchronize)
from hvd.torch.shared_memory import shared_zeros


class _DistributedMixin:
    """Put before the wrapped optimizer's class in a dynamically made subclass."""

    def _hvd_setup(self, named_parameters, compression, backward_passes_per_step, op,
                   gradient_predivide_factor, groups, sparse_as_dense, process_set,
                   shared_gradients=False):
        self._compression = compression
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        all_params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is not None:
            named_parameters = list(named_parameters)
            if any(not isinstance(np_, tuple) or len(np_) != 2 for np_ in named_parameters):
                raise ValueError("named_parameters should be a sequence of tuples (name, "
                                 "parameter), usually produced by model.named_parameters().")
        else:
            named_parameters = [("allreduce.noname.%d.%d" % (i, j), p)
                                for i, group in enumerate(self.param_groups)
                                for j, p in enumerate(group["params"])]
        names = [name for name, _ in named_parameters]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise ValueError("Parameter names in named_parameters must be unique. Found "
                             "duplicates: %s" % ", ".join(dups))
        named_ids = {id(p) for _, p in named_parameters}
        unnamed = [p for p in all_params if id(p) not in named_ids]
        if unnamed:
            raise ValueError("named_parameters was specified, but one or more model parameters "
                             "were not named. Python object ids: %s"
                             % ", ".join(str(id(p)) for p in unnamed))
        self._parameter_names = {id(p): name for name, p in named_parameters}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {id(p): backward_passes_per_step for p in all_params}
        self._handles = {}  # id(p) -> (p, handle, ctx)
        self._grad_accs = []
        self._requires_update = {}
        self._synchronized = False
        self._should_synchronize = True
        self._groups = self._make_groups(groups, all_params)
        self._shared_views = {}
        if size() > 1 and self.process_set.included():
            if shared_gradients:
                self._shared_views = self._make_shared_views(all_params)
            self._register_hooks()

    @staticmethod
    def _make_shared_views(all_params):
        """id(p) -> a view shaped like p of one flat hvd_mem_alloc buffer per dtype: gradients
        moved there are reduced in place in the ranks' buffers (no staging copies)."""
        by_dtype = {}
        for p in all_params:
            if p.requires_grad and p.device.type == "cpu":
                by_dtype.setdefault(p.dtype, []).append(p)
        views = {}
        for dtype, params in by_dtype.items():
            flat = shared_zeros(sum(p.numel() for p in params), dtype=dtype)
            at = 0
            for p in params:
                views[id(p)] = flat[at:at + p.numel()].view(p.shape)
                at += p.numel()
        return views

    def _use_shared_grad(self, p):
        """Makes p.grad its view of the shared buffer (copying a gradient autograd made anew,
        e.g. after zero_grad(set_to_none=True)); autograd then accumulates into the view."""
        view = self._shared_views.get(id(p))
        if view is None:
            return
        g = p.grad
        if g is None:
            p.grad = view.zero_()
        elif g.data_ptr() != view.data_ptr() and not g.is_sparse and g.dtype == view.dtype \
                and g.device == view.device:
            view.copy_(g)
            p.grad = view

    def _make_groups(self, groups, all_params):
        """id(p) -> the list of parameters reduced together with p (None: no groups)."""
        if groups is None:
            return None
        trainable = [p for p in all_params if p.requires_grad]
        if isinstance(groups, int):
            if groups < 0:
                raise ValueError("groups must be a non-negative int or a list of lists of "
                                 "tensors, got %r" % groups)
            if groups == 0:
                return None
            lists = even_groups(trainable, groups)
        else:
            lists = self._explicit_groups(groups, trainable)
            grouped = {id(p) for g in lists for p in g}
            lists += [[p] for p in trainable if id(p) not in grouped]
        by_param = {}
        for group in lists:
            for p in group:
                by_param[id(p)] = group
        return by_param

    @staticmethod
    def _explicit_groups(groups, trainable):
        """Lists of the optimizer's trainable parameters; others are left out, as Horovod."""
        known = {id(p) for p in trainable}
        seen = set()
        lists = []
        if isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
            raise ValueError("groups must be a non-negative int or a list of lists of tensors, "
                             "got %r" % (groups,))
        for group in groups:
            if isinstance(group, torch.Tensor) or not hasattr(group, "__iter__"):
                raise ValueError("groups must be a list of lists of tensors")
            members = []
            for p in group:
                if not isinstance(p, torch.Tensor):
                    raise ValueError("groups must contain only tensors, got %r" % (p,))
                if id(p) in seen:
                    raise ValueError("a parameter appears in more than one group")
                seen.add(id(p))
                if id(p) in known:
                    members.append(p)
            if members:
                lists.append(members)
        return lists

    def set_backward_passes_per_step(self, passes):
        if passes <= 0:
            raise ValueError("backward_passes_per_step must be > 0")
        self.backward_passes_per_step = passes
        for key in self._allreduce_delay:
            self._allreduce_delay[key] = passes

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    self._requires_update[id(p)] = p
                    # The AccumulateGrad node of p: its hook runs once p.grad is final.
                    acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    acc.register_hook(self._make_hook(p))
                    self._grad_accs.append(acc)

    def _scales(self):
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _allreduce_grad_async(self, p):
        self._use_shared_grad(p)
        if p.grad is None:  # unused in this step's graph: reduce zeros like Horovod
            p.grad = torch.zeros_like(p)
        name = self._parameter_names.get(id(p))
        tensor = p.grad
        if tensor.is_sparse:
            if not self.sparse_as_dense:
                return sparse_allreduce_async(tensor, name=name, op=self.op,
                                              process_set=self.process_set), None
            tensor = tensor.to_dense()
        compressed, ctx = self._compression.compress(tensor)
        pre, post = self._scales()
        handle = allreduce_async_(compressed, name=name, op=self.op, prescale_factor=pre,
                                  postscale_factor=post, process_set=self.process_set)
        return handle, (ctx, compressed)

    def _grouped_allreduce_async(self, params):
        for p in params:
            self._use_shared_grad(p)
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        pairs = [self._compression.compress(p.grad.to_dense() if p.grad.is_sparse else p.grad)
                 for p in params]
        pre, post = self._scales()
        name = self._parameter_names.get(id(params[0]))
        handle = grouped_allreduce_async_([c for c, _ in pairs], name=name, op=self.op,
                                          prescale_factor=pre, postscale_factor=post,
                                          process_set=self.process_set)
        return handle, [(ctx, c) for c, ctx in pairs]

    def _make_hook(self, p):
        def hook(*unused):
            key = id(p)
            if key in self._handles and self._handles[key][1] is not None:
                if self._allreduce_delay[key] <= 0:
                    raise AssertionError(
                        "Gradients were computed more than backward_passes_per_step times "
                        "before call to step(). Increase backward_passes_per_step to "
                        "accumulate gradients locally.")
            if p.grad is not None and p.grad.requires_grad:
                raise AssertionError("a gradient must not require grad (create_graph=True is "
                                     "not supported by DistributedOptimizer)")
            self._allreduce_delay[key] -= 1
            handle, ctx = None, None
            if self._allreduce_delay[key] == 0:
                if self._groups is None:
                    handle, ctx = self._allreduce_grad_async(p)
                else:
                    group = self._groups[key]
                    self._handles[key] = (p, None, None)
                    if all(id(q) in self._handles or not q.requires_grad for q in group) and \
                            all(self._allreduce_delay[id(q)] == 0 for q in group):
                        handle, ctx = self._grouped_allreduce_async(group)
                        for q in group:
                            self._handles[id(q)] = (q, handle, ctx)
                        return
            self._handles[key] = (p, handle, ctx)

        return hook

    def synchronize(self):
        """Waits for every gradient's reduction and writes the results into .grad."""
        if not self.process_set.included():
            self._synchronized = True
            return
        # Parameters whose hooks did not fire (not used in this step) still take part.
        for key, p in self._requires_update.items():
            if key not in self._handles:
                self._handles[key] = (p, None, None)
        started = set()
        for key, (p, handle, ctx) in list(self._handles.items()):
            if handle is not None or key in started:
                continue
            if self._groups is None:
                handle, ctx = self._allreduce_grad_async(p)
                self._handles[key] = (p, handle, ctx)
            else:
                group = self._groups[key]
                handle, ctx = self._grouped_allreduce_async(group)
                for q in group:
                    self._handles[id(q)] = (q, handle, ctx)
                    started.add(id(q))
        done = {}
        for key, (p, handle, ctx) in self._handles.items():
            if callable(handle):  # sparse: the callable gives the reduced sparse tensor
                p.grad = handle()
            elif isinstance(ctx, list):  # a group: one synchronize for all its members
                if handle not in done:
                    synchronize(handle)
                    done[handle] = True
                group = self._groups[key]
                cctx, reduced = ctx[[id(q) for q in group].index(key)]
                self._write_grad(p, reduced, cctx)
            else:
                synchronize(handle)
                cctx, reduced = ctx
                self._write_grad(p, reduced, cctx)
            self._allreduce_delay[key] = self.backward_passes_per_step
        self._handles.clear()
        self._synchronized = True

    def _write_grad(self, p, reduced, cctx):
        value = self._compression.decompress(reduced, cctx)
        if p.grad.is_sparse:
            p.grad = value.to_sparse()
        elif value is not p.grad:
            p.grad.copy_(value)

    @contextmanager
    def skip_synchronize(self):
        """Lets step() run without synchronizing (after an explicit synchronize())."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super().step(closure)

    def load_state_dict(self, *args, **kwargs):
        # Outstanding reductions belong to the state being replaced (elastic restore).
        self._handles.clear()
        self._synchronized = False
        self._should_synchronize = True
        for key in self._allreduce_delay:
            self._allreduce_delay[key] = self.backward_passes_per_step
        return super().load_state_dict(*args, **kwargs)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super().zero_grad(*args, **kwargs)


class _DistributedAdasumMixin:
    """Horovod's Adasum optimizer: each rank takes its local step, then the parameter deltas
    are combined with Adasum (per tensor) and applied from the common starting point."""

    def _hvd_setup(self, named_parameters, compression, backward_passes_per_step):
        self._compression = compression
        self.backward_passes_per_step = backward_passes_per_step
        names = {}
        if named_parameters is not None:
            for name, p in named_parameters:
                names[id(p)] = name
        self._parameter_names = names

    def synchronize(self):
        pass  # deltas are combined in step()

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError("Skipping synchronization is not supported when using Adasum "
                             "optimizer.")
        yield  # pragma: no cover (makes this a generator)

    def step(self, closure=None):
        params = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        starts = [p.detach().clone() for p in params]
        loss = super().step(closure)
        pending = []
        for i, (p, start) in enumerate(zip(params, starts)):
            delta, ctx = self._compression.compress(p.detach() - start)
            name = self._parameter_names.get(id(p), "adasum.delta.%d" % i)
            pending.append((p, start, delta, ctx,
                            allreduce_async_(delta, name=name, op=Adasum)))
        for p, start, delta, ctx, handle in pending:
            synchronize(handle)
            with torch.no_grad():
                p.copy_(start + self._compression.decompress(delta, ctx))
        return loss


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set, shared_gradients=None):
    """Returns an optimizer of the same class as `optimizer` (sharing its parameter groups)
    whose step() first averages (op) the gradients over the ranks of process_set.

    named_parameters: model.named_parameters(), used to name the reductions (recommended).
    compression: Compression.none or Compression.fp16 for what is sent.
    backward_passes_per_step: local backward passes accumulated per reduction.
    gradient_predivide_factor: with Average, scale by 1/f before and f/size after the sum.
    groups: an int (that many groups of parameters reduced together) or lists of parameters.
    sparse_as_dense: reduce sparse gradients as dense tensors.
    shared_gradients: keep the CPU gradients in hvd_mem_alloc memory (one flat buffer per
        dtype; p.grad becomes a view of it), which the ranks of a host reduce in place in each
        other's buffers. Default: HVD_TORCH_SHARED_GRADIENTS=1 turns it on. Gradients stay in
        the buffer across steps with zero_grad(set_to_none=False); after set_to_none=True each
        new gradient is copied into it once per step.
    """
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be removed "
                      "in v0.23.0.", DeprecationWarning)
        if groups is None:
            groups = num_groups
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    if op == Adasum and process_set is not global_process_set:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")
    base = optimizer.__class__
    if op == Adasum and size() > 1:
        cls = type(base.__name__, (_DistributedAdasumMixin, base), {})
        opt = cls.__new__(cls)
        base.__init__(opt, optimizer.param_groups)
        opt._hvd_setup(named_parameters, compression, backward_passes_per_step)
        return opt
    cls = type(base.__name__, (_DistributedMixin, base), {})
    # Build the new optimizer around the same parameter groups (hyper-parameters included).
    opt = cls.__new__(cls)
    base.__init__(opt, optimizer.param_groups)
    if shared_gradients is None:
        shared_gradients = os.environ.get("HVD_TORCH_SHARED_GRADIENTS", "0").strip() == "1"
    opt._hvd_setup(named_parameters, compression, backward_passes_per_step, op,
                   gradient_predivide_factor, groups, sparse_as_dense, process_set,
                   shared_gradients)
    return opt
