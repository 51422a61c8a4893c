# SPDX-License-Identifier: Apache-2.0
"""Horovod's collectives on jax.Arrays, eagerly and inside jax.jit, differentiable.

Eagerly (concrete arrays) an op runs at once through hvd's NumPy path, named like every
eager op (unnamed ones by libhvd in enqueue order). Under a trace (jax.jit, jax.grad's
linearisation, lax.cond ...) it becomes an XLA custom call (hvd/jax/_ffi.py, which says how
traced ops are named). Under jit, allgather and alltoall learn the other ranks' row counts
(and splits) by a small collective when the function is traced, so all ranks must trace it
together: a rank that traces again (its shapes changed) while the others reuse their trace
waits for them until the op timeout. A trace whose counts are no longer true fails on every
rank with HorovodInternalError rather than delivering wrong rows.

Gradients follow Horovod: allreduce's is the same allreduce of the cotangent, allgather's an
average of the cotangent cut to this rank's rows, broadcast's an average kept on the root,
alltoall's the reverse alltoall, reducescatter's an allgather.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hvd import _numpy_ops, _op_args, _runtime
from hvd._basics import (Adasum, Average, Max, Min, Product, Sum, cross_rank,  # noqa: F401
                         cross_size, init, is_initialized, local_rank, local_size, rank,
                         shutdown, size, start_timeline, stop_timeline)
from hvd._errors import HorovodInternalError  # noqa: F401
from hvd._objects import allgather_object, broadcast_object  # noqa: F401
from hvd._sync_ops import barrier, join  # noqa: F401
from hvd.process_sets import (ProcessSet, add_process_set, global_process_set,  # noqa: F401
                              remove_process_set)
from hvd.jax import _ffi


def _traced(xs):
    return any(isinstance(x, jax.core.Tracer) for x in xs)


def _leaves(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    if not leaves:
        raise ValueError("expected a jax.Array or a pytree of them, got %r" % (tree,))
    return leaves, treedef


def _host(x):
    return np.asarray(x)


# ------------------------------------------------------------------ allreduce


def _allreduce_run(params, xs):
    name, op, prescale, postscale, process_set = params
    kind = "allreduce" if len(xs) == 1 else "grouped_allreduce"
    if _traced(xs):
        return list(_ffi.allreduce([jnp.asarray(x) for x in xs], _ffi.op_name(kind, name), op,
                                   prescale, postscale, process_set))
    arrays = [_host(x) for x in xs]
    if len(arrays) == 1:
        outs = [_numpy_ops.allreduce(arrays[0], name=name, op=op, prescale_factor=prescale,
                                     postscale_factor=postscale, process_set=process_set)]
    else:
        outs = _numpy_ops.grouped_allreduce(arrays, name=name, op=op, prescale_factor=prescale,
                                            postscale_factor=postscale,
                                            process_set=process_set)
    return [jnp.asarray(o) for o in outs]


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _allreduce_diff(params, xs):
    return _allreduce_run(params, xs)


def _allreduce_fwd(params, xs):
    return _allreduce_run(params, xs), None


def _allreduce_bwd(params, _, cts):
    return (_allreduce_run((None,) + params[1:], list(cts)),)


_allreduce_diff.defvjp(_allreduce_fwd, _allreduce_bwd)


def allreduce(tensor, average=None, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    """tensor (a jax.Array, or a pytree of them reduced as one unit) averaged (default) or
    reduced with op over all ranks of the set; a new array or pytree. Differentiable."""
    op = _op_args.reduce_op(op, average)
    _op_args.check_adasum(op, process_set)
    leaves, treedef = _leaves(tensor)
    params = (_op_args.check_name(name), op, float(prescale_factor), float(postscale_factor),
              process_set)
    return jax.tree_util.tree_unflatten(treedef, _allreduce_diff(params, leaves))


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    """allreduce of a list of arrays (or a pytree) negotiated and completed as one unit."""
    op = _op_args.reduce_op(op, average)
    _op_args.check_adasum(op, process_set)
    leaves, treedef = _leaves(tensors)
    params = (_op_args.check_name(name), op, float(prescale_factor), float(postscale_factor),
              process_set)
    out = jax.tree_util.tree_unflatten(treedef, _allreduce_diff(params, list(leaves)))
    return list(out) if isinstance(tensors, (list, tuple)) else out


# ------------------------------------------------------------------ allgather


def _row_counts(rows, name, process_set):
    """Every member's first dimension, given this rank's (one small eager allgather)."""
    mine = np.array([rows], dtype=np.int64)
    return [int(r) for r in _numpy_ops.allgather(mine, name=name, process_set=process_set)]


def _allgather_run(params, x):
    name, process_set = params
    if _traced([x]):
        _ffi.check_dtype(x)
        full = _ffi.op_name("allgather", name)
        rows = _row_counts(x.shape[0], full[len("allgather."):] + ".rows", process_set)
        return _ffi.allgather(jnp.asarray(x), sum(rows), full, process_set)
    return jnp.asarray(_numpy_ops.allgather(_host(x), name=name, process_set=process_set))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _allgather_diff(params, x):
    return _allgather_run(params, x)


def _allgather_fwd(params, x):
    # The residual's shape carries this rank's rows (static even under jit).
    return _allgather_run(params, x), jnp.zeros((x.shape[0], 0), jnp.float32)


def _allgather_bwd(params, mine, ct):
    process_set = params[1]
    (grad,) = _allreduce_run((None, Average, 1.0, 1.0, process_set), [ct])
    rows = _row_counts(mine.shape[0], None, process_set)
    offset = sum(rows[:_op_args.set_rank(process_set)])
    return (jax.lax.slice_in_dim(grad, offset, offset + mine.shape[0], axis=0),)


_allgather_diff.defvjp(_allgather_fwd, _allgather_bwd)


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor concatenated along dimension 0 in rank order (the first dimension
    may differ between ranks). Differentiable."""
    if jnp.ndim(tensor) == 0:
        raise ValueError("allgather needs a tensor with at least one dimension")
    return _allgather_diff((_op_args.check_name(name), process_set), tensor)


# ------------------------------------------------------------------ broadcast


def _broadcast_run(params, x):
    name, root_rank, process_set = params
    if _traced([x]):
        root = _op_args.root_in_set(root_rank, process_set)
        return _ffi.broadcast(jnp.asarray(x), root, _ffi.op_name("broadcast", name),
                              process_set)
    return jnp.asarray(_numpy_ops.broadcast(_host(x), root_rank, name=name,
                                            process_set=process_set))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _broadcast_diff(params, x):
    return _broadcast_run(params, x)


def _broadcast_fwd(params, x):
    return _broadcast_run(params, x), None


def _broadcast_bwd(params, _, ct):
    _, root_rank, process_set = params
    (grad,) = _allreduce_run((None, Average, 1.0, 1.0, process_set), [ct])
    return (grad if rank() == root_rank else jnp.zeros_like(grad),)


_broadcast_diff.defvjp(_broadcast_fwd, _broadcast_bwd)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """A new array holding root_rank's tensor (root_rank: a global rank). Differentiable."""
    _op_args.root_in_set(root_rank, process_set)
    return _broadcast_diff((_op_args.check_name(name), root_rank, process_set), tensor)


# ------------------------------------------------------------------ alltoall


def _alltoall_splits(x, splits, process_set):
    """The rows sent to each member of the set, as ints (splits None: an even split)."""
    n = _op_args.set_size(process_set)
    if jnp.ndim(x) == 0:
        raise ValueError("alltoall needs a tensor with at least one dimension")
    if splits is None:
        if x.shape[0] % n:
            raise ValueError("alltoall: the first dimension %d does not divide by the %d ranks "
                             "of the set; pass splits" % (x.shape[0], n))
        return [x.shape[0] // n] * n
    if isinstance(splits, jax.core.Tracer):
        raise ValueError("alltoall under jax.jit needs splits known when tracing (a list or a "
                         "NumPy array), not a traced value")
    sent = _op_args.splits_list(splits if isinstance(splits, (list, tuple)) else np.asarray(splits))
    if len(sent) != n or any(s < 0 for s in sent) or sum(sent) > x.shape[0]:
        raise ValueError("alltoall: splits %r must be %d non-negative ints summing to at most "
                         "the first dimension %d" % (sent, n, x.shape[0]))
    return sent


def _received(sent, name, process_set):
    """The rows this rank receives from each member (one small eager allgather)."""
    table = _numpy_ops.allgather(np.array([sent], dtype=np.int32), name=name,
                                 process_set=process_set)
    return [int(v) for v in table[:, _op_args.set_rank(process_set)]]


def _alltoall_run(params, x):
    """(rows received, how many came from each member as an int32 array)."""
    name, sent, even, process_set = params
    if _traced([x]):
        _ffi.check_dtype(x)
        full = _ffi.op_name("alltoall", name)
        received = _received(sent, full[len("alltoall."):] + ".splits", process_set)
        out = _ffi.alltoall(jnp.asarray(x), None if even else sent, received, full, process_set)
    else:
        out, received = _numpy_ops.alltoall(_host(x), splits=list(sent), name=name,
                                            process_set=process_set)
    return jnp.asarray(out), jnp.asarray(received, dtype=jnp.int32)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _alltoall_diff(params, x):
    return _alltoall_run(params, x)


def _alltoall_fwd(params, x):
    return _alltoall_run(params, x), None


def _alltoall_bwd(params, _, cts):
    _, sent, _, process_set = params
    back = _received(sent, None, process_set)  # the rows each member sent here
    return (alltoall(cts[0], splits=back, process_set=process_set)[0],)


_alltoall_diff.defvjp(_alltoall_fwd, _alltoall_bwd)


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends splits[j] rows (dimension 0) to rank j of the set (even split by default).
    Returns the received rows, and with splits also how many came from each rank (int32).
    Differentiable. Under jax.jit splits must be known when tracing."""
    sent = _alltoall_splits(tensor, splits, process_set)
    params = (_op_args.check_name(name), tuple(sent), splits is None, process_set)
    out, received = _alltoall_diff(params, tensor)
    return out if splits is None else (out, received)


# ------------------------------------------------------------------ reducescatter


def _block_rows(d0, n, r):
    return d0 // n + (1 if r < d0 % n else 0)


def _reducescatter_run(params, x):
    name, op, prescale, postscale, process_set = params
    if _traced([x]):
        if jnp.ndim(x) == 0:
            raise ValueError("reducescatter needs a tensor with at least one dimension")
        rows = _block_rows(x.shape[0], _op_args.set_size(process_set),
                           _op_args.set_rank(process_set))
        return _ffi.reducescatter(jnp.asarray(x), rows, _ffi.op_name("reducescatter", name), op,
                                  prescale, postscale, process_set)
    return jnp.asarray(_numpy_ops.reducescatter(_host(x), name=name, op=op,
                                                process_set=process_set,
                                                prescale_factor=prescale,
                                                postscale_factor=postscale))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _reducescatter_diff(params, x):
    return _reducescatter_run(params, x)


def _reducescatter_fwd(params, x):
    return _reducescatter_run(params, x), None


def _reducescatter_bwd(params, _, ct):
    _, op, prescale, postscale, process_set = params
    factor = prescale * postscale * (_op_args.set_size(process_set) if op == Sum else 1)
    return (allgather(ct * factor if factor != 1 else ct, process_set=process_set),)


_reducescatter_diff.defvjp(_reducescatter_fwd, _reducescatter_bwd)


def reducescatter(tensor, name=None, op=Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of rows of the reduction over the set (Average or Sum): the first
    dimension is split so that lower ranks get one more row when it does not divide.
    Differentiable."""
    op = _op_args.reduce_op(op, None)
    if op not in (Average, Sum):
        raise ValueError("reducescatter supports Average and Sum only")
    params = (_op_args.check_name(name), op, float(prescale_factor), float(postscale_factor),
              process_set)
    return _reducescatter_diff(params, tensor)
