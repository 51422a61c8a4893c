# SPDX-License-Identifier: Apache-2.0
"""hvd.ray's refusals: bad arguments (elastic ones among them) raise ValueError before
anything is started; the elastic arguments make an elastic executor."""

import pytest

from hvd.ray import ElasticRayExecutor, RayExecutor, create_settings


@pytest.mark.parametrize("kwargs, match", [
    (dict(num_workers=0), "num_workers must be an int >= 1"),
    (dict(num_workers=-2), "num_workers must be an int >= 1"),
    (dict(num_workers=1.5), "num_workers must be an int >= 1"),
    (dict(num_workers=True), "num_workers must be an int >= 1"),
    (dict(), "give either num_workers, or num_hosts"),
    (dict(num_workers=2, num_hosts=1), "give either num_workers, or num_hosts"),
    (dict(num_hosts=0), "num_hosts must be an int >= 1"),
    (dict(num_hosts=1, num_workers_per_host=0), "num_workers_per_host must be an int >= 1"),
    (dict(num_workers=2, num_workers_per_host=2), "num_workers_per_host goes with num_hosts"),
    (dict(num_workers=2, cpus_per_worker=0), "cpus_per_worker must be a number > 0"),
    (dict(num_workers=2, gpus_per_worker=1), "use_gpu must be True"),
    (dict(num_workers=2, use_gpu=True, gpus_per_worker=0), "gpus_per_worker must be a number"),
    (dict(num_workers=2, settings=object()), "settings must come from"),
])
def test_bad_executor_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RayExecutor(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(timeout_s=0), "timeout_s must be a positive"),
    (dict(placement_group_timeout_s=-1), "placement_group_timeout_s must be a positive"),
    (dict(run_timeout_s="10"), "run_timeout_s must be a positive"),
    (dict(nics=set()), "nics must be a non-empty set"),
    (dict(nics={"eth0,eth1"}), "nics must be a non-empty set"),
])
def test_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RayExecutor.create_settings(**kwargs)


def test_settings_keep_horovods_fields():
    s = create_settings(timeout_s=5, placement_group_timeout_s=7, nics={"lo"},
                        ssh_identity_file="/nonexistent", ssh_str="ignored")
    assert (s.timeout_s, s.placement_group_timeout_s, s.nics, s.run_timeout_s) == \
        (5, 7, {"lo"}, None)


@pytest.mark.parametrize("kwargs", [dict(num_workers=2, min_workers=1),
                                    dict(num_hosts=1, max_workers=2),
                                    dict(num_workers=2, reset_limit=3),
                                    dict(num_workers=2, elastic_timeout=5)])
def test_elastic_arguments_misused(kwargs):
    with pytest.raises(ValueError):
        RayExecutor(**kwargs)


def test_elastic_arguments_make_an_elastic_executor():
    ex = RayExecutor(create_settings(timeout_s=7), min_workers=2, max_workers=4, reset_limit=1,
                     cpus_per_worker=2)
    s = ex.settings
    assert (s.min_np, s.max_np, s.reset_limit, s.timeout_s) == (2, 4, 1, 7)
    assert ex.workers == [] and ex._elastic.cpus_per_slot == 2
    with pytest.raises(RuntimeError, match="not available for an elastic RayExecutor"):
        ex.execute(len)


def test_elastic_settings():
    s = ElasticRayExecutor.create_settings(min_num_proc=2, max_num_proc=3, elastic_timeout=9)
    assert (s.min_np, s.max_np, s.elastic_timeout) == (2, 3, 9)
    for bad in (dict(min_np=0), dict(min_np=3, max_np=2), dict(reset_limit=-1),
                dict(elastic_timeout=0)):
        with pytest.raises(ValueError):
            ElasticRayExecutor.create_settings(**bad)
    with pytest.raises(ValueError, match="create_settings"):
        ElasticRayExecutor(create_settings())
    with pytest.raises(ValueError, match="use_gpu"):
        ElasticRayExecutor(s, gpus_per_slot=1)
    with pytest.raises(RuntimeError, match="not started"):
        ElasticRayExecutor(s).run(len)


def test_elastic_worker_env():
    s = ElasticRayExecutor.create_settings(reset_limit=2, timeout_s=12, nics={"lo"})
    env = ElasticRayExecutor(s, env_vars={"A": 1}).worker_env()
    assert env == {"HVD_START_TIMEOUT": "12", "HVD_IFACE": "lo",
                   "HOROVOD_ELASTIC_RESET_LIMIT": "2", "A": "1"}


def test_ray_host_discovery(monkeypatch):
    from hvd.ray import discovery

    nodes = [dict(Alive=True, NodeManagerAddress="10.0.0.1", Resources={"CPU": 4, "GPU": 1}),
             dict(Alive=True, NodeManagerAddress="10.0.0.1", Resources={"CPU": 3}),
             dict(Alive=False, NodeManagerAddress="10.0.0.2", Resources={"CPU": 8}),
             dict(Alive=True, NodeManagerAddress="10.0.0.3", Resources={"CPU": 1, "GPU": 2})]
    monkeypatch.setattr(discovery.ray, "nodes", lambda: nodes)
    assert discovery.RayHostDiscovery(cpus_per_slot=2).find_available_hosts_and_slots() == \
        {"10.0.0.1": 3}
    assert discovery.RayHostDiscovery(cpus_per_slot=1).find_available_hosts_and_slots() == \
        {"10.0.0.1": 7, "10.0.0.3": 1}
    gpu = discovery.RayHostDiscovery(use_gpu=True, cpus_per_slot=1, gpus_per_slot=1)
    assert gpu.find_available_hosts_and_slots() == {"10.0.0.1": 1, "10.0.0.3": 1}
