#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains a small pure-JAX MLP on scikit-learn's digits (8x8 images, 10 classes) with hvd.jax.

    hvdrun -np 2 python3 jax_digits.py

As in torch_digits_train.py, the global batch is fixed (--global-batch-size, 64 by default)
and every rank takes its share of each global batch (ranks r, r + N, ... of it), weighting
its summed loss by N / B: DistributedOptimizer's average of the ranks' gradients is then
the gradient of the global batch's mean loss, so the job computes the same training run on
any number of ranks and the learning rate is not scaled. The training step (forward,
gradient, hvd.jax.DistributedOptimizer's allreduce, optax's update) is one jax.jit function.

Rank 0 prints the last epoch's mean training loss and the test accuracy (counted on each
rank's share of the test set and summed with hvd.allreduce) as `final_train_loss=0.xxxx` and
`test_accuracy=0.xxxx`. Needs jax, optax and scikit-learn; load_digits ships with
scikit-learn, nothing is downloaded.
"""

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

import hvd.jax as hvd


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--global-batch-size", type=int, default=64,
                   help="samples per step over all ranks together")
    p.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--hidden", type=int, default=64, help="hidden units")
    p.add_argument("--test-fraction", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=0,
                   help="seeds the split, the initial model and the shuffling")
    p.add_argument("--log-every", type=int, default=10,
                   help="print the mean training loss every N epochs (0: never)")
    args = p.parse_args(argv)
    if args.epochs < 1 or args.global_batch_size < 1 or args.hidden < 1:
        p.error("--epochs, --global-batch-size and --hidden must be >= 1")
    if not 0.0 < args.test_fraction < 1.0:
        p.error("--test-fraction must be between 0 and 1")
    return args


def load_data(test_fraction, seed):
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("jax_digits: scikit-learn is missing (pip install scikit-learn)")
    digits = load_digits()
    x = digits.data.astype(np.float32) / 16.0  # pixel values are 0..16
    y = digits.target.astype(np.int32)
    return train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)


def init_params(key, n_in, hidden, n_out):
    k1, k2 = jax.random.split(key)
    # PyTorch's nn.Linear initialisation: uniform in +-1/sqrt(fan_in).
    def dense(k, fan_in, fan_out):
        kw, kb = jax.random.split(k)
        bound = 1.0 / np.sqrt(fan_in)
        return {"w": jax.random.uniform(kw, (fan_in, fan_out), jnp.float32, -bound, bound),
                "b": jax.random.uniform(kb, (fan_out,), jnp.float32, -bound, bound)}
    return {"hidden": dense(k1, n_in, hidden), "out": dense(k2, hidden, n_out)}


def logits(params, x):
    h = jax.nn.relu(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return h @ params["out"]["w"] + params["out"]["b"]


def losses(params, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(logits(params, x), y)


def main(argv=None):
    args = parse_args(argv)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if args.global_batch_size < size:
        sys.exit("jax_digits: --global-batch-size %d is smaller than the %d ranks"
                 % (args.global_batch_size, size))
    x_train, x_test, y_train, y_test = load_data(args.test_fraction, args.seed)

    # Every rank starts from rank 0's model (here they are equal anyway: the same seed).
    params = init_params(jax.random.PRNGKey(args.seed + rank), x_train.shape[1], args.hidden, 10)
    params = hvd.broadcast_parameters(params, root_rank=0)
    tx = hvd.DistributedOptimizer(optax.sgd(args.lr, momentum=args.momentum), name="grads")
    opt_state = tx.init(params)

    @jax.jit
    def train_step(params, opt_state, x, y, weight):
        def loss_fn(p):
            per_sample = losses(p, x, y)
            return jnp.sum(per_sample) * weight, jnp.sum(per_sample)

        grads, loss_sum = jax.grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss_sum

    n_train, batch = len(x_train), args.global_batch_size
    if rank == 0:
        print("digits: %d training and %d test samples, %d rank(s), global batch %d, "
              "%d epochs" % (n_train, len(x_test), size, batch, args.epochs), flush=True)
    for epoch in range(args.epochs):
        order = np.random.default_rng(args.seed * 100003 + epoch).permutation(n_train)
        loss_sum = 0.0
        for start in range(0, n_train, batch):
            global_batch = order[start:start + batch]
            mine = global_batch[rank::size]
            params, opt_state, part = train_step(params, opt_state, x_train[mine],
                                                 y_train[mine],
                                                 np.float32(size / len(global_batch)))
            loss_sum += float(part)
        log = args.log_every and ((epoch + 1) % args.log_every == 0 or epoch == 0)
        if log or epoch == args.epochs - 1:
            total = hvd.allreduce(jnp.float32(loss_sum), op=hvd.Sum, name="train_loss")
            mean_loss = float(total) / n_train
            if log and rank == 0:
                print("epoch %d: train_loss=%.4f" % (epoch + 1, mean_loss), flush=True)

    xs, ys = x_test[rank::size], y_test[rank::size]
    correct = int(jnp.sum(jnp.argmax(logits(params, xs), axis=1) == ys))
    counts = hvd.allreduce(jnp.asarray([correct, len(ys)], jnp.float32), op=hvd.Sum,
                           name="test_accuracy")
    accuracy = float(counts[0]) / float(counts[1])
    if rank == 0:
        print("final_train_loss=%.4f" % mean_loss, flush=True)
        print("test_accuracy=%.4f" % accuracy, flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
