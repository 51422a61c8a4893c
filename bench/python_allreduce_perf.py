#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""python_allreduce_perf.py - allreduce through a Horovod-style PyTorch module, in the output
format of bench/peers/bench_common.h, so that libhvd's Python path (hvd.torch) and Horovod
itself (horovod.torch) are measured by the same code.

    hvdrun -np 2 python3 python_allreduce_perf.py --module hvd.torch
    horovodrun -np 2 --gloo python3 python_allreduce_perf.py --module horovod.torch

Sizes: in-place allreduce_ (Average, as gradients are reduced) of one float32 tensor per call,
from -b to -e bytes. With --many N: a training-like step of N tensors of -b bytes each,
allreduce_async_ on every one and then synchronize on every handle; size_bytes is the step's
total, time_us the step's; with --grouped, the step is one grouped_allreduce_async_ of the N
tensors and one synchronize. Only rank 0 prints. Every result is checked: rank r starts with
r + 1 everywhere, so every average after the first is (size + 1) / 2.
"""
import argparse
import importlib
import sys
import time

import torch


def parse_size(text):
    text = text.strip().upper().rstrip("B")
    mult = 1
    for suffix, m in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            text, mult = text[:-1], m
    return int(float(text) * mult)


def timed(hvd, step, target):
    """Seconds per call of step(), calibrated to about `target` seconds. Every decision is rank
    0's, broadcast, so that every rank makes the same number of calls."""
    for _ in range(3):
        step()
    iters = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        elapsed = time.perf_counter() - t0
        done = torch.tensor([1 if elapsed >= min(0.02, target) else 0])
        if hvd.broadcast(done, 0, name="perf.calibrated").item():
            break
        iters *= 2
    # At least 3 timed calls: a mean of one is a single sample of a noisy host.
    count = torch.tensor([max(3, int(target * iters / max(elapsed, 1e-9)))])
    count = int(hvd.broadcast(count, 0, name="perf.count").item())
    t0 = time.perf_counter()
    for _ in range(count):
        step()
    return (time.perf_counter() - t0) / count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", default="hvd.torch")
    ap.add_argument("-b", "--minbytes", default="8")
    ap.add_argument("-e", "--maxbytes", default="64M")
    ap.add_argument("-f", "--factor", type=float, default=4.0)
    ap.add_argument("-x", "--extra", default="none",
                    help="more sizes, comma separated ('none': no extra size)")
    ap.add_argument("-t", "--target", type=float, default=0.3)
    ap.add_argument("--many", type=int, default=1)
    ap.add_argument("--grouped", action="store_true",
                    help="with --many: one grouped_allreduce_async_ of the N tensors per step")
    args = ap.parse_args()
    hvd = importlib.import_module(args.module)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    expect = (size + 1) / 2.0
    lo, hi = parse_size(args.minbytes), parse_size(args.maxbytes)
    if args.many > 1:
        hi = lo
    if rank == 0:
        print(f"# python_allreduce_perf module={args.module} coll=allreduce nranks={size} "
              f"inplace=1 many={args.many} grouped={int(args.grouped)} "
              f"torch={torch.__version__}")
        print("# size_bytes count dtype op time_us algbw_GBps busbw_GBps")
    sizes = []
    nbytes = lo
    while nbytes <= hi:
        sizes.append(nbytes)
        nbytes = int(nbytes * args.factor) if args.factor > 1 else hi + 1
    if args.extra != "none" and args.many == 1:
        sizes = sorted(set(sizes) | {parse_size(x) for x in args.extra.split(",") if x})
    errors = 0
    for nbytes in sizes:
        count = max(1, nbytes // 4)
        tensors = [torch.full((count,), float(rank + 1)) for _ in range(args.many)]
        names = [f"perf.{nbytes}.{i}" for i in range(args.many)]
        if args.many == 1:
            def step():
                hvd.allreduce_(tensors[0], op=hvd.Average, name=names[0])
        elif args.grouped:
            def step():
                hvd.synchronize(hvd.grouped_allreduce_async_(tensors, op=hvd.Average,
                                                             name=names[0]))
        else:
            def step():
                handles = [hvd.allreduce_async_(t, op=hvd.Average, name=n)
                           for t, n in zip(tensors, names)]
                for h in handles:
                    hvd.synchronize(h)

        seconds = timed(hvd, step, args.target)
        errors += sum(int((t != expect).sum().item()) for t in tensors)
        total = count * 4 * args.many
        algbw = total / seconds / 1e9
        if rank == 0:
            print(f"{total:12d} {count * args.many:12d} {'float':>8} {'avg':>6} "
                  f"{seconds * 1e6:12.2f} {algbw:10.3f} {algbw * 2 * (size - 1) / size:10.3f}")
    if rank == 0:
        print(f"# errors: {errors}")
    hvd.shutdown()
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
