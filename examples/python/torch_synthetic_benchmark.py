#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Synthetic data-parallel training throughput: hvd.torch, or torch DDP or Horovod for
comparison.

Every rank trains the same model on one fixed random batch (no data loading), so what is
measured is forward + backward + gradient averaging + optimizer update. Launch it with hvdrun
for either backend:

    hvdrun -np 2 python torch_synthetic_benchmark.py                     # hvd.torch
    hvdrun -np 2 python torch_synthetic_benchmark.py --backend ddp --ddp-port 29511
    horovodrun -np 2 python torch_synthetic_benchmark.py --backend horovod

--backend ddp wraps the model in torch.nn.parallel.DistributedDataParallel over the gloo
backend; its rank and world size come from hvdrun's HVD_RANK / HVD_SIZE (or RANK /
WORLD_SIZE), MASTER_ADDR defaults to 127.0.0.1 and the port is --ddp-port or MASTER_PORT.
--backend horovod runs the hvd.torch code unchanged on Horovod's horovod.torch (the same API).

Output (rank 0): one "Iter #i: X img/sec per rank" line per timed iteration, then
"Img/sec per rank: MEAN +-CONF" and "Total img/sec on N rank(s): MEAN +-CONF", CONF being
1.96 standard deviations over the iterations; the totals add up every rank's measurements.
"""

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------- models


class SmallCNN(nn.Module):
    """Three 3x3 convolutions (32, 64, 128 channels, two 2x2 poolings) and two linear layers:
    about 2.2 M parameters at 32x32 inputs."""

    def __init__(self, image_size, num_classes, width=1):
        super().__init__()
        c1, c2, c3 = 32 * width, 64 * width, 128 * width
        self.conv1 = nn.Conv2d(3, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.conv3 = nn.Conv2d(c2, c3, 3, padding=1)
        side = image_size // 4
        self.fc1 = nn.Linear(c3 * side * side, 256)
        self.fc2 = nn.Linear(256, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


class MLP(nn.Module):
    """Flattened image -> 2048 -> 2048 -> classes: about 10.5 M parameters at 32x32x3 and
    little arithmetic per parameter, so gradient communication weighs much more."""

    def __init__(self, image_size, num_classes):
        super().__init__()
        self.fc1 = nn.Linear(3 * image_size * image_size, 2048)
        self.fc2 = nn.Linear(2048, 2048)
        self.fc3 = nn.Linear(2048, num_classes)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


MODELS = {
    "cnn": lambda a: SmallCNN(a.image_size, a.num_classes),
    "wide-cnn": lambda a: SmallCNN(a.image_size, a.num_classes, width=2),
    "mlp": lambda a: MLP(a.image_size, a.num_classes),
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="cnn",
                   help="cnn: 3 conv + 2 linear layers; wide-cnn: twice the channels; "
                        "mlp: 3 linear layers of 2048 units")
    p.add_argument("--batch-size", type=int, default=32, help="images per rank per batch")
    p.add_argument("--image-size", type=int, default=32, help="square RGB input side")
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--num-warmup-batches", type=int, default=10,
                   help="batches run before timing starts")
    p.add_argument("--num-batches-per-iter", type=int, default=10,
                   help="batches per timed iteration")
    p.add_argument("--num-iters", type=int, default=10, help="timed iterations")
    p.add_argument("--fp16-allreduce", action="store_true",
                   help="send gradients as float16 (hvd: Compression.fp16; ddp: the "
                        "fp16_compress_hook comm hook)")
    p.add_argument("--use-adasum", action="store_true",
                   help="combine gradients with Adasum instead of averaging (hvd only)")
    p.add_argument("--backend", choices=("hvd", "ddp", "horovod"), default="hvd")
    p.add_argument("--ddp-port", type=int, default=None,
                   help="MASTER_PORT for --backend ddp (default: $MASTER_PORT)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op threads per rank (default: max(1, cpu_count // "
                        "local ranks))")
    p.add_argument("--breakdown", action="store_true",
                   help="also time forward, backward, gradient wait and update separately "
                        "(hvd: synchronize() then step() under skip_synchronize())")
    p.add_argument("--cprofile", metavar="FILE", default=None,
                   help="profile rank 0's timed iterations with cProfile: stats to FILE, "
                        "top functions to stdout")
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    for name in ("batch_size", "image_size", "num_classes", "num_batches_per_iter",
                 "num_iters"):
        if getattr(args, name) < 1:
            p.error("--%s must be >= 1" % name.replace("_", "-"))
    if args.num_warmup_batches < 0:
        p.error("--num-warmup-batches must be >= 0")
    if args.image_size % 4 != 0 and args.model != "mlp":
        p.error("--image-size must be a multiple of 4 for the CNN models")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be >= 1")
    if args.backend == "ddp" and args.use_adasum:
        p.error("--use-adasum needs --backend hvd or horovod (DDP has no Adasum)")
    if args.ddp_port is not None and not 0 < args.ddp_port < 65536:
        p.error("--ddp-port must be in 1..65535")
    return args


def env_int(names, default=None):
    """The first of the environment variables `names` that is set, as an int."""
    for n in names:
        v = os.environ.get(n)
        if v:
            try:
                return int(v)
            except ValueError:
                sys.exit("torch_synthetic_benchmark: %s=%r is not an integer" % (n, v))
    return default


# ---------------------------------------------------------------------------- backends


class HvdBackend:
    """hvd.torch, or (--backend horovod) Horovod's horovod.torch, which has the same API."""

    def __init__(self, args):
        import importlib

        hvd = importlib.import_module("horovod.torch" if args.backend == "horovod" else
                                      "hvd.torch")
        self.hvd = hvd
        hvd.init()
        self.rank, self.size, self.local_size = hvd.rank(), hvd.size(), hvd.local_size()

    def wrap(self, model, optimizer, args):
        hvd = self.hvd
        compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
        optimizer = hvd.DistributedOptimizer(optimizer,
                                             named_parameters=model.named_parameters(),
                                             compression=compression,
                                             op=hvd.Adasum if args.use_adasum else hvd.Average)
        # Start every rank from rank 0's model and optimizer state.
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        return model, optimizer

    def wait_gradients(self, optimizer):
        optimizer.synchronize()

    def update(self, optimizer):
        with optimizer.skip_synchronize():
            optimizer.step()

    def sum_over_ranks(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        return self.hvd.allreduce(t, op=self.hvd.Sum, name="benchmark.results").tolist()

    def finish(self):
        self.hvd.shutdown()


class DdpBackend:
    def __init__(self, args):
        import torch.distributed as dist

        self.dist = dist
        self.rank = env_int(("HVD_RANK", "RANK"))
        self.size = env_int(("HVD_SIZE", "WORLD_SIZE"))
        if self.rank is None or self.size is None:
            sys.exit("torch_synthetic_benchmark: --backend ddp needs HVD_RANK/HVD_SIZE (set "
                     "by hvdrun) or RANK/WORLD_SIZE")
        self.local_size = env_int(("HVD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"), self.size)
        port = args.ddp_port if args.ddp_port is not None else env_int(("MASTER_PORT",))
        if port is None:
            sys.exit("torch_synthetic_benchmark: --backend ddp needs --ddp-port PORT or "
                     "MASTER_PORT (the same free port on every rank)")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(port)
        os.environ["RANK"] = str(self.rank)
        os.environ["WORLD_SIZE"] = str(self.size)
        dist.init_process_group("gloo", init_method="env://", rank=self.rank,
                                world_size=self.size)

    def wrap(self, model, optimizer, args):
        # DDP broadcasts rank 0's parameters and buffers when it wraps the model.
        model = nn.parallel.DistributedDataParallel(model)
        if args.fp16_allreduce:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

            model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        return model, optimizer

    def wait_gradients(self, optimizer):
        pass  # DDP's backward returns only once every bucket's allreduce has finished

    def update(self, optimizer):
        optimizer.step()

    def sum_over_ranks(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.SUM)
        return t.tolist()

    def finish(self):
        # Every rank past its last collective before any tears gloo down: destroying the group
        # while a peer's last message is in flight ended one rank in std::terminate (seen once
        # under load, "terminate called without an active exception").
        self.dist.barrier()
        self.dist.destroy_process_group()


# ---------------------------------------------------------------------------- benchmark


def cpu_seconds():
    """User + system CPU time of every thread of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def mean_conf(values):
    """Mean and 1.96 population standard deviations."""
    m = sum(values) / len(values)
    var = sum((v - m) ** 2 for v in values) / len(values)
    return m, 1.96 * var ** 0.5


def main(argv=None):
    args = parse_args(argv)
    backend = (DdpBackend if args.backend == "ddp" else HvdBackend)(args)
    rank, size = backend.rank, backend.size
    threads = args.threads or max(1, (os.cpu_count() or 1) // max(1, backend.local_size))
    torch.set_num_threads(threads)

    def log(msg):
        if rank == 0:
            print(msg, flush=True)

    torch.manual_seed(args.seed)  # the same initial model everywhere (and broadcast anyway)
    model = MODELS[args.model](args)
    # Horovod's recipe: the learning rate grows with the number of ranks (not with Adasum).
    lr_scaler = 1 if args.use_adasum else size
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * lr_scaler, momentum=0.9)
    model, optimizer = backend.wrap(model, optimizer, args)

    gen = torch.Generator().manual_seed(args.seed + 1 + rank)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=gen)
    target = torch.randint(0, args.num_classes, (args.batch_size,), generator=gen)

    phases = {"forward": 0.0, "backward": 0.0, "gradient wait": 0.0, "update": 0.0}
    phase_batches = [0]

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def step_timed():
        optimizer.zero_grad()
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(data), target)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        backend.wait_gradients(optimizer)
        t3 = time.perf_counter()
        backend.update(optimizer)
        t4 = time.perf_counter()
        for key, dt in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            phases[key] += dt
        phase_batches[0] += 1

    benchmark_step = step_timed if args.breakdown else step

    n_params = sum(p.numel() for p in model.parameters())
    log("Model: %s (%.2f M parameters, %.1f MB of float32 gradients)"
        % (args.model, n_params / 1e6, n_params * 4 / 1e6))
    log("Backend: %s%s%s" % (args.backend, ", fp16 allreduce" if args.fp16_allreduce else "",
                             ", Adasum" if args.use_adasum else ""))
    log("Batch size: %d per rank, images %dx%dx3" % (args.batch_size, args.image_size,
                                                      args.image_size))
    log("Number of ranks: %d, torch threads per rank: %d (torch %s)"
        % (size, threads, torch.__version__))

    log("Running warmup...")
    for _ in range(args.num_warmup_batches):
        step()
    log("Running benchmark...")
    profiler = cProfile.Profile() if args.cprofile and rank == 0 else None
    img_secs = []
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    for i in range(args.num_iters):
        if profiler:
            profiler.enable()
        t0 = time.perf_counter()
        for _ in range(args.num_batches_per_iter):
            benchmark_step()
        elapsed = time.perf_counter() - t0
        if profiler:
            profiler.disable()
        img_sec = args.batch_size * args.num_batches_per_iter / elapsed
        log("Iter #%d: %.1f img/sec per rank" % (i, img_sec))
        img_secs.append(img_sec)
    cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0

    # Every rank measured its own rate: the job's rate per iteration is their sum.
    totals = backend.sum_over_ranks(img_secs + [cpu, wall])
    cpu_all, wall_all = totals[-2], totals[-1]
    totals = totals[:-2]
    total_mean, total_conf = mean_conf(totals)
    log("Img/sec per rank: %.1f +-%.1f" % (total_mean / size, total_conf / size))
    log("Total img/sec on %d rank(s): %.1f +-%.1f" % (size, total_mean, total_conf))
    # CPU time of every thread (compute, engine, gloo) of every rank, per image trained: what
    # the job costs when the ranks share too few CPUs, less sensitive to other load than
    # img/sec.
    images = size * args.num_iters * args.num_batches_per_iter * args.batch_size
    log("CPU time: %.2f ms per image over all ranks and threads, %.2f CPUs busy on average"
        % (cpu_all / images * 1e3, cpu_all / (wall_all / size)))

    if args.breakdown:
        # Per phase: rank 0's mean and the slowest rank's mean, in ms per batch.
        means = [v / phase_batches[0] * 1e3 for v in phases.values()]
        sums = backend.sum_over_ranks(means)
        log("Per batch, ms (rank 0 | mean over ranks):")
        for key, mine, total in zip(phases, means, sums):
            log("  %-14s %8.2f | %8.2f" % (key, mine, total / size))
        log("  %-14s %8.2f | %8.2f" % ("all", sum(means), sum(sums) / size))

    if profiler:
        profiler.dump_stats(args.cprofile)
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue(), flush=True)

    backend.finish()


if __name__ == "__main__":
    main()
