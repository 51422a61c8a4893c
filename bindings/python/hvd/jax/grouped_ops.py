# SPDX-License-Identifier: Apache-2.0
"""hvd.jax's grouped_allgather and grouped_reducescatter (Horovod 0.28's names): a list of
arrays gathered or reduce-scattered as one unit, eagerly through hvd's NumPy path and inside
jax.jit as one XLA custom call. As for allgather, a traced grouped_allgather learns every
member's row counts by a small collective when the function is traced. Gradients follow the
single ops': grouped_allgather's is each cotangent averaged and cut to this rank's rows,
grouped_reducescatter's a grouped allgather of the cotangents."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hvd import _numpy_ops, _op_args
from hvd._basics import Average, Sum
from hvd.jax import _ffi
from hvd.jax.mpi_ops import _allreduce_run, _block_rows, _host, _traced
from hvd.process_sets import global_process_set


def _checked(tensors, what):
    xs = list(tensors)
    if any(jnp.ndim(x) == 0 for x in xs):
        raise ValueError("%s needs tensors with at least one dimension" % what)
    return xs


def _row_table(xs, name, process_set):
    """Every member's first dimension of each of xs: an int array [members, len(xs)]."""
    mine = np.array([[x.shape[0] for x in xs]], dtype=np.int64)
    return np.asarray(_numpy_ops.allgather(mine, name=name, process_set=process_set))


def _gather_run(params, xs):
    name, process_set = params
    if _traced(xs):
        for x in xs:
            _ffi.check_dtype(x)
        full = _ffi.op_name("grouped_allgather", name)
        table = _row_table(xs, full[len("grouped_allgather."):] + ".rows", process_set)
        return list(_ffi.grouped_allgather([jnp.asarray(x) for x in xs],
                                           [int(r) for r in table.sum(axis=0)], full,
                                           process_set))
    outs = _numpy_ops.grouped_allgather([_host(x) for x in xs], name=name,
                                        process_set=process_set)
    return [jnp.asarray(o) for o in outs]


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _gather_diff(params, xs):
    return _gather_run(params, xs)


def _gather_fwd(params, xs):
    # The residuals' shapes carry this rank's rows (static even under jit).
    return _gather_run(params, xs), [jnp.zeros((x.shape[0], 0), jnp.float32) for x in xs]


def _gather_bwd(params, mine, cts):
    process_set = params[1]
    grads = _allreduce_run((None, Average, 1.0, 1.0, process_set), list(cts))
    offsets = _row_table(mine, None, process_set)[:_op_args.set_rank(process_set)].sum(axis=0)
    return ([jax.lax.slice_in_dim(g, int(o), int(o) + m.shape[0], axis=0)
             for g, o, m in zip(grads, offsets, mine)],)


_gather_diff.defvjp(_gather_fwd, _gather_bwd)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of each array of a list (every rank's rows concatenated in rank order; the
    first dimension may differ between ranks), negotiated and completed as one unit.
    Differentiable."""
    xs = _checked(tensors, "grouped_allgather")
    if not xs:
        return []
    return list(_gather_diff((_op_args.check_name(name), process_set), xs))


def _scatter_run(params, xs):
    name, op, prescale, postscale, process_set = params
    if _traced(xs):
        n, r = _op_args.set_size(process_set), _op_args.set_rank(process_set)
        return list(_ffi.grouped_reducescatter(
            [jnp.asarray(x) for x in xs], [_block_rows(x.shape[0], n, r) for x in xs],
            _ffi.op_name("grouped_reducescatter", name), op, prescale, postscale, process_set))
    outs = _numpy_ops.grouped_reducescatter([_host(x) for x in xs], name=name, op=op,
                                            process_set=process_set,
                                            prescale_factor=prescale,
                                            postscale_factor=postscale)
    return [jnp.asarray(o) for o in outs]


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _scatter_diff(params, xs):
    return _scatter_run(params, xs)


def _scatter_fwd(params, xs):
    return _scatter_run(params, xs), None


def _scatter_bwd(params, _, cts):
    _, op, prescale, postscale, process_set = params
    factor = prescale * postscale * (_op_args.set_size(process_set) if op == Sum else 1)
    cts = [ct * factor if factor != 1 else ct for ct in cts]
    return (grouped_allgather(cts, process_set=process_set),)


_scatter_diff.defvjp(_scatter_fwd, _scatter_bwd)


def grouped_reducescatter(tensors, name=None, op=Average, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter of each array of a list (Average or Sum; this rank's block of rows, lower
    ranks getting one more row when the first dimension does not divide), negotiated and
    completed as one unit. Differentiable."""
    op = _op_args.reduce_op(op, None)
    if op not in (Average, Sum):
        raise ValueError("reducescatter supports Average and Sum only")
    xs = _checked(tensors, "grouped_reducescatter")
    if not xs:
        return []
    params = (_op_args.check_name(name), op, float(prescale_factor), float(postscale_factor),
              process_set)
    return list(_scatter_diff(params, xs))
