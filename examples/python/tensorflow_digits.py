#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains a small Keras MLP on scikit-learn's digits (8x8 images, 10 classes) with
hvd.tensorflow: a custom training loop whose step (forward, hvd.DistributedGradientTape's
allreduce, the optimizer's update) is one tf.function.

    hvdrun -np 2 python3 tensorflow_digits.py

As in jax_digits.py, the global batch is fixed (--global-batch-size, 64 by default) and every
rank takes its share of each global batch (ranks r, r + N, ... of it), weighting its summed
loss by N / B: the tape's average of the ranks' gradients is then the gradient of the global
batch's mean loss, so the job computes the same training run on any number of ranks and the
learning rate is not scaled. Each rank initialises its own weights; hvd.broadcast_variables
starts every rank from rank 0's.

Rank 0 prints the last epoch's mean training loss and the test accuracy (counted on each
rank's share of the test set and summed with hvd.allreduce) as `final_train_loss=0.xxxx` and
`test_accuracy=0.xxxx`. Needs tensorflow (Keras 3 comes with it) and scikit-learn;
load_digits ships with scikit-learn, nothing is downloaded.
"""

import argparse
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["KERAS_BACKEND"] = "tensorflow"

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import hvd.tensorflow as hvd  # noqa: E402


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
        sys.exit("tensorflow_digits: scikit-learn is missing (pip install scikit-learn)")
    digits = load_digits()
    x = digits.data.astype(np.float32) / 16.0  # pixel values are 0..16
    y = digits.target.astype(np.int32)
    return train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)


def main(argv=None):
    args = parse_args(argv)
    tf.config.set_visible_devices([], "GPU")
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if args.global_batch_size < size:
        sys.exit("tensorflow_digits: --global-batch-size %d is smaller than the %d ranks"
                 % (args.global_batch_size, size))
    x_train, x_test, y_train, y_test = load_data(args.test_fraction, args.seed)

    keras.utils.set_random_seed(args.seed + rank)  # rank 0's weights are broadcast
    model = keras.Sequential([keras.Input((x_train.shape[1],)),
                              keras.layers.Dense(args.hidden, activation="relu"),
                              keras.layers.Dense(10)])
    optimizer = keras.optimizers.SGD(args.lr, momentum=args.momentum)
    optimizer.build(model.trainable_variables)
    hvd.broadcast_variables(model.variables, root_rank=0)
    per_sample = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    @tf.function
    def train_step(x, y, weight):
        with tf.GradientTape() as tape:
            loss_sum = tf.reduce_sum(per_sample(y, model(x, training=True)))
            scaled = loss_sum * weight
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss_sum

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
            part = train_step(x_train[mine], y_train[mine],
                              tf.constant(size / len(global_batch), tf.float32))
            loss_sum += float(part)
        log = args.log_every and ((epoch + 1) % args.log_every == 0 or epoch == 0)
        if log or epoch == args.epochs - 1:
            total = hvd.allreduce(tf.constant(loss_sum, tf.float64), op=hvd.Sum,
                                  name="train_loss")
            mean_loss = float(total) / n_train
            if log and rank == 0:
                print("epoch %d: train_loss=%.4f" % (epoch + 1, mean_loss), flush=True)

    xs, ys = x_test[rank::size], y_test[rank::size]
    predicted = np.argmax(model(xs, training=False).numpy(), axis=1)
    counts = hvd.allreduce(tf.constant([np.sum(predicted == ys), len(ys)], tf.float32),
                           op=hvd.Sum, name="test_accuracy")
    accuracy = float(counts[0]) / float(counts[1])
    if rank == 0:
        print("final_train_loss=%.4f" % mean_loss, flush=True)
        print("test_accuracy=%.4f" % accuracy, flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
