# SPDX-License-Identifier: Apache-2.0
"""hvd.torch.elastic: horovod.torch.elastic's run decorator, TorchState and ElasticSampler.

When a collective fails (HorovodInternalError) every surviving rank rolls its state back to
the last commit, leaves and rejoins the job (hvd.shutdown() + hvd.init()), synchronises the
state from rank 0 and calls the training function again. Under hvdrun --min-np/--max-np,
hvd.init() joins the job's next membership round: without the workers that died, with new
ranks and size. When hvdrun has started workers on added hosts, State.commit() raises
HostsUpdatedInterrupt on every rank (rank 0 asks hvdrun at each commit); it resets the same way
without the roll-back, and the new workers receive rank 0's state. Other launchers keep the
ranks they started, so there a reset rejoins the same membership. The number of resets is bounded: reset_limit, else the
HOROVOD_ELASTIC_RESET_LIMIT environment variable, else DEFAULT_RESET_LIMIT.
"""

import functools
import os

from hvd._errors import ERR_INTERNAL, HorovodInternalError, HostsUpdatedInterrupt
from hvd.torch.elastic.sampler import ElasticSampler  # noqa: F401
from hvd.torch.elastic.state import ObjectState, State, TorchState  # noqa: F401
from hvd.torch.mpi_ops import init, shutdown

__all__ = ["TorchState", "ElasticSampler", "run"]

DEFAULT_RESET_LIMIT = 3
RESET_LIMIT_VARIABLE = "HOROVOD_ELASTIC_RESET_LIMIT"


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


def _reset():
    shutdown()
    init()


def run(func=None, reset_limit=None):
    """Decorator for the elastic training function ``func(state, *args, **kwargs)``, whose
    first argument is a State (e.g. TorchState).

    Each attempt first synchronises the state from rank 0 (so call no collective before
    it: the decorated function is the sync point), then runs func and returns its result.
    On HorovodInternalError the state is restored to its last commit; on
    HostsUpdatedInterrupt it is kept (and not re-synchronised if hosts were only removed).
    Then hvd.shutdown() + hvd.init() (a failure there is another reset, retried), the
    state's reset callbacks, and another attempt. After reset_limit resets (see the module
    documentation) the next failure is raised as HorovodInternalError. Usable as ``@run`` or ``@run(reset_limit=n)``.
    """
    if func is None:
        return lambda f: run(f, reset_limit=reset_limit)
    if not callable(func):
        raise ValueError("hvd.torch.elastic.run decorates a function, got %r" % (func,))
    if reset_limit is not None:
        _check_limit(reset_limit, "reset_limit")

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        if not all(callable(getattr(state, m, None)) for m in ("sync", "restore", "on_reset")):
            raise ValueError("the first argument of an elastic function must be a State "
                             "(e.g. hvd.torch.elastic.TorchState), got %s"
                             % type(state).__name__)
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
            if restore:
                state.restore()
            # A rejoin that fails (e.g. a worker died while the next membership formed) is
            # one more reset, retried.
            while True:
                if resets >= limit:
                    raise HorovodInternalError(
                        "hvd.torch.elastic.run: giving up after %d reset(s) (reset limit %d): "
                        "%s: %s" % (resets, limit, type(failure).__name__, failure),
                        getattr(failure, "status", ERR_INTERNAL)) from failure
                resets += 1
                try:
                    _reset()
                    break
                except HorovodInternalError as e:
                    failure = e
            state.on_reset()

    return wrapper
