# SPDX-License-Identifier: Apache-2.0
"""Argument handling Horovod's collectives share across array types."""

import operator
from hvd import _runtime


def reduce_op(op, average, default=_runtime.Average):
    """Horovod's op/average compatibility: average=True is Average, False is Sum."""
    if op is not None and average is not None:
        raise ValueError("The op parameter supersedes average. Please provide only one of them.")
    if average is not None:
        import warnings

        warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                      DeprecationWarning, stacklevel=3)
        return _runtime.Average if average else _runtime.Sum
    if op is None:
        return default
    if isinstance(op, bool) or op not in (_runtime.Average, _runtime.Sum, _runtime.Adasum,
                                          _runtime.Min, _runtime.Max, _runtime.Product):
        raise ValueError("unknown reduction op %r (use hvd.Average, Sum, Adasum, Min, Max or "
                         "Product)" % (op,))
    return op


def root_in_set(root_rank, process_set):
    """Horovod names broadcast roots by global rank; libhvd by rank within the set."""
    if isinstance(root_rank, bool) or not isinstance(root_rank, int):
        try:
            as_int = int(root_rank)
            integral = as_int == root_rank
        except (TypeError, ValueError):
            integral = False
        if not integral:
            raise ValueError("root_rank must be an int, got %r" % (root_rank,))
        root_rank = as_int
    if process_set is None or process_set.process_set_id == 0:
        size = _runtime.size()
        if not 0 <= root_rank < size:
            raise ValueError("root_rank %d is not a rank of this job (size %d)" % (root_rank, size))
        return root_rank
    process_set._handle_for(_runtime.context())
    try:
        return process_set.ranks.index(root_rank)
    except ValueError:
        raise ValueError("root_rank %d is not in %s" % (root_rank, process_set)) from None


def check_name(name):
    if name is not None and not isinstance(name, str):
        raise ValueError("name must be a str or None, got %r" % (name,))
    return name


def splits_list(splits):
    """Alltoall splits as a list of ints (None: an even split).

    As in Horovod, splits must be integers: a tensor or array of floats (or bools), or a float
    in a sequence, is a ValueError at the call rather than a rounded row count.
    """
    if splits is None:
        return None
    dtype = getattr(splits, "dtype", None)
    if dtype is not None:
        name = str(dtype).replace("torch.", "")
        if not name.startswith(("int", "uint")):
            raise ValueError("splits must hold integers (int32), got %s" % name)
        splits = splits.tolist()
    try:
        out = [operator.index(s) for s in splits]
    except TypeError:
        raise ValueError("splits must be a sequence of ints, got %r" % (splits,)) from None
    return out


def set_size(process_set):
    """Ranks in process_set (None or the global set: the whole job)."""
    if process_set is None or process_set.process_set_id == 0:
        return _runtime.size()
    return process_set.size()


def set_rank(process_set):
    """This rank's index in process_set (None or the global set: its global rank)."""
    if process_set is None or process_set.process_set_id == 0:
        return _runtime.rank()
    return process_set.rank()


def check_adasum(op, process_set):
    """Horovod's limits of Adasum: the global set, a power-of-two number of ranks."""
    if op != _runtime.Adasum:
        return
    if process_set is not None and process_set.process_set_id != 0:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")
    n = _runtime.size()
    if n & (n - 1):
        raise NotImplementedError("Running Adasum with non-power of 2 ranks is not supported yet.")
