# SPDX-License-Identifier: Apache-2.0
"""The table of outstanding requests behind Horovod's integer handles, in Python.

The ctypes backend uses this class; the pybind11 backend has the same table in C++
(``_hvd_pybind.requests``, with the same functions). Thread safety: add, poll and synchronize
may be called from any thread; a thread that finds its handle consumed by another thread's
synchronize gets a ValueError. A request is released once nothing holds it any more: neither
the table nor a thread waiting on it (libhvd refuses to release a request that is waited on).
"""

import threading

from hvd import _errors

# A wait slice: waits return to Python this often so that Ctrl-C is seen.
_WAIT_SLICE_MS = 500


class _Pending:
    __slots__ = ("req", "keep", "finish", "holders")

    def __init__(self, req, keep, finish):
        self.req = req
        self.keep = keep  # Python objects whose memory the op reads or writes
        self.finish = finish  # req -> result, called once the op succeeded
        self.holders = 1  # the table, and each thread waiting on it


class RequestTable:

    def __init__(self, backend):
        self._backend = backend
        self._lock = threading.Lock()
        self._live = {}
        self._detached = []
        self._next_handle = 1

    def add(self, req, keep, finish):
        """Takes ownership of a started request; returns its handle."""
        with self._lock:
            handle = self._next_handle
            self._next_handle += 1
            self._live[handle] = _Pending(req, keep, finish)
        return handle

    def poll(self, handle):
        """True once the op behind handle has finished (successfully or not). Never blocks."""
        p = self._live.get(handle)
        if p is None:
            raise ValueError("unknown or already synchronized handle %r" % (handle,))
        return self._backend.test(p.req) != _errors.INPROGRESS

    def synchronize(self, handle, missing_ok=False):
        """Waits for the op behind handle and returns its result; HorovodInternalError if it
        failed. The handle is consumed either way. An unknown handle is a ValueError, or None
        with missing_ok."""
        with self._lock:
            p = self._live.get(handle)
            if p is not None:
                p.holders += 1
        if p is None:
            if missing_ok:
                return None
            raise ValueError("unknown or already synchronized handle %r" % (handle,))
        backend = self._backend
        try:
            status = backend.wait(p.req, _WAIT_SLICE_MS)
            while status == _errors.INPROGRESS:
                status = backend.wait(p.req, _WAIT_SLICE_MS)
            with self._lock:
                mine = self._live.pop(handle, None) is p
                if mine:
                    p.holders -= 1  # the table's hold
            if not mine:
                raise ValueError("handle %r was synchronized by another thread" % (handle,))
            if status != _errors.OK:
                raise _errors.error_for(status, backend.message(p.req), during_wait=True)
            return p.finish(p.req) if p.finish is not None else None
        finally:
            self._drop(p)

    def _drop(self, p):
        """Lets go of one hold on p; the last one releases its request."""
        with self._lock:
            p.holders -= 1
            last = p.holders == 0
        if last:
            self._backend.release(p.req)

    def detach_all(self):
        """Empties the table (at shutdown, before the context is finalised)."""
        with self._lock:
            self._detached.extend(self._live.values())
            self._live = {}

    def release_detached(self):
        """Releases the requests detach_all() took out of the table (a request a thread still
        waits on is released by that thread)."""
        with self._lock:
            detached, self._detached = self._detached, []
        for p in detached:
            try:
                self._drop(p)
            except Exception:  # the context is gone: nothing else can be done with it
                pass

    def set_session(self, ctx, generation):
        """The context fast paths enqueue on: this table serves no fast path."""
