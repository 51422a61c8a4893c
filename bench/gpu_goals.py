#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpu_goals.py --nccl-path F --raw-nccl F [--host-path F --copy-model F [--duplex-model F]]

libhvd's GPU paths against what bounds them, per size, from the outputs of one GPU run
(scripts/gpu_check.sh):

  NCCL path:   hvd_bench --device cuda (HVD_GPU_OPERATIONS=nccl) against raw NCCL on the same
               GPUs (bench/peers/nccl_allreduce_perf); goal: at most 5 % slower.
  host path:   hvd_bench --device cuda (HVD_GPU_OPERATIONS=host) against the copy-bound model
               (bench/peers/cuda_copy_bw: a copy to pinned host memory and back, "staged");
               goal: at most 10 % slower. With --duplex-model, also against both copies at
               once ("duplex"), what the host path's pipelined allreduce can approach from
               its first chunks on (runs of one chunk, up to 4 MiB, cannot).

Each input is a program's output in bench/peers/bench_common.h's format; hvdrun's "[r]<stdout>: "
prefixes are skipped. Prints a Markdown table per comparison (one whose input is missing says so,
and the others still print); only the standard library is used.

hvd_bench times each step alone, from the enqueue to the completed wait, and reports the
median; the peers time a loop of back-to-back operations and report the mean, which hides each
operation's launch and completion latency. Below JUDGED_FROM bytes that latency dominates, so
those rows are shown but not judged."""
import argparse
import re

_PREFIX = re.compile(r"^\[\d+\]<stdout>: ")
JUDGED_FROM = 16 << 20


class MissingInput(Exception):
    pass


def read(path, op=None):
    """{size_bytes: time_us} of the data lines of path (those of op only, when given); raises
    MissingInput when the file is missing or holds no data line (the run that makes it
    failed)."""
    times = {}
    try:
        f = open(path)
    except OSError as e:
        raise MissingInput("%s: %s (did the run that writes it fail?)" % (path, e.strerror))
    with f:
        for line in f:
            line = _PREFIX.sub("", line.strip())
            if not line or line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) != 7 or not fields[0].isdigit():
                continue
            if op is None or fields[3] == op:
                times[int(fields[0])] = float(fields[4])
    if not times:
        raise MissingInput("%s holds no measurement%s" % (path, " of " + op if op else ""))
    return times


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def table(title, ours, bound, bound_name, goal):
    sizes = sorted(set(ours) & set(bound))
    lines = ["%s (goal: at most %d %% over %s)" % (title, round((goal - 1) * 100), bound_name),
             "", "| size | libhvd us | %s us | ratio | goal |" % bound_name,
             "|---|---:|---:|---:|---|"]
    for s in sizes:
        ratio = ours[s] / bound[s] if bound[s] > 0 else float("inf")
        verdict = "met" if ratio <= goal else "MISSED"
        if s < JUDGED_FROM:
            verdict = "(latency-bound: not judged)"
        lines.append("| %s | %.2f | %.2f | %.3f | %s |" %
                     (human(s), ours[s], bound[s], ratio, verdict))
    if not sizes:
        lines.append("| (no size measured by both) | | | | |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nccl-path", required=True, help="hvd_bench output, NCCL path")
    ap.add_argument("--raw-nccl", required=True, help="nccl_allreduce_perf output")
    ap.add_argument("--host-path", help="hvd_bench output, host-staged path")
    ap.add_argument("--copy-model", help="cuda_copy_bw -d staged output")
    ap.add_argument("--duplex-model", help="cuda_copy_bw -d duplex output")
    args = ap.parse_args()
    comparisons = [("NCCL path", (args.nccl_path, None), (args.raw_nccl, None), "raw NCCL", 1.05)]
    if args.host_path and args.copy_model:
        comparisons.append(("host-staged path", (args.host_path, None),
                            (args.copy_model, "staged"), "copy model", 1.10))
        if args.duplex_model:
            comparisons.append(("host-staged path, pipelined", (args.host_path, None),
                                (args.duplex_model, "duplex"), "duplex copies", 1.10))
    for i, (title, ours, bound, bound_name, goal) in enumerate(comparisons):
        if i:
            print()
        try:
            print(table(title, read(*ours), read(*bound), bound_name, goal))
        except MissingInput as e:
            print("%s: not compared, an input is missing: %s" % (title, e))


if __name__ == "__main__":
    main()
