#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains a small Keras 3 MLP on scikit-learn's digits (8x8 images, 10 classes) with hvd.keras
and model.fit, on Keras's JAX, torch or TensorFlow backend (KERAS_BACKEND, jax by default
here).

    hvdrun -np 2 python3 keras_digits.py

As in jax_digits.py, the global batch is fixed (--global-batch-size, 64 by default) and every
rank takes its share of each global batch (ranks r, r + N, ... of it); a batch that would not
split evenly (the end of an epoch) is left out, so every rank's batch holds B / N samples and
the average of the ranks' mean losses is the global batch's. hvd.keras.DistributedOptimizer
averages the gradients inside Keras's train step (jax.jit on the JAX backend), so the job
computes the same training run on any number of ranks that divides the global batch and the
learning rate is not scaled. BroadcastGlobalVariablesCallback starts every rank from rank 0's
weights (each rank initialises its own here) and MetricAverageCallback averages the logged
loss over the ranks.

Rank 0 prints the last epoch's mean training loss and the test accuracy (counted on each
rank's share of the test set and summed with hvd.allreduce) as `final_train_loss=0.xxxx` and
`test_accuracy=0.xxxx`. Needs keras, scikit-learn and the backend's framework; load_digits
ships with scikit-learn, nothing is downloaded.
"""

import argparse
import os
import sys

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402

import hvd.keras as hvd  # noqa: E402


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
        sys.exit("keras_digits: scikit-learn is missing (pip install scikit-learn)")
    digits = load_digits()
    x = digits.data.astype(np.float32) / 16.0  # pixel values are 0..16
    y = digits.target.astype(np.int32)
    return train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)


def make_model(n_in, hidden, n_out):
    return keras.Sequential([keras.Input((n_in,)),
                             keras.layers.Dense(hidden, activation="relu"),
                             keras.layers.Dense(n_out)])


def main(argv=None):
    args = parse_args(argv)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    batch = args.global_batch_size
    if batch % size:
        sys.exit("keras_digits: --global-batch-size %d does not divide by the %d ranks"
                 % (batch, size))
    x_train, x_test, y_train, y_test = load_data(args.test_fraction, args.seed)

    keras.utils.set_random_seed(args.seed + rank)  # rank 0's weights are broadcast
    model = make_model(x_train.shape[1], args.hidden, 10)
    optimizer = hvd.DistributedOptimizer(
        keras.optimizers.SGD(args.lr, momentum=args.momentum), name="grads")
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    steps = len(x_train) // batch
    if rank == 0:
        print("digits: %d training and %d test samples, %d rank(s), global batch %d, "
              "%d epochs on Keras's %s backend" % (len(x_train), len(x_test), size, batch,
                                                  args.epochs, keras.backend.backend()),
              flush=True)
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                 hvd.callbacks.MetricAverageCallback()]
    for epoch in range(args.epochs):
        order = np.random.default_rng(args.seed * 100003 + epoch).permutation(len(x_train))
        mine = order[:steps * batch].reshape(steps, batch)[:, rank::size].reshape(-1)
        history = model.fit(x_train[mine], y_train[mine], batch_size=batch // size,
                            epochs=epoch + 1, initial_epoch=epoch, shuffle=False, verbose=0,
                            callbacks=callbacks if epoch == 0 else callbacks[1:])
        mean_loss = history.history["loss"][-1]
        log = args.log_every and ((epoch + 1) % args.log_every == 0 or epoch == 0)
        if log and rank == 0:
            print("epoch %d: train_loss=%.4f" % (epoch + 1, mean_loss), flush=True)

    xs, ys = x_test[rank::size], y_test[rank::size]
    predicted = np.argmax(keras.ops.convert_to_numpy(model.predict(xs, verbose=0)), axis=1)
    counts = hvd.allreduce(np.array([np.sum(predicted == ys), len(ys)], np.float32),
                           op=hvd.Sum, name="test_accuracy")
    counts = keras.ops.convert_to_numpy(counts)
    accuracy = float(counts[0]) / float(counts[1])
    if rank == 0:
        print("final_train_loss=%.4f" % mean_loss, flush=True)
        print("test_accuracy=%.4f" % accuracy, flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
