#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A collective across hosts: flat against hierarchical, on a namespace cluster of this machine.

    scripts/bench_hosts.py [--build DIR] [--collective allreduce|allgather|broadcast]
                           [--hosts 3] [--ranks-per-host 2] [--reps 3]
                           [--netem "delay 50us rate 10gbit"] [--sizes 64K,1M,16M,64M]

Builds hosts as network namespaces with a real sshd each (tests/cluster), runs
`hvdrun -H hostA:L,hostB:L,...` with hvd_bench across them, alternating
HVD_HIERARCHICAL_<COLLECTIVE>=0 and =1 for --reps repetitions, and prints the median busbw of
each per size with their ratio. --netem shapes each host's data link where the kernel has
sch_netem (otherwise it says so and runs unshaped). Needs root, iproute2 and openssh-server
(scripts/common.sh installs them); tears the cluster down however it ends.
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cluster"))

from netns_cluster import Cluster, Skip, install_signal_teardown  # noqa: E402
from ssh_hosts import start_sshd  # noqa: E402


def parse_table(out):
    """{size_bytes: busbw} from hvd_bench's output (rank-prefixed lines of rank 0)."""
    rows = {}
    for line in out.splitlines():
        fields = line.split(">: ", 1)[-1].split() if ">: " in line else line.split()
        if len(fields) == 7 and fields[0].isdigit():
            rows[int(fields[0])] = float(fields[6])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--collective", default="allreduce",
                    choices=("allreduce", "allgather", "broadcast"))
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--ranks-per-host", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--netem", default="")
    ap.add_argument("--sizes", default="64K,1M,4M,16M,64M")
    ap.add_argument("--time", default="0.5", help="hvd_bench -t: timed seconds per size")
    args = ap.parse_args()
    install_signal_teardown()
    build = os.path.abspath(args.build)
    hvdrun = os.path.join(build, "tools", "hvdrun", "hvdrun")
    bench = os.path.join(build, "bench", "hvd_bench")
    setting = "HVD_HIERARCHICAL_" + args.collective.upper()
    names = ["host%c" % (ord("A") + i) for i in range(args.hosts)]
    try:
        with Cluster(names) as cluster:
            key = start_sshd(cluster)
            if args.netem:
                for h in cluster.hosts:
                    why = h.shape("data0", args.netem)
                    if why:
                        print("# netem not applied (%s): unshaped links" % why)
                        break
            results = {"0": [], "1": []}
            for rep in range(args.reps):
                for mode in ("0", "1"):
                    argv = [hvdrun, "-np", str(args.hosts * args.ranks_per_host), "-H",
                            ",".join("%s:%d" % (n, args.ranks_per_host) for n in names),
                            "--ssh-identity-file", key, "--network-interfaces", "data0",
                            "-x", setting + "=" + mode,
                            bench, "-c", args.collective, "-b", "8", "-e", "8", "-x", args.sizes,
                            "-t", args.time,
                            "-C", "0"]
                    r = cluster.hosts[0].run(argv, timeout=600)
                    if r.returncode != 0:
                        print(r.stdout)
                        print("bench_hosts: hvd_bench failed (mode %s, rep %d)" % (mode, rep))
                        return 1
                    results[mode].append(parse_table(r.stdout))
                    print("# rep %d %s=%s done" % (rep, setting, mode), flush=True)
    except Skip as e:
        print("bench_hosts: cannot build a cluster here: %s" % e)
        return 77
    sizes = sorted(results["0"][0])
    print("# %s, %d hosts x %d ranks, %d reps, medians; netem: %s" %
          (args.collective, args.hosts, args.ranks_per_host, args.reps, args.netem or "none"))
    print("%12s %14s %14s %8s" % ("size_bytes", "flat_busbw", "hier_busbw", "ratio"))
    for size in sizes:
        flat = statistics.median(t[size] for t in results["0"])
        hier = statistics.median(t[size] for t in results["1"])
        print("%12d %14.3f %14.3f %8.2f" % (size, flat, hier, hier / flat if flat else 0.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
