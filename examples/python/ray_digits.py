#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains torch_digits_train.py's model on Ray workers with hvd.ray's RayExecutor.

    python3 ray_digits.py --num-workers 2                  # a local Ray cluster
    python3 ray_digits.py --num-workers 4 --address auto   # a running one

Each worker runs torch_digits_train.main (the same training as under
`hvdrun -np N python3 torch_digits_train.py`: a fixed global batch, so any number of workers
trains the same model); rank 0's results are printed as that script prints them,
`final_train_loss=0.xxxx` and `test_accuracy=0.xxxx`, then `ray_job_seconds=...`: the wall
time of the job on Ray (workers started, trained, shut down). Options this script does not
know go to torch_digits_train.py (--epochs, --global-batch-size, ...). Needs ray, torch and
scikit-learn on the driver and the workers, and the hvd package on the workers.
"""

import argparse
import os
import sys
import time

import ray
from ray import cloudpickle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_digits_train  # noqa: E402 - from this script's folder

from hvd.ray import RayExecutor  # noqa: E402


def train_on_ray(num_workers, train_argv, cpus_per_worker=1, timeout_s=60):
    """torch_digits_train.main(train_argv) on num_workers Ray workers (Ray initialised);
    returns rank 0's (final_train_loss, test_accuracy)."""
    # The workers need not have this folder: the training code travels with the call.
    cloudpickle.register_pickle_by_value(torch_digits_train)
    settings = RayExecutor.create_settings(timeout_s=timeout_s)
    executor = RayExecutor(settings, num_workers=num_workers, cpus_per_worker=cpus_per_worker)
    executor.start()
    try:
        results = executor.run(torch_digits_train.main, args=[list(train_argv)])
    finally:
        executor.shutdown()
    return results[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-workers", type=int, default=2, help="Ray workers (ranks)")
    p.add_argument("--cpus-per-worker", type=float, default=1)
    p.add_argument("--address", default=None,
                   help="Ray cluster to join ('auto': the local node's); default: start one")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="logical CPUs of the cluster started here (default: --num-workers "
                   "x --cpus-per-worker, at least the machine's)")
    args, train_argv = p.parse_known_args(argv)
    if args.num_workers < 1:
        p.error("--num-workers must be >= 1")
    torch_digits_train.parse_args(train_argv)  # its errors before anything starts
    if args.address:
        ray.init(address=args.address)
    else:
        need = int(args.num_workers * args.cpus_per_worker + 0.999)
        ray.init(num_cpus=args.num_cpus or max(need, os.cpu_count() or 1),
                 include_dashboard=False)
    try:
        start = time.monotonic()
        loss, accuracy = train_on_ray(args.num_workers, train_argv, args.cpus_per_worker)
        seconds = time.monotonic() - start
    finally:
        ray.shutdown()
    print("final_train_loss=%.4f" % loss, flush=True)
    print("test_accuracy=%.4f" % accuracy, flush=True)
    print("ray_job_seconds=%.2f" % seconds, flush=True)


if __name__ == "__main__":
    main()
