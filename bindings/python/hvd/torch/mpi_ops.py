# SPDX-License-Identifier: Apache-2.0
"""horovod.torch's collectives on torch tensors, with autograd, over libhvd's C ABI.

Async functions return integer handles for poll() and synchronize(). The input tensors (and
outputs) stay referenced by the handle table until the op completes, so their memory cannot
be freed while libhvd uses it.
"""

import torch

from hvd import _basics, _op_args, _runtime
from hvd._errors import HorovodInternalError
from hvd._backend import backend
from hvd._objects import allgather_object, broadcast_object  # noqa: F401 (re-exported)
from hvd._sync_ops import barrier, join  # noqa: F401 (re-exported)
from hvd.process_sets import (ProcessSet, add_process_set, global_process_set,  # noqa: F401
                              remove_process_set)
from hvd.torch import _tensors
from hvd.torch.compression import Compression

# The basic API, shared with the hvd package.
init = _basics.init
shutdown = _basics.shutdown
is_initialized = _basics.is_initialized
start_timeline = _basics.start_timeline
stop_timeline = _basics.stop_timeline
size = _basics.size
local_size = _basics.local_size
cross_size = _basics.cross_size
rank = _basics.rank
local_rank = _basics.local_rank
cross_rank = _basics.cross_rank
is_homogeneous = _basics.is_homogeneous
mpi_threads_supported = _basics.mpi_threads_supported
mpi_enabled = _basics.mpi_enabled
mpi_built = _basics.mpi_built
gloo_enabled = _basics.gloo_enabled
gloo_built = _basics.gloo_built
nccl_built = _basics.nccl_built
ddl_built = _basics.ddl_built
ccl_built = _basics.ccl_built
cuda_built = _basics.cuda_built
rocm_built = _basics.rocm_built

Average = _basics.Average
Sum = _basics.Sum
Adasum = _basics.Adasum
Min = _basics.Min
Max = _basics.Max
Product = _basics.Product

__all__ = [
    "HorovodInternalError", "allreduce", "allreduce_async", "allreduce_", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_async", "grouped_allreduce_",
    "grouped_allreduce_async_", "sparse_allreduce_async", "allgather", "allgather_async",
    "grouped_allgather", "grouped_allgather_async", "broadcast", "broadcast_async",
    "broadcast_", "broadcast_async_", "alltoall", "alltoall_async", "reducescatter",
    "reducescatter_async", "grouped_reducescatter", "grouped_reducescatter_async", "join",
    "barrier", "poll", "synchronize"
]


def _check_adasum(process_set):
    if process_set is not None and process_set.process_set_id != 0:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")
    n = size()
    if n & (n - 1):
        raise NotImplementedError("Running Adasum with non-power of 2 ranks is not supported yet.")


def _enqueue(kind, ins, outs, keep, finish, **kwargs):
    ins, outs, keep, stream = _tensors.on_current_stream(ins, outs, keep)
    # Results are valid on the stream current at the enqueue, with no wait on the host, and
    # on the stream current at synchronize(), which waits for that one (autograd's hooks of
    # DistributedOptimizer enqueue on the stream of each gradient's node; step() may read on
    # another). Outputs the library owns are copied into new tensors on the op's stream,
    # which the request's release then frees them on.
    if stream is not None:
        kwargs["stream"] = stream.cuda_stream
        if finish is not None:
            finish = _tensors.on_stream(stream, finish)
    try:
        return _runtime.enqueue(kind, ins, outs, keep=keep, finish=finish, **kwargs)
    except ValueError:
        raise
    except RuntimeError as e:
        raise HorovodInternalError(str(e)) from e


# ------------------------------------------------------------------ allreduce

# The common case in one call of the backend, or None (see _tensors.fast_allreduce).
_fast_allreduce = _tensors.fast_allreduce
_fast_grouped_allreduce = _tensors.fast_grouped_allreduce
_fast_allreduce_now = _tensors.fast_allreduce_now

# sparse_coo_tensor(check_invariants=...) came with torch.sparse.check_sparse_tensor_invariants.
_HAS_CHECK_INVARIANTS = hasattr(torch.sparse, "check_sparse_tensor_invariants")


def _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor,
                     process_set):
    if op == Adasum:
        _check_adasum(process_set)
    ins = [_tensors.desc(tensor)]
    outs = ins if output is tensor else [_tensors.desc(output)]  # in place: described once
    return _enqueue("allreduce", ins, outs,
                    (tensor, output), lambda req: output, name=_op_args.check_name(name),
                    process_set=process_set, op=op, prescale=prescale_factor,
                    postscale=postscale_factor)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts averaging (or op-reducing) tensor over the set; returns a handle.
    synchronize(handle) gives a new tensor; tensor itself is not modified."""
    handle = _fast_allreduce(tensor, None, average, name, op, prescale_factor, postscale_factor,
                             process_set)
    if handle is not None:
        return handle
    op = _op_args.reduce_op(op, average)
    tensor = _tensors.contiguous(tensor)
    return _allreduce_async(tensor, torch.empty_like(tensor), name, op, prescale_factor,
                            postscale_factor, process_set)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Like allreduce_async, writing the result into tensor."""
    handle = _fast_allreduce(tensor, tensor, average, name, op, prescale_factor,
                             postscale_factor, process_set)
    if handle is not None:
        return handle
    op = _op_args.reduce_op(op, average)
    return _allreduce_async(tensor, tensor, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces tensor in place over the set and returns it."""
    done = _fast_allreduce_now(tensor, average, name, op, prescale_factor, postscale_factor,
                               process_set)
    if done is not None:
        return done
    return synchronize(
        allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                         process_set))


class HorovodAllreduce(torch.autograd.Function):
    """allreduce as an autograd function: the gradient is allreduced the same way."""

    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor, process_set):
        ctx.average, ctx.op, ctx.process_set = average, op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return synchronize(
            allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor,
                            process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, average=ctx.average, op=ctx.op,
                         prescale_factor=ctx.prescale_factor,
                         postscale_factor=ctx.postscale_factor, process_set=ctx.process_set)
        return grad, None, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """A new tensor: tensor averaged (default) or reduced with op over all ranks of the set.
    Differentiable. compression (e.g. Compression.fp16) applies to what is sent."""
    sent, cctx = compression.compress(tensor)
    reduced = HorovodAllreduce.apply(sent, average, name, op, prescale_factor, postscale_factor,
                                     process_set)
    return compression.decompress(reduced, cctx)


def _grouped_allreduce_async(tensors, outputs, name, op, prescale_factor, postscale_factor,
                             process_set):
    if op == Adasum:
        _check_adasum(process_set)
    ins, outs = _tensors.in_out(tensors, outputs)
    return _enqueue("grouped_allreduce", ins, outs, (tensors, outputs),
                    lambda req: list(outputs), name=_op_args.check_name(name),
                    process_set=process_set, op=op, prescale=prescale_factor,
                    postscale=postscale_factor)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing a list of tensors as one unit; synchronize gives a list."""
    handle = _fast_grouped_allreduce(tensors, False, average, name, op, prescale_factor,
                                     postscale_factor, process_set)
    if handle is not None:
        return handle
    op = _op_args.reduce_op(op, average)
    tensors = [_tensors.contiguous(t) for t in tensors]
    return _grouped_allreduce_async(tensors, [torch.empty_like(t) for t in tensors], name, op,
                                    prescale_factor, postscale_factor, process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    """Like grouped_allreduce_async, writing the results into the tensors."""
    handle = _fast_grouped_allreduce(tensors, True, average, name, op, prescale_factor,
                                     postscale_factor, process_set)
    if handle is not None:
        return handle
    op = _op_args.reduce_op(op, average)
    tensors = list(tensors)
    return _grouped_allreduce_async(tensors, tensors, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(
        grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                 process_set))


class HorovodGroupedAllreduce(torch.autograd.Function):

    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor, process_set,
                *tensors):
        ctx.average, ctx.op, ctx.process_set = average, op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return tuple(synchronize(
            grouped_allreduce_async(list(tensors), average, name, op, prescale_factor,
                                    postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grad_output):
        grads = grouped_allreduce(list(grad_output), average=ctx.average, op=ctx.op,
                                  prescale_factor=ctx.prescale_factor,
                                  postscale_factor=ctx.postscale_factor,
                                  process_set=ctx.process_set)
        return (None, None, None, None, None, None, *grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """allreduce of a list of tensors negotiated and completed as one unit; a new list."""
    pairs = [compression.compress(t) for t in tensors]
    reduced = HorovodGroupedAllreduce.apply(average, name, op, prescale_factor,
                                            postscale_factor, process_set,
                                            *[p[0] for p in pairs])
    return [compression.decompress(t, p[1]) for t, p in zip(reduced, pairs)]


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Starts reducing a sparse tensor by gathering every rank's indices and values.
    Returns a callable (as Horovod does) that waits and gives the sparse result."""
    if op not in (Average, Sum):
        raise NotImplementedError("sparse allreduce supports Average and Sum only")
    t = tensor.coalesce()
    values = t.values() / _op_args.set_size(process_set) if op == Average else t.values()
    indices_handle = allgather_async(t.indices().transpose(0, 1).contiguous(),
                                     name="%s.indices" % name if name else None,
                                     process_set=process_set)
    values_handle = allgather_async(values.contiguous(),
                                    name="%s.values" % name if name else None,
                                    process_set=process_set)

    def handle():
        indices = synchronize(indices_handle).transpose(0, 1)
        values = synchronize(values_handle)
        # The indices came from coalesced tensors of every rank: valid by construction.
        if _HAS_CHECK_INVARIANTS:
            return torch.sparse_coo_tensor(indices, values, t.size(), check_invariants=False)
        return torch.sparse_coo_tensor(indices, values, t.size())

    return handle


# ------------------------------------------------------------------ allgather


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating every rank's tensor along dimension 0 (ragged allowed)."""
    tensor = _tensors.contiguous(tensor)
    if tensor.dim() == 0:
        raise ValueError("allgather needs a tensor with at least one dimension")
    return _enqueue("allgather", [_tensors.desc(tensor)], None, tensor,
                    lambda req: _tensors.copy_output(req, 0, tensor),
                    name=_op_args.check_name(name), process_set=process_set)


class HorovodAllgather(torch.autograd.Function):

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim, ctx.process_set = tensor.shape[0], process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        offset = _row_offset([ctx.dim], ctx.process_set)[0]
        return grad.narrow(0, offset, ctx.dim), None, None


def _row_offset(dims, process_set):
    """For each of this rank's first dimensions: the rows of lower ranks of the set."""
    mine = torch.tensor([dims], dtype=torch.int64)
    everyone = allgather(mine, process_set=process_set)
    below = everyone[:_op_args.set_rank(process_set)]
    return [int(v) for v in below.sum(dim=0)] if below.numel() else [0] * len(dims)


def allgather(tensor, name=None, process_set=global_process_set):
    """A new tensor: every rank's tensor concatenated along dimension 0 in rank order.
    Differentiable."""
    if isinstance(tensor, torch.Tensor) and tensor.dim() == 0:
        raise ValueError("allgather needs a tensor with at least one dimension")
    return HorovodAllgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    tensors = [_tensors.contiguous(t) for t in tensors]
    if any(t.dim() == 0 for t in tensors):
        raise ValueError("allgather needs tensors with at least one dimension")
    return _enqueue("grouped_allgather", [_tensors.desc(t) for t in tensors], None, tensors,
                    lambda req: [_tensors.copy_output(req, i, t) for i, t in enumerate(tensors)],
                    name=_op_args.check_name(name), process_set=process_set)


class HorovodGroupedAllgather(torch.autograd.Function):

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims, ctx.process_set = [t.shape[0] for t in tensors], process_set
        return tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grad_output):
        grads = grouped_allreduce(list(grad_output), op=Average, process_set=ctx.process_set)
        offsets = _row_offset(ctx.dims, ctx.process_set)
        return (None, None, *[g.narrow(0, o, d) for g, o, d in zip(grads, offsets, ctx.dims)])


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    if any(isinstance(t, torch.Tensor) and t.dim() == 0 for t in tensors):
        raise ValueError("allgather needs tensors with at least one dimension")
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))


# ------------------------------------------------------------------ broadcast


def _broadcast_async(tensor, output, root_rank, name, process_set):
    root = _op_args.root_in_set(root_rank, process_set)
    ins = [_tensors.desc(tensor)]
    outs = ins if output is tensor else [_tensors.desc(output)]  # in place: described once
    return _enqueue("broadcast", ins, outs, (tensor, output), lambda req: output,
                    name=_op_args.check_name(name), process_set=process_set, root=root)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts copying root_rank's tensor (root_rank: a global rank) into a new tensor."""
    tensor = _tensors.contiguous(tensor)
    return _broadcast_async(tensor, torch.empty_like(tensor), root_rank, name, process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async(tensor, tensor, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Overwrites tensor with root_rank's and returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


class HorovodBroadcast(torch.autograd.Function):

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """A new tensor holding root_rank's tensor. Differentiable."""
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


# ------------------------------------------------------------------ alltoall


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall; synchronize gives (output, received_splits)."""
    tensor = _tensors.contiguous(tensor)
    split_list = _op_args.splits_list(splits)
    n = _op_args.set_size(process_set)

    def finish(req):
        received = torch.tensor(backend.received_splits(req, n), dtype=torch.int32)
        return _tensors.copy_output(req, 0, tensor), received

    return _enqueue("alltoall", [_tensors.desc(tensor)], None, tensor, finish,
                    name=_op_args.check_name(name), process_set=process_set, splits=split_list)


class HorovodAlltoall(torch.autograd.Function):

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.process_set, ctx.received = process_set, received
        if splits is None:
            return output
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, *unused):
        grad, _ = alltoall(grad_output.contiguous(), splits=ctx.received,
                           process_set=ctx.process_set)
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends splits[j] rows (dimension 0) to rank j of the set (even split by default).
    Returns the received rows, and with splits also how many came from each rank."""
    return HorovodAlltoall.apply(tensor, splits, name, process_set)


# ------------------------------------------------------------------ reducescatter


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    tensor = _tensors.contiguous(tensor)
    return _enqueue("reducescatter", [_tensors.desc(tensor)], None, tensor,
                    lambda req: _tensors.copy_output(req, 0, tensor),
                    name=_op_args.check_name(name), process_set=process_set,
                    op=_op_args.reduce_op(op, None), prescale=prescale_factor,
                    postscale=postscale_factor)


def _reducescatter_grad(grads, op, process_set, prescale_factor, postscale_factor):
    factor = prescale_factor * postscale_factor * (_op_args.set_size(process_set) if op == Sum else 1)
    return [g * factor if factor != 1 else g for g in grads]


class HorovodReducescatter(torch.autograd.Function):

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.op, ctx.process_set = op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                               postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = _reducescatter_grad([grad_output], ctx.op, ctx.process_set,
                                      ctx.prescale_factor, ctx.postscale_factor)
        return allgather(grad, process_set=ctx.process_set), None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of rows of the reduction over the set (Average or Sum): the first
    dimension is split so that lower ranks get one more row when it does not divide."""
    sent, cctx = compression.compress(tensor)
    out = HorovodReducescatter.apply(sent, name, op, process_set, prescale_factor,
                                     postscale_factor)
    return compression.decompress(out, cctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    tensors = [_tensors.contiguous(t) for t in tensors]
    return _enqueue("grouped_reducescatter", [_tensors.desc(t) for t in tensors], None, tensors,
                    lambda req: [_tensors.copy_output(req, i, t) for i, t in enumerate(tensors)],
                    name=_op_args.check_name(name), process_set=process_set,
                    op=_op_args.reduce_op(op, None), prescale=prescale_factor,
                    postscale=postscale_factor)


class HorovodGroupedReducescatter(torch.autograd.Function):

    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.op, ctx.process_set = op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return tuple(synchronize(grouped_reducescatter_async(
            list(tensors), name, op, process_set, prescale_factor, postscale_factor)))

    @staticmethod
    def backward(ctx, *grad_output):
        grads = _reducescatter_grad(list(grad_output), ctx.op, ctx.process_set,
                                    ctx.prescale_factor, ctx.postscale_factor)
        return (None, None, None, None, None,
                *grouped_allgather(grads, process_set=ctx.process_set))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    pairs = [compression.compress(t) for t in tensors]
    outs = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                             postscale_factor, *[p[0] for p in pairs])
    return [compression.decompress(t, p[1]) for t, p in zip(outs, pairs)]


# ------------------------------------------------------------------ completion, join, barrier


def poll(handle):
    """True once the op behind handle finished; synchronize() then does not block."""
    return _runtime.poll(handle)


_synchronize = _runtime.requests.synchronize


def synchronize(handle):
    """Waits for an async op and returns its result (None for an unknown handle, as
    Horovod does). Raises HorovodInternalError if the op failed."""
    return _synchronize(handle, True)


# The same in one call of the backend where it has one (pybind11): no Python frame per op.
synchronize = getattr(_runtime.requests, "synchronize_or_none", None) or synchronize
