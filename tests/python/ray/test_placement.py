# SPDX-License-Identifier: Apache-2.0
"""hvd.ray's GPU environment: each worker sees every GPU Ray gave its node's workers, in
local-rank order (as Horovod's RayExecutor), so that hvd.local_rank() picks its own."""

from hvd.ray.placement import Member, Placement
from hvd.ray.settings import create_settings


def placement(gpus, gpu_ids_by_worker):
    p = Placement(create_settings(), num_workers=len(gpu_ids_by_worker), num_hosts=None,
                  num_workers_per_host=None, cpus_per_worker=1, gpus_per_worker=gpus,
                  use_current_placement_group=False)
    p.members = [Member(None, {"node_id": node, "gpu_ids": ids})
                 for node, ids in gpu_ids_by_worker]
    return p


def test_gpu_env_per_node_in_local_rank_order():
    p = placement(1, [("a", ["3"]), ("a", ["1"]), ("b", ["0"]), ("b", ["2"])])
    assert p.gpu_env() == [{"CUDA_VISIBLE_DEVICES": "3,1"}, {"CUDA_VISIBLE_DEVICES": "3,1"},
                           {"CUDA_VISIBLE_DEVICES": "0,2"}, {"CUDA_VISIBLE_DEVICES": "0,2"}]


def test_gpu_env_shared_gpu_listed_once():
    p = placement(0.5, [("a", ["0"]), ("a", ["0"])])
    assert p.gpu_env() == [{"CUDA_VISIBLE_DEVICES": "0"}] * 2


def test_no_gpu_env_without_gpus():
    assert placement(0, [("a", []), ("a", [])]).gpu_env() == [{}, {}]
