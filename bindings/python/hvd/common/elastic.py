# SPDX-License-Identifier: Apache-2.0
"""horovod.common.elastic for every framework: State and ObjectState (what a training process
keeps across reset events) and run_fn, the loop behind each framework's elastic run decorator
(hvd.torch.elastic.run, hvd.tensorflow.elastic.run)."""

import enum
import functools
import os
import queue
import re
import sys

from hvd import _objects, _runtime
from hvd._errors import _NAMES, ERR_INTERNAL, HorovodInternalError, HostsUpdatedInterrupt

__all__ = ["HostUpdateResult", "State", "ObjectState", "run_fn", "DEFAULT_RESET_LIMIT",
           "RESET_LIMIT_VARIABLE"]

DEFAULT_RESET_LIMIT = 3
RESET_LIMIT_VARIABLE = "HOROVOD_ELASTIC_RESET_LIMIT"


class HostUpdateResult(enum.IntFlag):
    """What a host update did to the job (as horovod.runner.elastic.worker's)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class State:
    """What a training process must keep across reset events.

    commit() saves it (and is a collective point that checks for host updates); restore()
    returns to the last commit; sync() makes every rank hold rank 0's. Subclasses implement
    save, restore and sync.

    bcast_object(obj) -> rank 0's obj, get_rank() -> this rank and allgather_object(obj,
    name=...) -> every rank's obj: the collectives used.
    """

    def __init__(self, bcast_object, get_rank, allgather_object=_objects.allgather_object):
        self._bcast_object = bcast_object
        self._allgather_object = allgather_object
        self._rank = get_rank
        self._host_messages = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Adds functions (no arguments) to call after every reset, e.g. to rescale the
        learning rate to the new number of ranks."""
        for callback in callbacks:
            if not callable(callback):
                raise ValueError("reset callbacks must be callable, got %r" % (callback,))
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Records a host update notification; the next commit() (or check_host_updates())
        then raises HostsUpdatedInterrupt on every rank."""
        self._host_messages.put((timestamp, update_res))

    def commit(self):
        """Saves the state in host memory, then checks for host updates (collective: every
        rank commits at the same points)."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank if any rank was told of a host update
        newer than the last one handled (in an elastic job rank 0 asks hvdrun whether workers
        wait to join). Collective."""
        self._ask_launcher()
        newest = previous = self._last_updated_timestamp
        update = HostUpdateResult.no_update
        while not self._host_messages.empty():
            timestamp, result = self._host_messages.get()
            if timestamp > newest:
                newest = timestamp
                update |= result
        views = self._allgather_object((previous, newest, int(update)),
                                 name="elastic.check_host_updates")
        previous = max(v[0] for v in views)
        newest = max(v[1] for v in views)
        update = HostUpdateResult.no_update
        for _, timestamp, result in views:
            if timestamp > previous:
                update |= result
        self._last_updated_timestamp = newest
        if newest > previous:
            raise HostsUpdatedInterrupt(update == HostUpdateResult.removed)

    def _ask_launcher(self):
        """Rank 0 of an elastic job: workers waiting to join the next round are a host update
        (added), stamped with that round's number."""
        if not _runtime.is_initialized() or self._rank() != 0:
            return
        round_, pending = _runtime.elastic_membership()
        if pending:
            self.on_hosts_updated(round_ + 1, HostUpdateResult.added)

    def save(self):
        """Saves the state in host memory."""
        raise NotImplementedError()

    def restore(self):
        """Returns to the last saved state, dropping later changes."""
        raise NotImplementedError()

    def sync(self):
        """Makes every rank's state rank 0's. Collective."""
        raise NotImplementedError()

    def reset(self):
        """Called after a reset, before the state is synchronised."""


class ObjectState(State):
    """State made of plain Python objects, given as keyword arguments and exposed as
    attributes; sync() broadcasts the committed values from rank 0."""

    def __init__(self, bcast_object, get_rank, allgather_object=_objects.allgather_object,
                 **kwargs):
        self._bcast_object = bcast_object
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank,
                         allgather_object=allgather_object)

    def save(self):
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def _check_limit(value, source):
    if isinstance(value, bool):
        raise ValueError("%s must be a non-negative int, got %r" % (source, value))
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a non-negative int, got %r" % (source, value)) from None
    if limit < 0 or (not isinstance(value, str) and limit != value):
        raise ValueError("%s must be a non-negative int, got %r" % (source, value))
    return limit


def _reset_limit(explicit):
    if explicit is not None:
        return _check_limit(explicit, "reset_limit")
    text = os.environ.get(RESET_LIMIT_VARIABLE, "").strip()
    if text:
        return _check_limit(text, RESET_LIMIT_VARIABLE)
    return DEFAULT_RESET_LIMIT


def _internal_error(message):
    found = re.search(r"HVD_ERR_[A-Z_]+", message)
    codes = {name: code for code, name in _NAMES.items()}
    return HorovodInternalError(message, codes.get(found.group(0), ERR_INTERNAL) if found
                                else ERR_INTERNAL)


def tensorflow_internal_error(error):
    """The HorovodInternalError that a TensorFlow error of an hvd.tensorflow op stands for (a
    collective that failed while running: ranks disagreed, a peer failed, it timed out or the
    job was aborted), else None."""
    tf = sys.modules.get("tensorflow")
    if tf is None or not isinstance(error, tf.errors.OpError):
        return None
    failures = (tf.errors.AbortedError, tf.errors.FailedPreconditionError,
                tf.errors.DeadlineExceededError, tf.errors.UnknownError)
    if not isinstance(error, failures) or "hvd.tensorflow " not in error.message:
        return None
    return _internal_error(error.message)


def framework_internal_error(error):
    """tensorflow_internal_error, or the HorovodInternalError that JAX's runtime error of an
    hvd.jax custom call inside jax.jit stands for, else None."""
    failure = tensorflow_internal_error(error)
    if failure is not None:
        return failure
    jax_errors = getattr(sys.modules.get("jax"), "errors", None)
    runtime_error = getattr(jax_errors, "JaxRuntimeError", None)
    if runtime_error is None or not isinstance(error, runtime_error):
        return None
    message = str(error)
    if "HorovodInternalError: HVD_ERR_" not in message:
        return None
    return _internal_error(message)


def run_fn(func, reset_limit, reset, module, state_example, translate=None):
    """The elastic wrapper of ``func(state, *args, **kwargs)`` for the run decorator of
    `module` (e.g. "hvd.torch.elastic"); reset() leaves and rejoins the job.

    Each attempt first synchronises the state from rank 0 (so call no collective before
    it: the decorated function is the sync point), then runs func and returns its result.
    On HorovodInternalError the state is restored to its last commit; on
    HostsUpdatedInterrupt it is kept (and not re-synchronised if hosts were only removed).
    Then reset() (a failure there is another reset, retried), the state's reset callbacks,
    and another attempt. After reset_limit resets (else HOROVOD_ELASTIC_RESET_LIMIT, else
    DEFAULT_RESET_LIMIT) the next failure is raised as HorovodInternalError. translate(e),
    when given, maps another exception to the HorovodInternalError it stands for, or None.
    """
    if not callable(func):
        raise ValueError("%s.run decorates a function, got %r" % (module, func))
    if reset_limit is not None:
        _check_limit(reset_limit, "reset_limit")

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        if not all(callable(getattr(state, m, None)) for m in ("sync", "restore", "on_reset")):
            raise ValueError("the first argument of an elastic function must be a State "
                             "(e.g. %s.%s), got %s" % (module, state_example,
                                                       type(state).__name__))
        limit = _reset_limit(reset_limit)
        resets = 0
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except HorovodInternalError as e:
                failure, restore, skip_sync = e, True, False
            except HostsUpdatedInterrupt as e:
                failure, restore, skip_sync = e, False, e.skip_sync
            except Exception as e:
                failure = translate(e) if translate is not None else None
                if failure is None:
                    raise
                restore, skip_sync = True, False
            if restore:
                state.restore()
            # A rejoin that fails (e.g. a worker died while the next membership formed) is
            # one more reset, retried.
            while True:
                if resets >= limit:
                    raise HorovodInternalError(
                        "%s.run: giving up after %d reset(s) (reset limit %d): %s: %s"
                        % (module, resets, limit, type(failure).__name__, failure),
                        getattr(failure, "status", ERR_INTERNAL)) from failure
                resets += 1
                try:
                    reset()
                    break
                except HorovodInternalError as e:
                    failure = e
            state.on_reset()

    return wrapper
