#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains a small MLP on scikit-learn's digits (8x8 images, 10 classes) with hvd.torch.

    hvdrun -np 4 python3 torch_digits_train.py

The global batch is fixed (--global-batch-size, 64 by default) and every rank takes its share
of each global batch (ranks r, r + N, r + 2N, ... of it), so the job computes the same
training run on any number of ranks:

    each rank's loss is  sum over its share of the per-sample losses * N / B
    DistributedOptimizer averages the N ranks' gradients:
        (1/N) * sum_r (N/B) * sum_{share r} grad = (1/B) * sum_{batch} grad,

the gradient of the global batch's mean loss, exactly as one rank computes it (up to the
order of float additions), also for the shorter last batch of an epoch. The learning rate is
therefore not scaled with the number of ranks. Every rank shuffles with the same seed, so all
agree on the batches.

Test accuracy is counted on each rank's share of the test set and summed with hvd.allreduce;
rank 0 prints the last epoch's mean training loss and the accuracy as `final_train_loss=0.xxxx`
and `test_accuracy=0.xxxx`, and main() returns them on every rank (ray_digits.py runs it on
Ray workers). Needs scikit-learn (Debian: python3-sklearn);
load_digits ships with it, nothing is downloaded.
"""

import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import hvd.torch as hvd


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--global-batch-size", type=int, default=64,
                   help="samples per step over all ranks together")
    p.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (not scaled "
                   "with the number of ranks: the global batch is fixed)")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--hidden", type=int, default=64, help="hidden units")
    p.add_argument("--test-fraction", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=0,
                   help="seeds the split, the initial model and the shuffling")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--log-every", type=int, default=10,
                   help="print the mean training loss every N epochs (0: never)")
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error("--epochs must be >= 1")
    if args.global_batch_size < 1:
        p.error("--global-batch-size must be >= 1")
    if not 0.0 < args.test_fraction < 1.0:
        p.error("--test-fraction must be between 0 and 1")
    if args.hidden < 1 or args.threads < 1:
        p.error("--hidden and --threads must be >= 1")
    return args


def load_data(test_fraction, seed):
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("torch_digits_train: scikit-learn is missing (Debian: apt-get install "
                 "python3-sklearn)")
    digits = load_digits()
    x = digits.data.astype("float32") / 16.0  # pixel values are 0..16
    y = digits.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y)
    return (torch.from_numpy(x_train), torch.from_numpy(y_train), torch.from_numpy(x_test),
            torch.from_numpy(y_test))


def main(argv=None):
    """Trains on this job's ranks; returns (final_train_loss, test_accuracy)."""
    args = parse_args(argv)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if args.global_batch_size < size:
        sys.exit("torch_digits_train: --global-batch-size %d is smaller than the %d ranks"
                 % (args.global_batch_size, size))
    torch.set_num_threads(args.threads)

    x_train, y_train, x_test, y_test = load_data(args.test_fraction, args.seed)

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(x_train.shape[1], args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    # Start every rank from rank 0's model and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    n_train, batch = len(x_train), args.global_batch_size
    if rank == 0:
        print("digits: %d training and %d test samples, %d rank(s), global batch %d, "
              "%d epochs" % (n_train, len(x_test), size, batch, args.epochs), flush=True)
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(n_train, generator=torch.Generator().manual_seed(
            args.seed * 100003 + epoch))
        loss_sum = torch.zeros(1, dtype=torch.float64)
        for start in range(0, n_train, batch):
            global_batch = order[start:start + batch]
            mine = global_batch[rank::size]
            optimizer.zero_grad()
            losses = F.cross_entropy(model(x_train[mine]), y_train[mine], reduction="none")
            (losses.sum() * (size / len(global_batch))).backward()
            optimizer.step()
            loss_sum += losses.detach().sum().double()
        log = args.log_every and ((epoch + 1) % args.log_every == 0 or epoch == 0)
        if log or epoch == args.epochs - 1:
            # Metric averaging: the ranks' loss sums added up, over all training samples.
            mean_loss = hvd.allreduce(loss_sum, op=hvd.Sum, name="train_loss").item() / n_train
            if log and rank == 0:
                print("epoch %d: train_loss=%.4f" % (epoch + 1, mean_loss), flush=True)

    model.eval()
    with torch.no_grad():
        xs, ys = x_test[rank::size], y_test[rank::size]
        correct = (model(xs).argmax(dim=1) == ys).sum().item()
    counts = hvd.allreduce(torch.tensor([correct, len(ys)], dtype=torch.float64), op=hvd.Sum,
                           name="test_accuracy")
    accuracy = counts[0].item() / counts[1].item()
    if rank == 0:
        print("final_train_loss=%.4f" % mean_loss, flush=True)
        print("test_accuracy=%.4f" % accuracy, flush=True)
    hvd.shutdown()
    return mean_loss, accuracy


if __name__ == "__main__":
    main()
