# SPDX-License-Identifier: Apache-2.0
"""broadcast_parameters: a model's parameters (any pytree of arrays) from one rank to all."""

import jax
import jax.numpy as jnp
import numpy as np

from hvd import _numpy_ops, _op_args, _runtime
from hvd.process_sets import global_process_set
from hvd.jax import mpi_ops


def broadcast_parameters(params, root_rank=0, process_set=global_process_set,
                         prefix="broadcast_parameters"):
    """A pytree like params holding root_rank's leaves (root_rank: a global rank). Leaves are
    matched across ranks by their path in the tree ("<prefix>.<path>"), so every rank must
    pass a tree of the same structure. Eagerly all broadcasts are in flight at once; inside
    jax.jit each leaf is one custom call."""
    _op_args.root_in_set(root_rank, process_set)
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    names = ["%s%s" % (prefix, jax.tree_util.keystr(path)) for path, _ in with_paths]
    leaves = [leaf for _, leaf in with_paths]
    if any(isinstance(x, jax.core.Tracer) for x in leaves):
        out = [mpi_ops.broadcast(x, root_rank, name=n, process_set=process_set)
               for n, x in zip(names, leaves)]
    else:
        handles = [_numpy_ops.broadcast_async(np.asarray(x), root_rank, name=n,
                                              process_set=process_set)
                   for n, x in zip(names, leaves)]
        out = [jnp.asarray(_runtime.synchronize(h)) for h in handles]
    return jax.tree_util.tree_unflatten(treedef, out)
