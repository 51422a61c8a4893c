# SPDX-License-Identifier: Apache-2.0
"""DistributedOptimizer: an optax GradientTransformation whose gradients are averaged over
the ranks (one grouped allreduce of the whole gradient pytree) before the wrapped one runs."""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from hvd.process_sets import global_process_set
from hvd.jax.mpi_ops import Adasum, Average, allreduce


class DistributedState(NamedTuple):
    inner: Any  # the wrapped transformation's state
    acc: Any  # gradients summed over the passes since the last reduction (bpps > 1)
    count: Any  # passes since the last reduction (an int32 scalar)


def DistributedOptimizer(optimizer, backward_passes_per_step=1, op=Average,
                         gradient_predivide_factor=1.0, name=None,
                         process_set=global_process_set):
    """Wraps optimizer (an optax.GradientTransformation). update() reduces the gradients over
    the set (Average by default, or op) and hands them to optimizer, eagerly or inside
    jax.jit. With backward_passes_per_step k, gradients are summed locally over k updates
    (as Horovod does: scale the loss by 1/k for their mean) and reduced on every k-th; the
    other updates are zeros. gradient_predivide_factor f (Average only) scales by 1/f before
    the sum and f/size after."""
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if op == Adasum and backward_passes_per_step != 1:
        raise ValueError("Adasum with backward_passes_per_step > 1 is not supported")
    pre = 1.0 / gradient_predivide_factor
    post = gradient_predivide_factor

    def reduce(grads):
        return allreduce(grads, name=name, op=op, prescale_factor=pre, postscale_factor=post,
                         process_set=process_set)

    def init_fn(params):
        acc = None
        if backward_passes_per_step > 1:
            acc = jax.tree_util.tree_map(jnp.zeros_like, params)
        return DistributedState(optimizer.init(params), acc, jnp.zeros([], jnp.int32))

    def update_fn(grads, state, params=None):
        if backward_passes_per_step == 1:
            updates, inner = optimizer.update(reduce(grads), state.inner, params)
            return updates, DistributedState(inner, None, state.count)
        acc = jax.tree_util.tree_map(jnp.add, state.acc, grads)
        count = state.count + 1

        def step():
            updates, inner = optimizer.update(reduce(acc), state.inner, params)
            return updates, DistributedState(inner, jax.tree_util.tree_map(jnp.zeros_like, acc),
                                             jnp.zeros([], jnp.int32))

        def hold():
            return (jax.tree_util.tree_map(jnp.zeros_like, grads),
                    DistributedState(state.inner, acc, count))

        if isinstance(count, jax.core.Tracer):
            return jax.lax.cond(count >= backward_passes_per_step, step, hold)
        return step() if int(count) >= backward_passes_per_step else hold()

    return optax.GradientTransformation(init_fn, update_fn)
