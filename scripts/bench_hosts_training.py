#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Synthetic training across hosts: hvd.torch against Horovod and DDP, on a namespace cluster.

    scripts/bench_hosts_training.py [--build DIR] [--hosts 3] [--ranks-per-host 2|2,1,...]
                                    [--reps 3] [--backends hvd,horovod,ddp] [--model cnn]
                                    [--bench-args "..."] [--netem "delay 50us rate 10gbit"]
                                    [--horovod-venv DIR] [--shared-cpus auto|0|1] [--out DIR]

Builds hosts as network namespaces of this machine with a real sshd each (tests/cluster) and
runs examples/python/torch_synthetic_benchmark.py across them with /usr/bin/python3's torch,
the backends in turn in every repetition:
  hvd      hvd.torch under `hvdrun -H hostA:L,...` (the build's Python package);
  horovod  the same code on horovod.torch under `horovodrun --gloo`, from the build
           scripts/bench.sh --horovod caches in --horovod-venv (default BUILD/horovod-venv;
           skipped when there is none);
  ddp      torch DistributedDataParallel over gloo, its ranks started by hvdrun, the
           rendezvous on the first host's data address.
Every run uses the hosts' data0 links and one torch thread per rank. With more ranks than
this machine has CPUs (--shared-cpus auto), libhvd gets the settings it takes itself on such
a host (HVD_SPIN_YIELD=1 HVD_SPIN_US=200), since every namespace shows all the CPUs. Prints
the median total img/s of each backend and hvd's ratio to each other one. --netem shapes each
host's data link as bench_hosts.py does. Needs root, iproute2 and openssh-server;
tears the cluster down however it ends. Exit status 1 when a run failed, 2 when --netem
names a rate or loss that tc would not take, 77 when no cluster can be built here.
"""
import argparse
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))

import bench_hosts_peers as runs  # noqa: E402

RUN_TIMEOUT_S = 300
PYTHON = "/usr/bin/python3"
SCRIPT = os.path.join(REPO, "examples", "python", "torch_synthetic_benchmark.py")
TOTAL = re.compile(r"Total img/sec on \d+ rank\(s\): ([0-9.]+)")
BACKENDS = ("hvd", "horovod", "ddp")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--ranks-per-host", default="2",
                    help="ranks on every host, or on each host in order (2,1)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--backends", default="hvd,horovod,ddp")
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--bench-args", default="--batch-size 32 --num-warmup-batches 3 "
                    "--num-batches-per-iter 5 --num-iters 3",
                    help="further arguments of torch_synthetic_benchmark.py")
    ap.add_argument("--netem", default="")
    ap.add_argument("--horovod-venv", default=None,
                    help="Horovod's virtual environment (default BUILD/horovod-venv)")
    ap.add_argument("--shared-cpus", default="auto", choices=("auto", "0", "1"))
    ap.add_argument("--out", default="", help="directory for every run's output")
    args = ap.parse_args()
    try:
        runs.layout_of(args.ranks_per_host, args.hosts)
    except ValueError as e:
        ap.error(str(e))
    backends = [b for b in args.backends.split(",") if b]
    unknown = set(backends) - set(BACKENDS)
    if unknown or "hvd" not in backends:
        ap.error("--backends: hvd and any of horovod, ddp (got %s)" % args.backends)
    args.backends = backends
    return args


def benchmark(args, backend):
    return [PYTHON, SCRIPT, "--backend", backend, "--model", args.model, "--threads", "1"] + \
        args.bench_args.split()


def hvdrun(setup, env, argv):
    """argv under hvdrun across the hosts, with env (NAME=VALUE) exported to every rank."""
    cmd = [os.path.join(setup.build, "tools", "hvdrun", "hvdrun"), "-np", str(setup.np),
           "-H", setup.host_list(), "--ssh-identity-file", setup.key,
           "--network-interfaces", "data0"]
    for e in env:
        cmd += ["-x", e]
    return runs.run_one(setup.cluster.hosts[0], cmd + argv, RUN_TIMEOUT_S)


def run_backend(args, setup, backend):
    python_path = "PYTHONPATH=" + os.path.join(setup.build, "python")
    if backend == "hvd":
        spin = ["HVD_SPIN_YIELD=1", "HVD_SPIN_US=200"] if setup.shared_cpus else []
        return hvdrun(setup, [python_path] + spin, benchmark(args, "hvd"))
    if backend == "ddp":
        setup.runs += 1
        env = ["MASTER_ADDR=" + setup.cluster.hosts[0].data_addr, "GLOO_SOCKET_IFNAME=data0"]
        port = str(runs.TORCH_PORT + setup.runs % 1000)
        return hvdrun(setup, env, benchmark(args, "ddp") + ["--ddp-port", port])
    venv = setup.horovod_venv
    argv = [os.path.join(venv, "bin", "horovodrun"), "-np", str(setup.np),
            "-H", setup.host_list(), "--gloo", "--ssh-identity-file", setup.key,
            "--network-interfaces", "data0", "--start-timeout", "60",
            os.path.join(venv, "bin", "python")] + benchmark(args, "horovod")[1:]
    return runs.run_one(setup.cluster.hosts[0], argv, RUN_TIMEOUT_S)


def measure(args, cluster, key, build):
    """{backend: [total img/s of each repetition]} and how many runs failed."""
    setup = runs.Setup(cluster, key, args.ranks_per_host, "", "", build, REPO,
                       args.horovod_venv or os.path.join(build, "horovod-venv"),
                       runs.shared_cpus(args))
    backends = list(args.backends)
    if "horovod" in backends and runs.horovod_missing(setup):
        print("# backend horovod skipped: %s" % runs.horovod_missing(setup), flush=True)
        backends.remove("horovod")
    results = {b: [] for b in backends}
    failures = 0
    for rep in range(args.reps):
        for backend in backends:
            rc, out = run_backend(args, setup, backend)
            if args.out:
                with open(os.path.join(args.out, "%s.rep%d.txt" % (backend, rep)), "w") as f:
                    f.write(out)
            found = TOTAL.findall(out)
            if rc != 0 or not found:
                failures += 1
                print(out)
                print("bench_hosts_training: %s failed (exit %d, rep %d)" % (backend, rc, rep),
                      flush=True)
                continue
            results[backend].append(float(found[-1]))
            print("# rep %d %s: %s img/s" % (rep, backend, found[-1]), flush=True)
    return results, failures


def report(args, results):
    lines = [runs.table_title(args, args.model, "total img/s")]
    if not results.get("hvd"):
        return lines
    hvd = statistics.median(results["hvd"])
    for backend, values in results.items():
        if not values:
            continue
        m = statistics.median(values)
        ratio = "" if backend == "hvd" else "  hvd/%s %.2fx" % (backend, hvd / m)
        lines.append("%-8s %8.1f  (%s)%s" % (backend, m, ", ".join("%.1f" % v for v in values),
                                             ratio))
    return lines


def main():
    args = parse_args()
    return runs.run_on_cluster("bench_hosts_training", args,
                               lambda cluster, key, build: measure(args, cluster, key, build),
                               lambda results: report(args, results))


if __name__ == "__main__":
    sys.exit(main())
