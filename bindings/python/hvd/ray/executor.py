# SPDX-License-Identifier: Apache-2.0
"""RayExecutor: Horovod's horovod.ray.RayExecutor over libhvd.

Workers are Ray actors in a placement group; the driver gives each its rank, local and cross
ranks (from the Ray node it runs on), and the job's rendezvous address (rank 0's node, on a
port rank 0's actor holds until its rendezvous server binds it) and secret. A function run
on the workers calls hvd.init() (hvd's or hvd.torch's) and joins the job through the
library's own authenticated rendezvous, as under hvdrun.
"""

import functools
import logging
import math
import numbers

import ray

from hvd import _launch
from hvd.ray import elastic
from hvd.ray.placement import Placement
from hvd.ray.results import Waiter
from hvd.ray.settings import Settings, create_settings

logger = logging.getLogger(__name__)


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError("%s must be an int >= 1, got %r" % (name, value))
    return int(value)


def _amount(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError("%s must be a number > 0, got %r" % (name, value))
    return value


class RayExecutor:
    """Runs functions on a fixed set of Horovod workers, Ray actors (Horovod's RayExecutor).

    settings: from RayExecutor.create_settings (None: its defaults).
    num_workers: how many workers, packed onto as few nodes as Ray can (placement group PACK);
        or num_hosts nodes with num_workers_per_host workers each (STRICT_SPREAD).
    cpus_per_worker, use_gpu, gpus_per_worker: the Ray resources of each worker (with
        use_gpu, gpus_per_worker defaults to 1 and every worker sees its node's GPUs in local
        rank order, so hvd.local_rank() picks its device, as with Horovod).
    use_current_placement_group: with num_workers, start the workers in the caller's
        placement group when it runs in one (Horovod's default).
    min_workers, max_workers, reset_limit, cooldown_range, elastic_timeout,
        override_discovery: Horovod's elastic arguments: min_workers or max_workers (instead
        of num_workers / num_hosts) make the job elastic, run by an ElasticRayExecutor (see
        hvd.ray.elastic) with min_np=min_workers, max_np=max_workers, slots of
        cpus_per_worker (and gpus_per_worker); then only start() without an executable, run()
        and shutdown() are available. cooldown_range is accepted and unused: a host where a
        worker failed gets no new workers for the rest of the job.

    Each call that runs user code (start's executable, run, execute) returns the results in
    rank order or raises hvd.ray.WorkerError naming each rank that failed and how; a worker
    whose actor dies is reported at once, and the other workers' collectives then fail with
    the library's HVD_ERR_PEER_FAILED. A function that raises aborts its rank's part of the
    job, so the other ranks fail instead of waiting for it. settings.run_timeout_s bounds
    each call.
    """

    create_settings = staticmethod(create_settings)

    def __init__(self, settings=None, num_workers=None, num_hosts=None,
                 num_workers_per_host=None, cpus_per_worker=1, use_gpu=False,
                 gpus_per_worker=None, use_current_placement_group=True, min_workers=None,
                 max_workers=None, reset_limit=None, cooldown_range=None,
                 elastic_timeout=None, override_discovery=None):
        self._elastic = None
        self._placement = None
        self._members = []
        if min_workers is not None or max_workers is not None:
            if num_workers is not None or num_hosts is not None:
                raise ValueError("give either num_workers / num_hosts (a fixed job) or "
                                 "min_workers / max_workers (an elastic job), not both")
            del cooldown_range  # hosts of failed workers stay excluded (see above)
            self._elastic = elastic.from_ray_executor(
                settings, min_workers, max_workers, reset_limit, elastic_timeout,
                cpus_per_worker, use_gpu, gpus_per_worker,
                True if override_discovery is None else override_discovery)
            self.settings = self._elastic.settings
            return
        if any(v is not None for v in (reset_limit, cooldown_range, elastic_timeout)):
            raise ValueError("reset_limit, cooldown_range and elastic_timeout go with "
                             "min_workers / max_workers (an elastic job)")
        del override_discovery  # Horovod's elastic discovery switch
        if settings is None:
            settings = create_settings()
        if not isinstance(settings, Settings):
            raise ValueError("settings must come from RayExecutor.create_settings, got %r"
                             % (settings,))
        settings.validate()
        if (num_workers is None) == (num_hosts is None):
            raise ValueError("give either num_workers, or num_hosts (with "
                             "num_workers_per_host); got num_workers=%r, num_hosts=%r"
                             % (num_workers, num_hosts))
        if num_workers is not None:
            num_workers = _count("num_workers", num_workers)
            if num_workers_per_host is not None:
                raise ValueError("num_workers_per_host goes with num_hosts, not num_workers")
        else:
            num_hosts = _count("num_hosts", num_hosts)
            num_workers_per_host = _count("num_workers_per_host",
                                          1 if num_workers_per_host is None
                                          else num_workers_per_host)
        cpus_per_worker = _amount("cpus_per_worker", cpus_per_worker)
        if gpus_per_worker is not None and not use_gpu:
            raise ValueError("gpus_per_worker is set, but use_gpu is False: use_gpu must be "
                             "True if gpus_per_worker is set")
        gpus = _amount("gpus_per_worker", 1 if gpus_per_worker is None else gpus_per_worker) \
            if use_gpu else 0
        self.settings = settings
        self._shape = dict(num_workers=num_workers, num_hosts=num_hosts,
                           num_workers_per_host=num_workers_per_host,
                           cpus_per_worker=cpus_per_worker, gpus_per_worker=gpus,
                           use_current_placement_group=bool(use_current_placement_group))
        self._placement = None
        self._members = []

    # ------------------------------------------------------------------ start and shutdown

    def _fixed(self, what):
        if self._elastic is not None:
            raise RuntimeError("hvd.ray: %s is not available for an elastic RayExecutor "
                               "(min_workers / max_workers): use run()" % what)

    @property
    def num_workers(self):
        self._fixed("num_workers")
        s = self._shape
        return s["num_workers"] or s["num_hosts"] * s["num_workers_per_host"]

    @property
    def workers(self):
        """The workers' actor handles, in rank order (empty before start)."""
        return [m.actor for m in self._members]

    def start(self, executable_cls=None, executable_args=None, executable_kwargs=None,
              extra_env_vars=None):
        """Starts the workers: the placement group, one actor per worker, their ranks and
        the job's variables, then executable_cls(*executable_args, **executable_kwargs) in
        each (the object execute's functions get). extra_env_vars: more environment
        variables for the workers, set before the executable is made. Ray is initialised
        (ray.init()) if it was not."""
        if self._elastic is not None:
            if executable_cls is not None or executable_args or executable_kwargs:
                self._fixed("start(executable_cls)")
            self._elastic.env_vars.update({str(k): str(v) for k, v in
                                           (extra_env_vars or {}).items()})
            self._elastic.start()
            return
        if self._placement is not None:
            raise RuntimeError("hvd.ray: this RayExecutor is already started; shutdown() first")
        extra = {str(k): str(v) for k, v in (extra_env_vars or {}).items()}
        if not ray.is_initialized():
            ray.init()  # as Ray's own API does on first use
        self._placement = Placement(self.settings, **self._shape)
        try:
            self._placement.reserve()
            self._members = self._placement.start_actors()
            self._hand_out_ranks(extra)
            self._call_all("start", [m.actor.start_executable.remote(
                executable_cls, executable_args, executable_kwargs) for m in self._members])
        except BaseException:
            self.shutdown()
            raise

    def _hand_out_ranks(self, extra):
        members, timeout = self._members, self.settings.timeout_s
        rank0 = members[0].info
        port = ray.get(members[0].actor.reserve_port.remote(rank0["ip"]), timeout=timeout)
        hosts = ["%s/%s" % (m.info["hostname"], m.info["node_id"][:12]) for m in members]
        places = _launch.placement(hosts)
        job = _launch.new_job()
        common = {"HVD_START_TIMEOUT": str(int(math.ceil(self.settings.timeout_s)))}
        if self.settings.nics:
            nics = self.settings.nics
            common["HVD_IFACE"] = nics if isinstance(nics, str) else ",".join(sorted(nics))
        refs = []
        for rank, (m, place, gpu_env) in enumerate(zip(members, places,
                                                       self._placement.gpu_env())):
            env = _launch.worker_env(rank, len(members), place, hosts[rank], rank0["ip"], port,
                                     job)
            refs.append(m.actor.set_env.remote(env, {**common, **gpu_env, **extra}))
        ray.get(refs, timeout=timeout)
        if self.settings.verbose:
            logger.info("hvd.ray: %d workers on %d node(s), rendezvous %s:%d",
                        len(members), len(set(hosts)), rank0["ip"], port)

    def shutdown(self):
        """Ends the job: each worker leaves it (hvd.shutdown(), bounded by timeout_s), rank 0
        releases the rendezvous port, then the actors and the placement group are removed."""
        if self._elastic is not None:
            self._elastic.shutdown()
            return
        self._stop(graceful=True)

    def _stop(self, graceful):
        """shutdown(); without graceful, the actors are ended at once (workers still busy)."""
        placement, self._placement = self._placement, None
        members, self._members = self._members, []
        if placement is None:
            return
        if members and graceful:
            refs = [m.actor.close.remote() for m in members]
            ray.wait(refs, num_returns=len(refs), timeout=self.settings.timeout_s)
        placement.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    # ------------------------------------------------------------------ running functions

    def _started(self):
        if not self._members:
            raise RuntimeError("hvd.ray: this RayExecutor is not started; call start()")

    def _describe(self, rank):
        info = self._members[rank].info if rank < len(self._members) else None
        if not info:
            return "rank %d" % rank
        return "rank %d (node %s, pid %d)" % (rank, info["ip"], info["pid"])

    def _call_all(self, what, refs):
        """Waits for refs (one per rank), bounded by run_timeout_s; the results in rank
        order. A worker that died or ranks left running shut the executor down."""
        waiter = Waiter(refs, what, self._describe)
        waiter.wait(self.settings.run_timeout_s)
        if not waiter.errors and not waiter.unfinished:
            return waiter.results
        shut_down = bool(waiter.dead_ranks() or waiter.unfinished)
        error = (waiter.error(shut_down) if waiter.errors
                 else waiter.timeout_error(self.settings.run_timeout_s))
        if shut_down:
            self._stop(graceful=not waiter.unfinished)
        raise error

    def run_remote(self, fn, args=None, kwargs=None):
        """Starts fn(*args, **kwargs) on every worker; Ray object refs in rank order."""
        self._fixed("run_remote")
        self._started()
        return [m.actor.run.remote(fn, list(args or ()), dict(kwargs or {}))
                for m in self._members]

    def run(self, fn, args=None, kwargs=None):
        """fn(*args, **kwargs) on every worker; the results in rank order (elastic: of the
        workers that finished)."""
        if self._elastic is not None:
            return self._elastic.run(functools.partial(fn, *(args or ()), **(kwargs or {})))
        return self._call_all("run(%s)" % getattr(fn, "__name__", "fn"),
                              self.run_remote(fn, args, kwargs))

    def execute(self, fn):
        """fn(executable) on every worker's executable object; the results in rank order."""
        self._fixed("execute")
        self._started()
        return self._call_all("execute(%s)" % getattr(fn, "__name__", "fn"),
                              [m.actor.execute.remote(fn) for m in self._members])

    def execute_single(self, fn):
        """fn(executable) on rank 0's executable object only; its result."""
        self._fixed("execute_single")
        self._started()
        return self._call_all("execute_single(%s)" % getattr(fn, "__name__", "fn"),
                              [self._members[0].actor.execute.remote(fn)])[0]
