# SPDX-License-Identifier: Apache-2.0
"""hvd.keras.DistributedOptimizer under model.fit: training on each rank's share of every
global batch gives the weights one process gets on the whole global batch."""

import keras
import numpy as np
import pytest
from conftest import hvd_keras as hvd
from conftest import make_model, only_hvd_keras, regression_data, shard, weights_close

LOCAL_BATCH = 4
STEPS = 6


def fit(model, optimizer, x, y, batch):
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    return model.get_weights()


def reference(initial, optimizer, x, y, batch):
    """One process (no collectives) training the same model on the global batches."""
    model = make_model(seed=99)
    model.set_weights(initial)
    return fit(model, optimizer, x, y, batch)


OPTIMIZERS = {
    "sgd": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    "adam": lambda: keras.optimizers.Adam(0.01),
}


@pytest.mark.parametrize("groups", [None, 2, "listed"])
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_matches_one_process_on_global_batch(opt, groups):
    if groups is not None and opt != "sgd":
        pytest.skip("groups are checked with one optimizer")
    n, r = hvd.size(), hvd.rank()
    x, y = regression_data(STEPS * LOCAL_BATCH * n, seed=1)
    model = make_model(seed=0)
    initial = model.get_weights()
    if groups == "listed":
        groups = [[model.layers[0].kernel, model.layers[1].kernel]]
    wrapped = hvd.DistributedOptimizer(OPTIMIZERS[opt](), groups=groups)
    got = fit(model, wrapped, shard(x, LOCAL_BATCH, n, r), shard(y, LOCAL_BATCH, n, r),
              LOCAL_BATCH)
    assert int(keras.ops.convert_to_numpy(wrapped.iterations)) == STEPS
    want = reference(initial, OPTIMIZERS[opt](), x, y, LOCAL_BATCH * n)
    weights_close(got, want)
    assert not np.allclose(got[0], initial[0])


@pytest.mark.parametrize("opt,average", [("adam", True), ("sgd", False)])
def test_backward_passes_per_step(opt, average):
    """Two passes per step: one update per two local batches, with the gradient of both
    (summed, or averaged with average_aggregated_gradients) averaged over the ranks."""
    n, r = hvd.size(), hvd.rank()
    x, y = regression_data(2 * STEPS * LOCAL_BATCH * n, seed=2)
    model = make_model(seed=0)
    initial = model.get_weights()
    wrapped = hvd.DistributedOptimizer(OPTIMIZERS[opt](), backward_passes_per_step=2,
                                       average_aggregated_gradients=average)
    got = fit(model, wrapped, shard(x, LOCAL_BATCH, n, r), shard(y, LOCAL_BATCH, n, r),
              LOCAL_BATCH)
    assert int(keras.ops.convert_to_numpy(wrapped.iterations)) == STEPS
    # The sum of two passes' mean gradients is twice the gradient of their mean loss: for
    # SGD that is the doubled learning rate.
    ref_opt = OPTIMIZERS[opt]() if average else keras.optimizers.SGD(0.2, momentum=0.9)
    want = reference(initial, ref_opt, x, y, 2 * LOCAL_BATCH * n)
    weights_close(got, want)


def test_sum_and_predivide():
    """op=Sum is size times the average; gradient_predivide_factor leaves the average."""
    n, r = hvd.size(), hvd.rank()
    x, y = regression_data(STEPS * LOCAL_BATCH * n, seed=3)
    xs, ys = shard(x, LOCAL_BATCH, n, r), shard(y, LOCAL_BATCH, n, r)
    initial = make_model(seed=0).get_weights()
    runs = {}
    for key, kwargs, lr in [("sum", dict(op=hvd.Sum), 0.05 / n),
                            ("predivide", dict(gradient_predivide_factor=4.0), 0.05)]:
        model = make_model(seed=0)
        runs[key] = fit(model, hvd.DistributedOptimizer(keras.optimizers.SGD(lr), **kwargs),
                        xs, ys, LOCAL_BATCH)
    want = reference(initial, keras.optimizers.SGD(0.05), x, y, LOCAL_BATCH * n)
    weights_close(runs["sum"], want)
    weights_close(runs["predivide"], want)


def test_fp16_compression_close():
    n, r = hvd.size(), hvd.rank()
    x, y = regression_data(STEPS * LOCAL_BATCH * n, seed=4)
    model = make_model(seed=0)
    initial = model.get_weights()
    got = fit(model, hvd.DistributedOptimizer(keras.optimizers.SGD(0.1),
                                              compression=hvd.Compression.fp16),
              shard(x, LOCAL_BATCH, n, r), shard(y, LOCAL_BATCH, n, r), LOCAL_BATCH)
    want = reference(initial, keras.optimizers.SGD(0.1), x, y, LOCAL_BATCH * n)
    weights_close(got, want, tol=1e-2)


@only_hvd_keras
def test_arguments_checked():
    sgd = keras.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="Average and Sum"):
        hvd.DistributedOptimizer(sgd, op=hvd.Adasum)
    with pytest.raises(ValueError, match="backward_passes_per_step"):
        hvd.DistributedOptimizer(sgd, backward_passes_per_step=0)
    with pytest.raises(ValueError, match="groups"):
        hvd.DistributedOptimizer(sgd, groups=-1)
    with pytest.raises(ValueError, match="keras.optimizers.Optimizer"):
        hvd.DistributedOptimizer("sgd")
    wrapped = hvd.DistributedOptimizer(keras.optimizers.SGD(0.25, momentum=0.5))
    assert type(wrapped).__name__ == "SGD" and isinstance(wrapped, keras.optimizers.SGD)
    assert wrapped.get_config()["momentum"] == 0.5
    again = hvd.DistributedOptimizer(wrapped, op=hvd.Sum)
    assert type(again).__mro__[2] is type(wrapped).__mro__[2]


@only_hvd_keras
def test_unknown_backend_refused(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "openvino")
    with pytest.raises(NotImplementedError, match="'openvino' is not supported"):
        hvd.DistributedOptimizer(keras.optimizers.SGD(0.1))
    with pytest.raises(NotImplementedError, match="'openvino' is not supported"):
        hvd.allreduce(np.ones(3, np.float32))


@only_hvd_keras
def test_collectives_on_backend_tensors():
    n, r = hvd.size(), hvd.rank()
    got = hvd.allreduce(np.full(3, r, np.float32), average=False)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), np.full(3, n * (n - 1) / 2))
    got = hvd.allgather(np.full((1, 2), r, np.float32))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got)[:, 0], np.arange(n))
    got = hvd.broadcast(np.full(2, r + 5, np.float32), root_rank=n - 1)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), np.full(2, n + 4))
    v = keras.Variable(np.full(2, r, np.float32))
    hvd.broadcast_variables([v], root_rank=1)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(v.value), np.ones(2))


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_embedding_gradients(sparse_as_dense):
    """An embedding's gradient (IndexedSlices on the TensorFlow backend: allgathered, or made
    dense with sparse_as_dense) gives the global batch's update too."""
    n, r = hvd.size(), hvd.rank()
    rng = np.random.default_rng(12)
    x = rng.integers(0, 10, size=(STEPS * LOCAL_BATCH * n, 3)).astype(np.int32)
    y = rng.normal(size=(len(x), 1)).astype(np.float32)

    def embedding_model():
        keras.utils.set_random_seed(3)
        return keras.Sequential([keras.Input((3,), dtype="int32"), keras.layers.Embedding(10, 4),
                                 keras.layers.Flatten(), keras.layers.Dense(1)])

    model = embedding_model()
    got = fit(model, hvd.DistributedOptimizer(keras.optimizers.SGD(0.1),
                                              sparse_as_dense=sparse_as_dense),
              shard(x, LOCAL_BATCH, n, r), shard(y, LOCAL_BATCH, n, r), LOCAL_BATCH)
    want = fit(embedding_model(), keras.optimizers.SGD(0.1), x, y, LOCAL_BATCH * n)
    weights_close(got, want)
