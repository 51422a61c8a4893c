# SPDX-License-Identifier: Apache-2.0
"""horovod.torch's model and optimizer helpers: broadcast_parameters,
broadcast_optimizer_state, broadcast_object and allgather_object."""

import collections

import torch

from hvd import _op_args
from hvd.process_sets import global_process_set
from hvd.torch import _tensors
from hvd.torch.mpi_ops import (allgather_object, broadcast_async_, broadcast_object,  # noqa: F401
                               rank, synchronize)

__all__ = ["broadcast_parameters", "broadcast_optimizer_state", "broadcast_object",
           "allgather_object"]

# The module of hvd.torch's DistributedOptimizer classes: their step() allreduces gradients,
# which broadcast_optimizer_state must not trigger (only some ranks may need the warm-up step).
_DISTRIBUTED_OPTIMIZER_MODULE = "hvd.torch.optimizer"


def _named_tensors(params):
    """params as a list of (name or None, tensor), in an order every rank agrees on."""
    if isinstance(params, torch.Tensor) or isinstance(params, (str, bytes)):
        raise ValueError("invalid params of type: %s (expected a dict such as "
                         "model.state_dict(), or a list of tensors or of (name, tensor) pairs)"
                         % type(params).__name__)
    if isinstance(params, dict):
        # Dicts are matched by key, sorted so that insertion order does not matter.
        pairs = sorted(((str(k), v) for k, v in params.items()), key=lambda kv: kv[0])
    else:
        try:
            items = list(params)
        except TypeError:
            raise ValueError("invalid params of type: %s (expected a dict such as "
                             "model.state_dict(), or a list of tensors or of (name, tensor) "
                             "pairs)" % type(params).__name__) from None
        pairs = []
        for item in items:
            if isinstance(item, tuple):
                if len(item) != 2:
                    raise ValueError("params entries that are tuples must be (name, tensor), "
                                     "got a tuple of %d" % len(item))
                name, tensor = item
                pairs.append((None if name is None else str(name), tensor))
            else:
                pairs.append((None, item))
    for name, tensor in pairs:
        if not isinstance(tensor, torch.Tensor):
            raise ValueError("params entry %s is a %s, not a torch.Tensor"
                             % (repr(name) if name is not None else "(unnamed)",
                                type(tensor).__name__))
    return pairs


def _broadcast_in_place(pairs, root_rank, prefix):
    """Starts a broadcast for every (name, tensor) pair, then waits for all of them. Named
    tensors are matched across ranks as prefix + name, unnamed ones by their order."""
    for _, tensor in pairs:
        _tensors.desc(tensor)  # unsupported tensors fail here, before anything is queued
    handles = []
    try:
        for name, tensor in pairs:
            handles.append(broadcast_async_(tensor, root_rank,
                                            None if name is None else prefix + name))
    finally:
        # Even when an enqueue failed, wait for what was started: its tensors stay in use
        # until then.
        errors = []
        for handle in handles:
            try:
                synchronize(handle)
            except Exception as e:  # keep waiting for the rest, report the first failure
                errors.append(e)
    if errors:
        raise errors[0]


def broadcast_parameters(params, root_rank):
    """Overwrites params on every rank with root_rank's, in place.

    params: a dict of tensors such as ``model.state_dict()`` (matched by key), or a list (or
    other iterable) of tensors, e.g. ``model.parameters()``, or of (name, tensor) pairs, e.g.
    ``model.named_parameters()``. All ranks pass the same structure. The broadcasts run
    asynchronously and this returns once all of them finished."""
    _op_args.root_in_set(root_rank, global_process_set)
    pairs = _named_tensors(params)
    _broadcast_in_place(pairs, root_rank, "broadcast_parameters.")


def _local_step(optimizer):
    """optimizer.step() of the torch optimizer itself: for a DistributedOptimizer, the step of
    the first class in its MRO that is not hvd.torch.optimizer's."""
    mro = type(optimizer).__mro__
    if all(klass.__module__ != _DISTRIBUTED_OPTIMIZER_MODULE for klass in mro):
        return optimizer.step()
    for klass in mro:
        if klass.__module__ != _DISTRIBUTED_OPTIMIZER_MODULE and "step" in vars(klass):
            return klass.step(optimizer)
    raise ValueError("cannot find the step() of the optimizer wrapped by %s"
                     % type(optimizer).__name__)


def _sparse_parameter_ids(model):
    if model is None:
        return set()
    ids = set()
    for module in model.modules():
        if isinstance(module, torch.nn.Embedding) and module.sparse:
            ids.update(id(p) for p in module.parameters())
    return ids


def _create_state(optimizer, model):
    """Gives a fresh optimizer its per-parameter state by one step on zero gradients (the
    gradients are left at zero, as Horovod does)."""
    sparse_ids = _sparse_parameter_ids(model)
    sparse_everywhere = isinstance(optimizer, torch.optim.SparseAdam)
    for group in optimizer.param_groups:
        for p in group["params"]:
            if not p.requires_grad or p in optimizer.state:
                continue
            grad = torch.zeros_like(p.data)
            if sparse_everywhere or (isinstance(optimizer, torch.optim.SGD)
                                     and id(p) in sparse_ids):
                grad = grad.to_sparse()
            p.grad = grad
    # Not a DistributedOptimizer's step: it would allreduce, and ranks that already have
    # state do not get here.
    _local_step(optimizer)


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """Overwrites the optimizer's state and hyper-parameters on every rank with root_rank's.

    Tensors in the per-parameter state (momentum buffers, Adam moments, step counts) are
    broadcast in place; Python values there and every option of every parameter group (lr,
    momentum, betas ...) go through one broadcast_object. An optimizer without state yet (no
    step taken) first gets it from one step on zero gradients. model (optional) tells which
    parameters belong to sparse embeddings, whose warm-up gradients are then sparse.
    torch.optim.LBFGS is not supported (ValueError)."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise ValueError("expected a torch.optim.Optimizer, got %s" % type(optimizer).__name__)
    _op_args.root_in_set(root_rank, global_process_set)

    if len(optimizer.state) == 0:
        _create_state(optimizer, model)
    if len(optimizer.state) == 0:
        return  # a stateless optimizer (e.g. plain SGD): nothing to broadcast

    tensors = []  # (name, tensor): names built from the state key and its occurrence
    values = {}  # (group index, parameter index, state key) -> a non-tensor state value
    occurrences = collections.Counter()
    for gi, group in enumerate(optimizer.param_groups):
        for pi, p in enumerate(group["params"]):
            state = optimizer.state.get(p)
            if not state:
                continue  # e.g. requires_grad=False: no state on any rank
            for key, value in state.items():
                occurrences[key] += 1
                if torch.is_tensor(value):
                    tensors.append(("%s.%d" % (key, occurrences[key]), value))
                else:
                    values[(gi, pi, key)] = value
    options = [{k: v for k, v in group.items() if k != "params"}
               for group in optimizer.param_groups]

    _broadcast_in_place(tensors, root_rank, "broadcast_optimizer_state.")
    root = broadcast_object({"options": options, "values": values}, root_rank,
                            name="broadcast_optimizer_state.values")
    if rank() == root_rank:
        return
    if len(root["options"]) != len(optimizer.param_groups):
        raise ValueError("the optimizer on rank %d has %d parameter groups, the one on this rank "
                         "%d" % (root_rank, len(root["options"]), len(optimizer.param_groups)))
    for group, group_options in zip(optimizer.param_groups, root["options"]):
        group.update(group_options)
    for (gi, pi, key), value in root["values"].items():
        params = optimizer.param_groups[gi]["params"]
        if pi >= len(params):
            raise ValueError("parameter group %d has only %d parameters on this rank, more on "
                             "rank %d" % (gi, len(params), root_rank))
        optimizer.state[params[pi]][key] = value

