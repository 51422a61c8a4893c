# SPDX-License-Identifier: Apache-2.0
"""Where a RayExecutor's workers run: a placement group of Ray's (PACK for num_workers,
STRICT_SPREAD for num_hosts x num_workers_per_host, as Horovod's strategies), one actor per
worker in it, and the ranks ordered by node so that each node's local ranks are contiguous."""

from collections import OrderedDict, namedtuple

import ray
from ray.util.placement_group import (get_current_placement_group, placement_group,
                                      remove_placement_group)
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from hvd.ray.worker import Worker

# A worker actor and where it runs (Worker.node_info's dict).
Member = namedtuple("Member", ["actor", "info"])


class Placement:
    """The placement group and the actors of one start(), in rank order once ordered."""

    def __init__(self, settings, num_workers, num_hosts, num_workers_per_host, cpus_per_worker,
                 gpus_per_worker, use_current_placement_group):
        self.settings = settings
        self.spread = num_workers is None
        self.num_hosts = num_hosts
        self.per_bundle = num_workers_per_host if self.spread else 1
        self.num_workers = num_hosts * num_workers_per_host if self.spread else num_workers
        self.cpus = cpus_per_worker
        self.gpus = gpus_per_worker
        self.use_current = use_current_placement_group
        self.group = None
        self.own_group = False
        self.members = []

    def _bundle(self):
        bundle = {"CPU": self.cpus * self.per_bundle}
        if self.gpus:
            bundle["GPU"] = self.gpus * self.per_bundle
        return bundle

    def reserve(self):
        """Gets the placement group: the caller's own (Horovod's use_current_placement_group,
        num_workers only), else a new one, waited for up to placement_group_timeout_s."""
        current = get_current_placement_group() if self.use_current else None
        if current is not None and not self.spread:
            self.group = current
            return
        n_bundles = self.num_hosts if self.spread else self.num_workers
        strategy = "STRICT_SPREAD" if self.spread else "PACK"
        self.group = placement_group([self._bundle() for _ in range(n_bundles)],
                                     strategy=strategy)
        self.own_group = True
        ready, _ = ray.wait([self.group.ready()],
                            timeout=self.settings.placement_group_timeout_s)
        if not ready:
            bundles = self.group.bundle_specs
            self.release()
            raise TimeoutError(
                "hvd.ray: Ray did not grant the placement group (%d bundle(s) of %s, %s) "
                "within %g s; resources available now: %s" %
                (n_bundles, bundles[0], strategy, self.settings.placement_group_timeout_s,
                 ray.available_resources()))

    def start_actors(self):
        """Starts one actor per worker in the group and learns where each runs; the members
        come back ordered by node (nodes in the order of their first bundle)."""
        actors = []
        for i in range(self.num_workers):
            bundle = i // self.per_bundle if self.own_group else -1
            strategy = PlacementGroupSchedulingStrategy(
                placement_group=self.group, placement_group_bundle_index=bundle,
                placement_group_capture_child_tasks=False)
            actor_cls = ray.remote(Worker).options(num_cpus=self.cpus, num_gpus=self.gpus,
                                                   scheduling_strategy=strategy)
            actors.append(actor_cls.remote())
        self.members = [Member(a, None) for a in actors]  # shut down even if a start fails
        try:
            infos = ray.get([a.node_info.remote() for a in actors],
                            timeout=self.settings.timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise TimeoutError("hvd.ray: the %d worker actors did not start within %g s "
                               "(timeout_s)" % (self.num_workers, self.settings.timeout_s))
        by_node = OrderedDict()
        for actor, info in zip(actors, infos):
            by_node.setdefault(info["node_id"], []).append(Member(actor, info))
        self.members = [m for node in by_node.values() for m in node]
        return self.members

    def gpu_env(self):
        """Per rank: CUDA_VISIBLE_DEVICES listing every GPU Ray gave the workers of its node,
        in local-rank order (as Horovod), so that hvd.local_rank() picks the worker's device.
        Empty dicts without GPUs."""
        node_gpus = OrderedDict()
        for m in self.members:
            ids = node_gpus.setdefault(m.info["node_id"], [])
            ids.extend(g for g in m.info["gpu_ids"] if g not in ids)  # fractions share one
        return [{"CUDA_VISIBLE_DEVICES": ",".join(node_gpus[m.info["node_id"]])}
                if self.gpus else {} for m in self.members]

    def release(self):
        """Ends the actors and the placement group this placement made."""
        for m in self.members:
            ray.kill(m.actor, no_restart=True)
        self.members = []
        if self.own_group and self.group is not None:
            remove_placement_group(self.group)
        self.group = None
        self.own_group = False
