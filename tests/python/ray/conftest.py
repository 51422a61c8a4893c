# SPDX-License-Identifier: Apache-2.0
"""A local Ray cluster for the hvd.ray tests: started once per pytest run, small and quiet
(a few logical CPUs, the smallest object store, no dashboard, no usage reports), in its own
temporary directory, shut down and removed at the end. HVD_RAY_TEST_NODES=N (N > 1) makes it
N Ray nodes of 2 CPUs on this machine (Ray's cluster_utils), for the tests of placement across
nodes; HVD_RAY_TEST_NODES=0 starts none (the elastic tests start one per test). The workers
Ray starts inherit this process's environment: PYTHONPATH (the build tree's hvd package) with
this folder added, so that they import the test modules whose functions they run."""

import os
import shutil
import tempfile

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p)

import ray  # noqa: E402 - after the variables above

# Logical CPUs (Ray does not pin them): a 3-worker and a 2-worker job at once, and one spare.
NUM_CPUS = 6
OBJECT_STORE_BYTES = 80 * 1024 * 1024


@pytest.fixture(scope="session", autouse=True)
def ray_cluster():
    nodes = int(os.environ.get("HVD_RAY_TEST_NODES", "1"))
    if nodes == 0:
        yield nodes
        return
    temp_dir = tempfile.mkdtemp(prefix="hvd-ray-")
    cluster = None
    if nodes > 1:
        from ray.cluster_utils import Cluster

        node_args = dict(num_cpus=2, object_store_memory=OBJECT_STORE_BYTES)
        cluster = Cluster(initialize_head=True, head_node_args=dict(
            node_args, include_dashboard=False, temp_dir=temp_dir))
        for _ in range(nodes - 1):
            cluster.add_node(**node_args)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, configure_logging=False)
    else:
        ray.init(num_cpus=NUM_CPUS, include_dashboard=False,
                 object_store_memory=OBJECT_STORE_BYTES, _temp_dir=temp_dir,
                 configure_logging=False)
    try:
        yield nodes
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
