# SPDX-License-Identifier: Apache-2.0
"""Elastic jobs on Ray (hvd.ray.ElasticRayExecutor over hvdrun --elastic-controller), each
test on a Ray cluster of its own (run with HVD_RAY_TEST_NODES=0, so conftest.py starts none):

- a worker's actor killed with ray.kill at step 5 of 3 workers: the two survivors roll back to
  the commit of step 3, re-form as ranks 0 and 1 of 2 and finish with the weights of the
  reference run with that change at that step;
- a job of 2 workers on a one-node cluster that gains a node at step 4 (Ray's cluster_utils):
  a worker is started on it and the three re-form at the commit of step 6;
- a job of 3 workers whose discovery offers one slot fewer at step 4: hvdrun asks the driver
  to stop the newest worker at its next commit, and the other two finish without a roll-back
  with the weights of the reference with that change at step 6;
- below min_np: ElasticJobError naming min_np within a bound, no hang.
"""

import functools
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "elastic"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(HERE, "..", "elastic"), os.environ.get("PYTHONPATH", "")])
os.environ.setdefault("HVD_OP_TIMEOUT", "60")

import elastic_model as m  # noqa: E402
import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

import elastic_training  # noqa: E402
from hvd.ray import ElasticJobError, ElasticRayExecutor, RayExecutor  # noqa: E402

TOLERANCE = 1e-9
JOB_BOUND_S = 120
BELOW_MIN_BOUND_S = 45
OBJECT_STORE_BYTES = 80 * 1024 * 1024


@pytest.fixture
def cluster():
    """start(num_cpus): a Ray cluster of one node, shut down after the test; the test may add
    nodes to it."""
    temp_dir = tempfile.mkdtemp(prefix="hvd-ray-elastic-")
    # ray.init(address=...) records the address in Ray's default temporary directory
    # (/tmp/ray), which nothing else makes when no Ray has run on this machine yet.
    os.makedirs(os.path.join(os.environ.get("RAY_TMPDIR", tempfile.gettempdir()), "ray"),
                exist_ok=True)
    made = []

    def start(num_cpus):
        c = Cluster(initialize_head=True, head_node_args=dict(
            num_cpus=num_cpus, object_store_memory=OBJECT_STORE_BYTES,
            include_dashboard=False, temp_dir=temp_dir))
        made.append(c)
        ray.init(address=c.address, configure_logging=False)
        return c
    try:
        yield start
    finally:
        ray.shutdown()
        for c in made:
            c.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture
def markers():
    d = tempfile.mkdtemp(prefix="hvd-ray-markers-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def wait_for_marker(marker_dir, name):
    """The payload of marker `name` once a worker writes it (None after JOB_BOUND_S)."""
    path = os.path.join(marker_dir, name)
    deadline = time.monotonic() + JOB_BOUND_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)
    with open(path) as f:
        return json.load(f)


def when_marked(marker_dir, name, action):
    """Runs action(payload) on a thread once a worker writes marker `name`."""
    def watch():
        payload = wait_for_marker(marker_dir, name)
        if payload is not None:
            action(payload)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def in_thread(fn):
    """Runs fn() on a thread; the returned function joins it and returns or raises fn's
    outcome."""
    outcome = {}

    def body():
        try:
            outcome["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            outcome["error"] = e
    t = threading.Thread(target=body, daemon=True)
    t.start()

    def join():
        t.join(JOB_BOUND_S + 30)
        assert not t.is_alive(), "the job did not end"
        if "error" in outcome:
            raise outcome["error"]
        return outcome["result"]
    return join


def settings(**kwargs):
    return ElasticRayExecutor.create_settings(timeout_s=30, elastic_timeout=60,
                                              run_timeout_s=JOB_BOUND_S, **kwargs)


def max_diff(a, b):
    return max(abs(float(u) - float(v)) for u, v in zip(a, b))


def check_weights(results, expected, others):
    for r in results:
        assert max_diff(r["weights"], expected) <= TOLERANCE, r
    for other in others:  # the reference tells these histories apart
        assert max_diff(expected, other) > 1e-6


def test_actor_killed_survivors_finish(cluster, markers):
    cluster(3)
    ex = ElasticRayExecutor(settings(min_np=2, max_np=3), cpus_per_slot=1)
    ex.start()
    killed = []

    def kill(payload):
        actor = ex.workers[payload["worker"]]
        killed.append(payload["worker"])
        ray.kill(actor, no_restart=True)

    when_marked(markers, "kill", kill)
    results = ex.run(functools.partial(elastic_training.train, markers, kill_worker=1,
                                       kill_step=5))
    assert killed == [1]
    assert [(r["worker"], r["rank"], r["size"]) for r in results] == [(0, 0, 2), (2, 1, 2)]
    check_weights(results, m.reference(3, {5: (2, True)}).tolist(),
                  [m.reference(3, {}).tolist(), m.reference(3, {5: (2, False)}).tolist(),
                   m.reference(3, {7: (2, True)}).tolist()])


def test_added_node_joins_at_commit(cluster, markers):
    c = cluster(2)
    # Horovod's elastic spelling on RayExecutor: an ElasticRayExecutor over Ray's nodes.
    ex = RayExecutor(RayExecutor.create_settings(timeout_s=30, run_timeout_s=JOB_BOUND_S),
                     min_workers=2, max_workers=3, elastic_timeout=60)
    ex.start()
    # Ray adds nodes from the main thread only: the job runs on another.
    join = in_thread(lambda: ex.run(elastic_training.train, args=[markers],
                                    kwargs=dict(grow_step=4)))
    assert wait_for_marker(markers, "grow") is not None
    c.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
    results = join()
    assert [(r["worker"], r["rank"], r["size"]) for r in results] == \
        [(0, 0, 3), (1, 1, 3), (2, 2, 3)]
    check_weights(results, m.reference(2, {6: (3, False)}).tolist(),
                  [m.reference(2, {}).tolist(), m.reference(2, {3: (3, False)}).tolist()])


class SlotsDiscovery:
    """settings.discovery for override_discovery=False: this node with `slots` slots."""

    def __init__(self, slots):
        self.slots = slots

    def find_available_hosts_and_slots(self):
        return {ray.nodes()[0]["NodeManagerAddress"]: self.slots}


def test_removed_slot_stops_its_worker(cluster, markers):
    cluster(3)
    discovery = SlotsDiscovery(3)
    s = settings(min_np=2, max_np=3)
    s.discovery = discovery
    ex = ElasticRayExecutor(s, override_discovery=False)
    ex.start()

    def shrink(_):
        discovery.slots = 2
    when_marked(markers, "shrink", shrink)
    results = ex.run(functools.partial(elastic_training.train, markers, shrink_step=4))
    assert [(r["worker"], r["rank"], r["size"]) for r in results] == [(0, 0, 2), (1, 1, 2)]
    check_weights(results, m.reference(3, {6: (2, False)}).tolist(),
                  [m.reference(3, {}).tolist(), m.reference(3, {4: (2, True)}).tolist(),
                   m.reference(3, {3: (2, False)}).tolist()])
    assert ex.workers == {}


def test_below_min_np_fails_in_bounded_time(cluster, markers):
    cluster(2)
    ex = ElasticRayExecutor(settings(min_np=2, max_np=2))
    ex.start()
    when_marked(markers, "kill", lambda p: ray.kill(ex.workers[p["worker"]], no_restart=True))
    start = time.monotonic()
    with pytest.raises(ElasticJobError, match="fewer than --min-np 2") as info:
        ex.run(functools.partial(elastic_training.train, markers, kill_worker=1, kill_step=2))
    assert time.monotonic() - start < BELOW_MIN_BOUND_S
    assert 1 in info.value.errors and ex.workers == {}
