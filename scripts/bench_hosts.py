#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A collective across hosts: libhvd flat, hierarchical and its peers, on a namespace cluster.

    scripts/bench_hosts.py [--build DIR] [--collective allreduce|allgather|broadcast]
                           [--hosts 3] [--ranks-per-host 2|2,1,...] [--reps 3]
                           [--netem "delay 50us rate 10gbit"] [--sizes 4K,64K,1M,16M,64M]
                           [--peers mpi,gloo,torch,horovod] [--horovod-venv DIR]
                           [--shared-cpus auto|0|1] [--out DIR]

Builds hosts as network namespaces of this machine with a real sshd each (tests/cluster),
runs `hvdrun -H hostA:L,hostB:L,...` with hvd_bench across them, with
HVD_HIERARCHICAL_<COLLECTIVE>=0 (flat) and =1 (hierarchical), and prints per size the median
busbw of each over --reps repetitions and their ratio (busbw from size_bytes and time_us:
hvd_bench's time is the median step, the peers' the mean of their timed loop). --out keeps
every run's output and the table. --netem shapes what each host sends on its data link
with tc netem; a kernel without sch_netem gets the rate (through tbf) and a random loss
(through a packet filter) alone, and it says what was left out.

--peers runs, in the same repetitions and interleaved with libhvd's runs, the same
collective and sizes over the same hosts and data links with
  mpi      Open MPI (bench/peers/mpi_allreduce_perf): mpirun -H over the cluster's sshd,
           pml ob1 with btl tcp,self,vader (TCP between hosts, shared memory within one),
           unbound as hvdrun's ranks are;
  gloo     Gloo's C++ API over TCP (bench/peers/gloo_allreduce_perf), each rank started in
           its host, bound to the host's data address, FileStore rendezvous;
  torch    torch.distributed's gloo backend (bench/peers/torch_allreduce_perf.py) for
           /usr/bin/python3's torch, GLOO_SOCKET_IFNAME=data0; skipped without torch;
  horovod  Horovod's horovod.torch allreduce_ (bench/python_allreduce_perf.py) under
           `horovodrun --gloo`, from the build scripts/bench.sh --horovod caches in
           --horovod-venv (default BUILD/horovod-venv); skipped when there is none.
Every host shows all of this machine's CPUs, so where the hosts' ranks outnumber them
(--shared-cpus auto, or 1) neither libhvd nor Open MPI can tell that ranks share CPUs: both
then get the settings they take themselves on such a host (libhvd HVD_SPIN_YIELD=1
HVD_SPIN_US=200, Open MPI mpi_yield_when_idle 1); Gloo, torch and Horovod do not spin.
It then also prints each peer's median busbw and libhvd's best (flat or hierarchical) over
it. The peers are built with the tree when their libraries are found (-DHVD_BUILD_PEER_BENCH,
the default; Debian: libopenmpi-dev, libgloo-dev; scripts/bench.sh installs them).

Needs root, iproute2 and openssh-server (scripts/common.sh installs them); tears the cluster
down however it ends. Exit status 1 when a run failed (its output is printed and the others
go on), 2 when --netem names a rate or loss that tc would not take, 77 when no cluster can be
built here.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))

import bench_hosts_peers as runs  # noqa: E402

RUN_TIMEOUT_S = 600


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--collective", default="allreduce",
                    choices=("allreduce", "allgather", "broadcast"))
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--ranks-per-host", default="2",
                    help="ranks on every host, or on each host in order (2,1)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--netem", default="")
    ap.add_argument("--sizes", default="4K,64K,1M,16M,64M")
    ap.add_argument("--time", default="0.5", help="timed seconds per size (-t)")
    ap.add_argument("--peers", default="",
                    help="comma separated: mpi, gloo, torch, horovod (default: none)")
    ap.add_argument("--shared-cpus", default="auto", choices=("auto", "0", "1"),
                    help="1: libhvd and Open MPI get their settings for more ranks than CPUs "
                    "(auto: when hosts x ranks exceeds this machine's CPUs)")
    ap.add_argument("--out", default="",
                    help="directory for every run's output (LABEL.repN.txt) and the table")
    ap.add_argument("--horovod-venv", default=None,
                    help="Horovod's virtual environment (default BUILD/horovod-venv)")
    args = ap.parse_args()
    try:
        runs.layout_of(args.ranks_per_host, args.hosts)
    except ValueError as e:
        ap.error(str(e))
    unknown = set(filter(None, args.peers.split(","))) - set(runs.PEERS)
    if unknown:
        ap.error("unknown --peers %s (known: %s)" % (",".join(sorted(unknown)),
                                                      ",".join(runs.PEERS)))
    return args


def usable_peers(args, setup):
    """The --peers that can run here, in the order given; says why any other is skipped."""
    peers = []
    for name in filter(None, args.peers.split(",")):
        why = ""
        if args.collective not in runs.PEERS[name][1]:
            why = "it has no %s benchmark here" % args.collective
        elif name == "mpi" and not os.access(os.path.join(
                setup.build, "bench", "peers", "mpi_allreduce_perf"), os.X_OK):
            why = "the build has no mpi_allreduce_perf (Debian: libopenmpi-dev)"
        elif name == "gloo" and not os.access(os.path.join(
                setup.build, "bench", "peers", "gloo_allreduce_perf"), os.X_OK):
            why = "the build has no gloo_allreduce_perf (Debian: libgloo-dev)"
        elif name == "torch" and subprocess.run(
                ["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode:
            why = "/usr/bin/python3 has no torch"
        elif name == "horovod":
            why = runs.horovod_missing(setup)
        if why:
            print("# peer %s skipped: %s" % (name, why), flush=True)
        else:
            peers.append(name)
    return peers


def measure(args, cluster, key, build):
    """{label: [table of each repetition]} and how many runs failed."""
    setup = runs.Setup(cluster, key, args.ranks_per_host, args.sizes, args.time, build, REPO,
                       args.horovod_venv or os.path.join(build, "horovod-venv"),
                       runs.shared_cpus(args))
    peers = usable_peers(args, setup)
    cases = [("flat", lambda: runs.hvd(setup, "0", args.collective, RUN_TIMEOUT_S)),
             ("hier", lambda: runs.hvd(setup, "1", args.collective, RUN_TIMEOUT_S))]
    for name in peers:
        cases.append((name, lambda f=runs.PEERS[name][0]: f(setup, args.collective,
                                                             RUN_TIMEOUT_S)))
    factor = runs.bus_factor(args.collective, setup.np)
    results = {label: [] for label, _ in cases}
    failures = 0
    for rep in range(args.reps):
        for label, run in cases:
            rc, out = run()
            if args.out:
                with open(os.path.join(args.out, "%s.rep%d.txt" % (label, rep)), "w") as f:
                    f.write(out)
            table = runs.parse_table(out, factor)
            if rc != 0 or not table:
                failures += 1
                print(out)
                print("bench_hosts: %s failed (exit %d, rep %d)" % (label, rc, rep), flush=True)
                continue
            results[label].append(table)
            print("# rep %d %s done" % (rep, label), flush=True)
    return results, failures


def median(tables, size):
    values = [t[size] for t in tables if size in t]
    return statistics.median(values) if values else float("nan")


def report(args, results):
    """The table of medians, as lines."""
    labels = [label for label in results if results[label]]
    if not {"flat", "hier"} <= set(labels):
        return []
    peers = [label for label in labels if label not in ("flat", "hier")]
    lines = [runs.table_title(args, args.collective, "busbw in GB/s"),
             "# best = libhvd's better of flat and hier; best/<peer> = best over that peer"]
    head = ["size_bytes", "flat", "hier", "hier/flat"] + peers + ["best/" + p for p in peers]
    lines.append(" ".join("%12s" % h for h in head))
    for size in sorted(results["flat"][0]):
        flat, hier = median(results["flat"], size), median(results["hier"], size)
        best = max(flat, hier)
        peer = [median(results[p], size) for p in peers]
        cells = ["%12d" % size, "%12.4f" % flat, "%12.4f" % hier,
                 "%12.2f" % (hier / flat if flat else 0.0)]
        cells += ["%12.4f" % v for v in peer]
        cells += ["%12.2f" % (best / v if v else 0.0) for v in peer]
        lines.append(" ".join(cells))
    return lines


def main():
    args = parse_args()
    return runs.run_on_cluster("bench_hosts", args,
                               lambda cluster, key, build: measure(args, cluster, key, build),
                               lambda results: report(args, results))


if __name__ == "__main__":
    sys.exit(main())
