# SPDX-License-Identifier: Apache-2.0
"""An elastic training job for test_elastic.py (run by hvdrun --min-np/--max-np): the model of
elastic_model.py under hvd.torch.elastic.run, with a TorchState holding the weights, the step
and the ElasticSampler. Options make one worker kill itself at a step (cutting its host off
the network first, on a namespace host), or rank 0 add a host to
the discovery script's file at a step, or remove one from it. Every rank prints its final
weights (and the HOROVOD_ELASTIC_RESET_LIMIT it was given) as a JSON line."""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elastic_model as m  # noqa: E402

import hvd.torch as hvd  # noqa: E402
from hvd import _runtime  # noqa: E402

WAIT_FOR_WORKERS_S = 60


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--kill-worker", type=int, default=-1)
    p.add_argument("--kill-step", type=int, default=-1)
    p.add_argument("--cut-off-host", action="store_true",
                   help="before the kill, take every network link of the worker's host down "
                        "(a namespace host of tests/cluster): the host vanishes without "
                        "closing a connection, as a powered-off machine does")
    p.add_argument("--hosts-file", default="")
    p.add_argument("--add-host", default="")
    p.add_argument("--add-step", type=int, default=-1)
    p.add_argument("--remove-host", default="")
    p.add_argument("--remove-step", type=int, default=-1)
    return p.parse_args()


def add_host(args):
    """Rank 0: lists the new host for the discovery script, then waits until hvdrun has
    started its worker, so the next commit sees it (a deterministic point of change)."""
    with open(args.hosts_file, "a") as f:
        f.write(args.add_host + "\n")
    wait_for_update("hvdrun started no worker for the added host")


def remove_host(args):
    """Rank 0: drops the host's line from the discovery script's file (replaced whole, so a
    discovery run never reads half of it), then waits until hvdrun has taken its workers out
    of the membership, so the next commit sees it."""
    with open(args.hosts_file) as f:
        kept = [line for line in f.read().splitlines() if line.strip() != args.remove_host]
    with open(args.hosts_file + ".new", "w") as f:
        f.write("".join(line + "\n" for line in kept))
    os.replace(args.hosts_file + ".new", args.hosts_file)
    wait_for_update("hvdrun did not take the removed host's worker out of the membership")


def cut_off_host():
    """Takes down every link of this network namespace but loopback: its peers' packets to it
    are dropped from now on, unanswered."""
    links = subprocess.run(["ip", "-o", "link", "show"], stdout=subprocess.PIPE, text=True,
                           check=True, timeout=10).stdout
    for line in links.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name != "lo":
            subprocess.run(["ip", "link", "set", "dev", name, "down"], check=True, timeout=10)


def wait_for_update(what):
    deadline = time.monotonic() + WAIT_FOR_WORKERS_S
    while not _runtime.elastic_membership()[1]:
        if time.monotonic() > deadline:
            raise RuntimeError(what)
        time.sleep(0.1)


def main():
    args = parse()
    worker = int(os.environ["HVD_WORKER_ID"])
    hvd.init()
    state = m.make_state(hvd)

    def before_batch(state):
        if state.step == args.kill_step and worker == args.kill_worker:
            if args.cut_off_host:
                cut_off_host()
            os.kill(os.getpid(), signal.SIGKILL)
        if state.step == args.add_step and hvd.rank() == 0 and hvd.size() == 2 and \
                args.add_host:
            add_host(args)
        if state.step == args.remove_step and hvd.rank() == 0 and hvd.size() == 3 and \
                args.remove_host:
            remove_host(args)

    hvd.elastic.run(lambda state: m.train(hvd, state, before_batch))(state)
    print(json.dumps({"worker": worker, "rank": hvd.rank(), "size": hvd.size(),
                      "step": state.step,
                      "reset_limit": os.environ.get("HOROVOD_ELASTIC_RESET_LIMIT", ""),
                      "weights": [float(v) for v in state.model.weight.data[0]]}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
