# SPDX-License-Identifier: Apache-2.0
"""Horovod's process sets: subsets of the ranks that run collectives among themselves.

A ProcessSet is described by its global ranks; it becomes usable once registered, either
by passing it to init(process_sets=[...]) or by add_process_set() afterwards. Registration
and removal are collective over all ranks (every rank calls them in the same order).
"""

from hvd import _runtime
from hvd._backend import backend


class ProcessSet:
    """A set of ranks; process_set_id is None until it is registered (0: all ranks)."""

    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise ValueError("ProcessSet takes a list of ranks (MPI communicators need an MPI "
                             "build; libhvd has none)") from None
        if any(isinstance(r, bool) or not isinstance(r, int) for r in ranks):
            raise ValueError("ProcessSet ranks must be ints, got %r" % (ranks,))
        self.ranks = ranks
        self._c_handle = 0
        self._generation = -1

    def _registered(self):
        return (self.process_set_id is not None
                and (self.process_set_id == 0 or self._generation == _runtime.state.generation))

    def _handle_for(self, ctx):
        if self.process_set_id == 0:
            return 0
        if not self._registered():
            raise ValueError("%s is not registered: pass it to hvd.init(process_sets=...) or "
                             "hvd.add_process_set() first" % self)
        return self._c_handle

    def size(self):
        """Number of ranks in the set, or None while it is not registered."""
        if not self._registered():
            return None
        return backend.size(_runtime.context(), self._c_handle)

    def rank(self):
        """This process's rank within the set, or None if not registered; ValueError on a rank
        outside the set (as Horovod)."""
        if not self._registered():
            return None
        r = backend.rank(_runtime.context(), self._c_handle)
        if r < 0:
            raise ValueError("Process is not part of provided process set.")
        return r

    def included(self):
        """Whether this process belongs to the set (None while the ranks are unknown)."""
        if self.ranks is None:
            return None
        return _runtime.rank() in self.ranks

    def _invalidate(self):
        self.process_set_id = None
        self._c_handle = 0

    def __str__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s, mpi_comm=None)" % (
            self.process_set_id, self.ranks)

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

_registered = {}  # process_set_id -> ProcessSet, for the current context
_next_id = [1]


def _reset_registry():
    for ps in _registered.values():
        ps._invalidate()
    _registered.clear()
    _next_id[0] = 1


def _register(ps):
    ctx = _runtime.context()
    if ps.process_set_id is not None and ps._registered():
        raise ValueError("%s is already registered" % ps)
    for other in list(_registered.values()) + [global_process_set]:
        if other.ranks == ps.ranks:
            raise ValueError("Attempted to add a duplicate process set: %s" % ps)
    size = _runtime.size()
    bad = [r for r in ps.ranks if r < 0 or r >= size]
    if not ps.ranks or bad or len(set(ps.ranks)) != len(ps.ranks):
        raise ValueError("%s: ranks must be distinct and in [0, %d)" % (ps, size))
    handle = backend.process_set_create(ctx, ps.ranks)
    ps._c_handle = handle
    ps._generation = _runtime.state.generation
    ps.process_set_id = _next_id[0]
    _next_id[0] += 1
    _registered[ps.process_set_id] = ps
    return ps


def add_process_set(process_set):
    """Registers a ProcessSet (or a list of ranks) on all ranks and returns it. Collective."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    return _register(process_set)


def remove_process_set(process_set):
    """Unregisters a process set on all ranks (collective). False if it was not registered
    or is the global set."""
    if not isinstance(process_set, ProcessSet) or process_set.process_set_id in (None, 0):
        return False
    if not process_set._registered():
        return False
    backend.process_set_destroy(_runtime.context(), process_set._c_handle)
    _registered.pop(process_set.process_set_id, None)
    process_set._invalidate()
    return True
