# SPDX-License-Identifier: Apache-2.0
"""hvd.keras.callbacks under model.fit: the initial broadcast, metric averaging, and the
learning rates of the warmup and schedule callbacks."""

import keras
import numpy as np
import pytest
from conftest import hvd_keras, make_model, regression_data, shard, weights_close

import hvd

LOCAL_BATCH = 4


class Record(keras.callbacks.Callback):
    """What the optimizer's learning rate is when each batch starts, and the epoch logs."""

    def __init__(self):
        super().__init__()
        self.lrs, self.logs = [], []

    def on_batch_begin(self, batch, logs=None):
        self.lrs.append(lr_of(self.model.optimizer))

    def on_epoch_end(self, epoch, logs=None):
        self.logs.append(dict(logs))


def lr_of(optimizer):
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate.value))


def gathered(a):
    return hvd.allgather(np.asarray(a, np.float64)[None])


def test_broadcast_makes_ranks_start_equal():
    """Ranks start from different weights; with the callback they train rank 0's model,
    which one process training on the global batches reproduces."""
    n, r = hvd_keras.size(), hvd_keras.rank()
    x, y = regression_data(5 * LOCAL_BATCH * n, seed=5)
    model = make_model(seed=10 + r)
    root_initial = make_model(seed=10).get_weights()
    if n > 1:
        assert not np.allclose(gathered(model.get_weights()[0])[0],
                               gathered(model.get_weights()[0])[1])
    model.compile(optimizer=hvd_keras.DistributedOptimizer(
        keras.optimizers.SGD(0.1, momentum=0.9)), loss="mse")
    model.fit(shard(x, LOCAL_BATCH, n, r), shard(y, LOCAL_BATCH, n, r), batch_size=LOCAL_BATCH,
              shuffle=False, verbose=0,
              callbacks=[hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0)])
    for w in model.get_weights():
        everyone = gathered(w)
        for other in everyone[1:]:
            np.testing.assert_array_equal(other, everyone[0])
    ref = make_model(seed=99)
    ref.set_weights(root_initial)
    ref.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
    ref.fit(x, y, batch_size=LOCAL_BATCH * n, shuffle=False, verbose=0)
    weights_close(model.get_weights(), ref.get_weights())


def test_metric_average():
    n, r = hvd_keras.size(), hvd_keras.rank()
    logs = {"loss": float(r + 1), "mae": np.float32(2 * r)}
    hvd_keras.callbacks.MetricAverageCallback().on_epoch_end(0, logs)
    assert logs == {"loss": pytest.approx((n + 1) / 2), "mae": pytest.approx(n - 1)}

    # Under fit: callbacks after it (History) see the ranks' average of what each rank
    # logged (ranks train on different data, so their raw losses differ).
    x, y = regression_data(3 * LOCAL_BATCH, seed=20 + r)
    model = make_model(seed=0)
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.SGD(0.01)),
                  loss="mse", metrics=["mae"])
    raw = Record()
    history = model.fit(x, y, batch_size=LOCAL_BATCH, epochs=2, verbose=0,
                        callbacks=[raw, hvd_keras.callbacks.MetricAverageCallback()])
    for epoch in range(2):
        for key in ("loss", "mae"):
            mine = raw.logs[epoch][key]
            everyone = gathered(mine)
            assert history.history[key][epoch] == pytest.approx(everyone.mean(), rel=1e-6)
            if n > 1:
                assert len(set(everyone.tolist())) > 1


def test_warmup_learning_rates():
    n = hvd_keras.size()
    steps, warmup, initial = 4, 2, 0.4
    x, y = regression_data(steps * LOCAL_BATCH, seed=6)
    model = make_model(seed=0)
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.Adam(initial)),
                  loss="mse")
    record = Record()
    history = model.fit(x, y, batch_size=LOCAL_BATCH, epochs=3, shuffle=False, verbose=0,
                        callbacks=[hvd_keras.callbacks.LearningRateWarmupCallback(
                            initial, warmup_epochs=warmup), record])
    want = []
    for epoch in range(3):
        for batch in range(steps):
            if epoch < warmup:
                e = epoch + (batch + 1) / steps
                want.append(initial / n * (e * (n - 1) / warmup + 1))
            else:
                want.append(want[-1])
    np.testing.assert_allclose(record.lrs, want, rtol=1e-6)
    assert record.lrs[warmup * steps - 1] == pytest.approx(initial)
    np.testing.assert_allclose(history.history["lr"], [want[steps - 1], initial, initial],
                               rtol=1e-6)


def test_schedule_learning_rates():
    steps = 3
    x, y = regression_data(steps * LOCAL_BATCH, seed=7)
    model = make_model(seed=0)
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.Adam(0.1)),
                  loss="mse")
    record = Record()
    model.fit(x, y, batch_size=LOCAL_BATCH, epochs=4, shuffle=False, verbose=0,
              callbacks=[hvd_keras.callbacks.LearningRateScheduleCallback(
                  0.2, multiplier=0.5, start_epoch=1, end_epoch=3), record])
    want = [0.1] * steps + [0.2] * steps + [0.1] * steps + [0.1] * steps
    np.testing.assert_allclose(record.lrs, want, rtol=1e-6)

    # A function of the fractional epoch, applied at every batch.
    record = Record()
    model.fit(x, y, batch_size=LOCAL_BATCH, epochs=2, shuffle=False, verbose=0,
              callbacks=[hvd_keras.callbacks.LearningRateScheduleCallback(
                  1.0, multiplier=lambda e: 1.0 / (1.0 + e), staircase=False), record])
    want = [1.0 / (1.0 + e + b / steps) for e in range(2) for b in range(steps)]
    np.testing.assert_allclose(record.lrs, want, rtol=1e-6)

    # The rate set is the one the train step uses: at 0 the weights stay as they are.
    before = model.get_weights()
    model.fit(x, y, batch_size=LOCAL_BATCH, epochs=1, shuffle=False, verbose=0,
              callbacks=[hvd_keras.callbacks.LearningRateScheduleCallback(
                  1.0, multiplier=lambda e: 0.0, staircase=False)])
    weights_close(model.get_weights(), before, tol=0)


def test_momentum_correction_scales_sgd_buffers():
    model = make_model(seed=0)
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)
    optimizer.build(model.trainable_variables)
    for m in optimizer.momentums:
        m.assign(np.ones(m.shape, np.float32))
    model.compile(optimizer=optimizer, loss="mse")
    callback = hvd_keras.callbacks.LearningRateScheduleCallback(0.05, multiplier=1.0)
    callback.set_model(model)
    callback.on_train_begin()
    callback.on_epoch_begin(0)
    callback.on_batch_begin(0)
    assert lr_of(optimizer) == pytest.approx(0.05)
    for m in optimizer.momentums:
        np.testing.assert_allclose(keras.ops.convert_to_numpy(m.value), 0.5, rtol=1e-6)
