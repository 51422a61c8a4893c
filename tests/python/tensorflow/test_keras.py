# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow.keras: model.fit with DistributedOptimizer on each rank's shard ends with
the weights of one process fitting the global batches; the callbacks broadcast the initial
weights and average the metrics; BestModelCheckpoint writes the best epoch's model on rank 0
only."""

import os

import numpy as np

keras = __import__("pytest").importorskip("keras")

import hvd.tensorflow.keras as hvd  # noqa: E402
from hvd.tensorflow import allgather_object  # noqa: E402

ROWS = 4  # per rank and batch
BATCHES = 3


def make_model(seed):
    keras.utils.set_random_seed(seed)  # different weights on each rank until broadcast
    model = keras.Sequential([keras.Input((5,), dtype="float64"),
                              keras.layers.Dense(4, activation="tanh", dtype="float64"),
                              keras.layers.Dense(1, dtype="float64")])
    return model


def global_data():
    rng = np.random.default_rng(7)
    n = hvd.size() * ROWS * BATCHES
    return rng.normal(size=(n, 5)), rng.normal(size=(n, 1))


def test_fit_matches_one_process_on_global_batches():
    n, r = hvd.size(), hvd.rank()
    x, y = global_data()
    # Global batch b is every rank's batch b, in rank order.
    blocks = np.arange(len(x)).reshape(BATCHES, n, ROWS)
    mine = blocks[:, r, :].ravel()

    model = make_model(seed=r)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1, momentum=0.5)),
                  loss="mse")
    history = model.fit(x[mine], y[mine], batch_size=ROWS, epochs=2, shuffle=False, verbose=0,
                        callbacks=[hvd.BroadcastGlobalVariablesCallback(0),
                                   hvd.MetricAverageCallback()])

    reference = make_model(seed=0)
    reference.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.5), loss="mse")
    reference.fit(x[blocks.ravel()], y[blocks.ravel()], batch_size=n * ROWS, epochs=2,
                  shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    # The averaged loss is the same on every rank.
    losses = hvd.allgather(np.array([history.history["loss"][-1]])).numpy()
    np.testing.assert_allclose(losses, losses[0])


def test_best_model_checkpoint_writes_on_rank_0_only(tmp_path):
    path = str(tmp_path / "best.weights.h5")  # each rank's own directory
    x, y = global_data()
    model = make_model(0)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    epochs = []

    def record(epoch, logs):
        epochs.append((logs["loss"], [w.copy() for w in model.get_weights()]))

    model.fit(x, y, batch_size=ROWS, epochs=3, verbose=0, shuffle=False,
              callbacks=[hvd.callbacks.BestModelCheckpoint(monitor="loss", filepath=path,
                                                           save_weights_only=True),
                         keras.callbacks.LambdaCallback(on_epoch_end=record)])
    assert allgather_object(os.path.exists(path)) == [True] + [False] * (hvd.size() - 1)
    if hvd.rank() == 0:
        saved = make_model(1)
        saved.load_weights(path)
        best = min(epochs, key=lambda e: e[0])[1]
        for got, want in zip(saved.get_weights(), best):
            np.testing.assert_array_equal(got, want)
