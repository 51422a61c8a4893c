# SPDX-License-Identifier: Apache-2.0
"""hvd.keras.load_model: a saved model comes back with its optimizer wrapped and its state
kept, and training on from it goes on exactly as without the round trip."""

import keras
import numpy as np
from conftest import hvd_keras as hvd
from conftest import make_model, regression_data, shard, weights_close

import hvd as hvd_core
from hvd.keras.optimizer import is_distributed

LOCAL_BATCH = 4


def test_round_trip_keeps_wrapped_optimizer(tmp_path):
    n, r = hvd.size(), hvd.rank()
    x, y = regression_data(4 * LOCAL_BATCH * n, seed=8)
    xs, ys = shard(x, LOCAL_BATCH, n, r), shard(y, LOCAL_BATCH, n, r)
    model = make_model(seed=0)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.9)),
                  loss="mse")
    model.fit(xs, ys, batch_size=LOCAL_BATCH, shuffle=False, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)

    loaded = hvd.load_model(path)
    assert is_distributed(loaded.optimizer)
    assert type(loaded.optimizer).__name__ == "SGD"
    assert loaded.optimizer._hvd.compression is hvd.Compression.none
    fp16 = hvd.load_model(path, compression=hvd.Compression.fp16)
    assert fp16.optimizer._hvd.compression is hvd.Compression.fp16
    assert loaded.optimizer.get_config()["momentum"] == 0.9
    saved_state = [keras.ops.convert_to_numpy(v.value) for v in model.optimizer.variables]
    loaded_state = [keras.ops.convert_to_numpy(v.value) for v in loaded.optimizer.variables]
    weights_close(loaded_state, saved_state, tol=0)
    assert int(keras.ops.convert_to_numpy(loaded.optimizer.iterations)) == 4
    weights_close(loaded.get_weights(), model.get_weights(), tol=0)

    # Without hvd, Keras loads the same file with the plain optimizer.
    plain = keras.models.load_model(path)
    assert not is_distributed(plain.optimizer)
    assert isinstance(plain.optimizer, keras.optimizers.SGD)

    # Training on: the loaded model follows the original.
    x2, y2 = regression_data(3 * LOCAL_BATCH * n, seed=9)
    for m in (model, loaded):
        m.fit(shard(x2, LOCAL_BATCH, n, r), shard(y2, LOCAL_BATCH, n, r),
              batch_size=LOCAL_BATCH, shuffle=False, verbose=0)
    weights_close(loaded.get_weights(), model.get_weights())
    assert not np.allclose(loaded.get_weights()[0], plain.get_weights()[0])
    # ... and stays the same on every rank, though each trained on its own shard.
    for w in loaded.get_weights():
        everyone = np.asarray(hvd_core.allgather(np.asarray(w)[None]))
        for other in everyone[1:]:
            np.testing.assert_array_equal(other, everyone[0])
