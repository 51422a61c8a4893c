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

from hvd.common.elastic import DEFAULT_RESET_LIMIT, RESET_LIMIT_VARIABLE, run_fn  # noqa: F401
from hvd.torch.elastic.sampler import ElasticSampler  # noqa: F401
from hvd.torch.elastic.state import ObjectState, State, TorchState  # noqa: F401
from hvd.torch.mpi_ops import init, shutdown

__all__ = ["TorchState", "ElasticSampler", "run"]


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
    # _reset is looked up at each reset, so that it can be replaced.
    return run_fn(func, reset_limit, lambda: _reset(), "hvd.torch.elastic", "TorchState")
