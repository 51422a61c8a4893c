# SPDX-License-Identifier: Apache-2.0
"""The training the elastic Ray tests run in each worker: the model of
tests/python/elastic/elastic_model.py (linear regression, ElasticSampler without shuffle,
averaged gradients, a commit every COMMIT_EVERY steps) under hvd.torch.elastic.run. A worker
reaching a test's marked step writes a marker file for the test's driver thread (which kills
an actor, or adds a Ray node) and waits for that to take effect, so the membership changes at
a known step."""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "elastic"))
import elastic_model as m  # noqa: E402

WAIT_S = 30


def _mark(marker_dir, name, payload):
    path = os.path.join(marker_dir, name)
    with open(path + ".tmp", "w") as f:
        json.dump(payload, f)
    os.rename(path + ".tmp", path)


def _wait_for_change(what):
    from hvd import _runtime
    deadline = time.monotonic() + WAIT_S
    while not _runtime.elastic_membership()[1]:
        if time.monotonic() > deadline:
            raise RuntimeError(what)
        time.sleep(0.1)


def train(marker_dir, kill_worker=-1, kill_step=-1, grow_step=-1, shrink_step=-1):
    """Trains; returns this worker's id, final rank and size, step and weights. Worker
    kill_worker at kill_step marks "kill" and waits to be killed; rank 0 of 2 at grow_step
    marks "grow" and waits until hvdrun has started a worker for an added node; rank 0 of 3
    at shrink_step marks "shrink" and waits until hvdrun has taken a worker out of the
    membership for slots no longer offered."""
    import hvd.torch as hvd

    worker = int(os.environ["HVD_WORKER_ID"])
    hvd.init()
    state = m.make_state(hvd)

    def before_batch(state):
        if state.step == kill_step and worker == kill_worker:
            _mark(marker_dir, "kill", {"worker": worker})
            time.sleep(WAIT_S)
            raise RuntimeError("worker %d was not killed" % worker)
        if state.step == grow_step and hvd.rank() == 0 and hvd.size() == 2:
            _mark(marker_dir, "grow", {"worker": worker})
            _wait_for_change("no worker was started for the added node")
        if state.step == shrink_step and hvd.rank() == 0 and hvd.size() == 3:
            _mark(marker_dir, "shrink", {"worker": worker})
            _wait_for_change("hvdrun did not take a worker out for the slots removed")

    hvd.elastic.run(lambda state: m.train(hvd, state, before_batch))(state)
    out = {"worker": worker, "rank": hvd.rank(), "size": hvd.size(), "step": state.step,
           "weights": [float(v) for v in state.model.weight.data[0]]}
    hvd.shutdown()
    return out
