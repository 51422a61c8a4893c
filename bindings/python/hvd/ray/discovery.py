# SPDX-License-Identifier: Apache-2.0
"""Hosts for an elastic job on Ray (Horovod's RayHostDiscovery): Ray's own view of its alive
nodes, each node's CPUs (and GPUs with use_gpu) divided into slots. Nodes that share an
address (several Ray nodes on one machine) are one host whose slots add up."""

import math

import ray


class RayHostDiscovery:
    """find_available_hosts_and_slots() -> {node address: slots}, from ray.nodes()."""

    def __init__(self, use_gpu=False, cpus_per_slot=1, gpus_per_slot=1):
        self.use_gpu = use_gpu
        self.cpus_per_slot = cpus_per_slot
        self.gpus_per_slot = gpus_per_slot

    def find_available_hosts_and_slots(self):
        hosts = {}
        for node in ray.nodes():
            if not node.get("Alive", node.get("alive")):
                continue
            resources = node.get("Resources", {})
            slots = math.floor(resources.get("CPU", 0) / self.cpus_per_slot + 1e-9)
            if self.use_gpu:
                slots = min(slots, math.floor(resources.get("GPU", 0) / self.gpus_per_slot
                                              + 1e-9))
            if slots > 0:
                address = node["NodeManagerAddress"]
                hosts[address] = hosts.get(address, 0) + int(slots)
        return hosts
