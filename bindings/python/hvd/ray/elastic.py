# SPDX-License-Identifier: Apache-2.0
"""Elastic training on Ray: Horovod's ElasticRayExecutor (and RayExecutor with min_workers /
max_workers, which runs one).

    import ray
    import hvd.torch as hvd
    from hvd.ray import ElasticRayExecutor

    def train():
        hvd.init()
        state = hvd.elastic.TorchState(model=model, optimizer=optimizer, epoch=0)

        @hvd.elastic.run
        def loop(state):
            ...
            state.commit()
        loop(state)
        return hvd.rank()

    ray.init(address="auto")
    settings = ElasticRayExecutor.create_settings(min_np=2, max_np=8)
    executor = ElasticRayExecutor(settings, cpus_per_slot=2)
    executor.start()
    results = executor.run(train)

The membership of the job is libhvd's, as under hvdrun --min-np/--max-np: run() starts
hvdrun --elastic-controller beside the driver, which keeps the membership service and forms
the rounds, and this executor starts a Ray actor for each worker it asks for and tells it how
each ended. Hosts are Ray's alive nodes (their CPUs, and GPUs with use_gpu, in slots), read
again every discovery_interval_s: new slots get new workers, which join at the others' next
commit (HostsUpdatedInterrupt); a worker whose actor or node is lost makes the others' ops
fail with HVD_ERR_PEER_FAILED, and hvd.elastic.run re-forms the job without it from the last
commit. Fewer than min_np workers end the job with ElasticJobError.
"""

import numbers

import ray

from hvd.ray.discovery import RayHostDiscovery
from hvd.ray.elastic_job import ElasticJob, ElasticJobError
from hvd.ray.elastic_settings import ElasticSettings, create_settings

__all__ = ["ElasticRayExecutor", "ElasticJobError", "ElasticSettings", "from_ray_executor"]


def _amount(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError("%s must be a number > 0, got %r" % (name, value))
    return value


class ElasticRayExecutor:
    """Runs an elastic Horovod job on Ray's nodes (Horovod's ElasticRayExecutor).

    settings: from ElasticRayExecutor.create_settings (min_np, max_np, reset_limit,
        elastic_timeout, timeout_s, ...).
    use_gpu, cpus_per_slot, gpus_per_slot: each worker's Ray resources, and how a node's
        resources count in slots (gpus_per_slot defaults to 1 with use_gpu).
    env_vars: more environment variables for every worker.
    override_discovery: True (default): hosts are Ray's nodes (RayHostDiscovery); False:
        settings.discovery's find_available_hosts_and_slots() ({node address: slots}).
    """

    create_settings = staticmethod(create_settings)

    def __init__(self, settings, use_gpu=False, cpus_per_slot=1, gpus_per_slot=None,
                 env_vars=None, override_discovery=True):
        if not isinstance(settings, ElasticSettings):
            raise ValueError("settings must come from ElasticRayExecutor.create_settings, "
                             "got %r" % (settings,))
        settings.validate()
        if gpus_per_slot is not None and not use_gpu:
            raise ValueError("gpus_per_slot is set, but use_gpu is False: use_gpu must be "
                             "True if gpus_per_slot is set")
        if not override_discovery and settings.discovery is None:
            raise ValueError("override_discovery=False needs settings.discovery (an object "
                             "with find_available_hosts_and_slots())")
        self.settings = settings
        self.use_gpu = bool(use_gpu)
        self.cpus_per_slot = _amount("cpus_per_slot", cpus_per_slot)
        self.gpus_per_slot = _amount("gpus_per_slot", 1 if gpus_per_slot is None
                                     else gpus_per_slot) if use_gpu else 0
        self.env_vars = {str(k): str(v) for k, v in (env_vars or {}).items()}
        self.override_discovery = bool(override_discovery)
        self.discovery = None
        self.workers = {}  # worker id -> its actor, while run() runs

    def start(self):
        """Gets ready to run: Ray is initialised (ray.init()) if it was not, and hosts are
        found through Ray's nodes (or settings.discovery)."""
        if not ray.is_initialized():
            ray.init()
        if self.override_discovery:
            self.discovery = RayHostDiscovery(self.use_gpu, self.cpus_per_slot,
                                              self.gpus_per_slot or 1)
        else:
            self.discovery = self.settings.discovery

    def discover(self):
        """{node address: slots} now."""
        return dict(self.discovery.find_available_hosts_and_slots())

    def worker_env(self):
        """The variables every worker gets besides its job's."""
        env = {"HVD_START_TIMEOUT": str(int(self.settings.timeout_s + 0.999))}
        if self.settings.nics:
            nics = self.settings.nics
            env["HVD_IFACE"] = nics if isinstance(nics, str) else ",".join(sorted(nics))
        if self.settings.reset_limit is not None:
            env["HOROVOD_ELASTIC_RESET_LIMIT"] = str(self.settings.reset_limit)
        env.update(self.env_vars)
        return env

    def run(self, worker_fn, callbacks=None):
        """Runs worker_fn() in every worker of the elastic job until the job ends; returns the
        results of the workers that finished, in their rank order. callbacks: functions called
        on the driver with each finished worker's result as it arrives. Raises
        ElasticJobError when the job fails (below min_np, reset_limit passed, a worker's
        error after others finished, run_timeout_s)."""
        if self.discovery is None:
            raise RuntimeError("hvd.ray: this ElasticRayExecutor is not started; call start()")
        hosts = self.discover()
        slots = sum(hosts.values())
        if slots < self.settings.min_np:
            raise ElasticJobError(
                "hvd.ray: the elastic job cannot start: Ray's nodes have %d slot(s) of %g CPU%s, "
                "fewer than min_np %d" % (slots, self.cpus_per_slot,
                                          " and %g GPU" % self.gpus_per_slot if self.use_gpu
                                          else "", self.settings.min_np),
                "too few slots", {})
        max_np = self.settings.max_np
        num_proc = slots if max_np is None else min(slots, max_np)
        return ElasticJob(self, worker_fn, callbacks).run(hosts, num_proc)

    def shutdown(self):
        """Nothing stays running between runs; kept for symmetry with RayExecutor."""
        self.discovery = None


def from_ray_executor(settings, min_workers, max_workers, reset_limit, elastic_timeout,
                      cpus_per_worker, use_gpu, gpus_per_worker, override_discovery):
    """The ElasticRayExecutor behind RayExecutor(min_workers=..., max_workers=...): settings
    (RayExecutor.create_settings's, or None) plus the elastic arguments."""
    from hvd.ray.settings import Settings

    if settings is not None and not isinstance(settings, Settings):
        raise ValueError("settings must come from RayExecutor.create_settings, got %r"
                         % (settings,))
    base = settings or Settings()
    elastic_settings = create_settings(
        min_np=1 if min_workers is None else min_workers, max_np=max_workers,
        reset_limit=reset_limit, elastic_timeout=600 if elastic_timeout is None
        else elastic_timeout, timeout_s=base.timeout_s, nics=base.nics,
        placement_group_timeout_s=base.placement_group_timeout_s,
        run_timeout_s=base.run_timeout_s, verbose=base.verbose,
        ssh_identity_file=base.ssh_identity_file)
    if not override_discovery and getattr(settings, "discovery", None) is not None:
        elastic_settings.discovery = settings.discovery
    return ElasticRayExecutor(elastic_settings, use_gpu=use_gpu, cpus_per_slot=cpus_per_worker,
                              gpus_per_slot=gpus_per_worker,
                              override_discovery=override_discovery)
