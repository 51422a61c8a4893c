# SPDX-License-Identifier: Apache-2.0
"""hvd.ray across Ray nodes (HVD_RAY_TEST_NODES=2: two nodes of 2 CPUs on this machine): ranks
grouped by node with contiguous local ranks, cross ranks across nodes, the host each rank
reports, and an allreduce between the nodes."""

import os

import numpy as np
import pytest

import hvd
from hvd import _launch
from hvd.ray import RayExecutor

SETTINGS = dict(timeout_s=30, run_timeout_s=60, placement_group_timeout_s=20)


@pytest.fixture(autouse=True)
def two_nodes(ray_cluster):
    if ray_cluster < 2:
        pytest.skip("needs HVD_RAY_TEST_NODES=2")


def where():
    hvd.init()
    total = hvd.allreduce(np.array([hvd.rank() + 1.0]), op=hvd.Sum)
    return (hvd.rank(), hvd.local_rank(), hvd.local_size(), hvd.cross_rank(), hvd.cross_size(),
            float(total[0]), os.environ["HVD_HOSTNAME"])


def test_spread_two_hosts():
    with RayExecutor(RayExecutor.create_settings(**SETTINGS), num_hosts=2,
                     num_workers_per_host=2) as ex:
        ex.start()
        got = ex.run(where)
    hosts = [g[6] for g in got]
    assert hosts[0] == hosts[1] != hosts[2] == hosts[3]
    assert [g[:6] for g in got] == [(0, 0, 2, 0, 2, 10.0), (1, 1, 2, 0, 2, 10.0),
                                    (2, 0, 2, 1, 2, 10.0), (3, 1, 2, 1, 2, 10.0)]


def test_pack_over_two_nodes_keeps_local_ranks_contiguous():
    """3 workers of 1 CPU on nodes of 2: two on one node, one on the other (which one is
    Ray's choice); the library's local and cross ranks agree with the hosts."""
    with RayExecutor(RayExecutor.create_settings(**SETTINGS), num_workers=3) as ex:
        ex.start()
        got = ex.run(where)
    hosts = [g[6] for g in got]
    assert sorted(hosts.count(h) for h in set(hosts)) == [1, 2]
    assert hosts[0] != hosts[2] and hosts[1] in (hosts[0], hosts[2])  # a node's ranks adjoin
    expected = [(r,) + tuple(p) + (6.0,) for r, p in enumerate(_launch.placement(hosts))]
    assert [g[:6] for g in got] == expected
