# SPDX-License-Identifier: Apache-2.0
"""Every rank of an hvdrun job runs the same tests in the same order; each test starts with
the process joined to the job. KERAS_BACKEND (jax, torch or tensorflow) picks the backend
under test, HVD_KERAS_MODULE the module (hvd.keras by default; hvd.tensorflow.keras, whose
optimizer reduces as DistributedGradientTape does, on the TensorFlow backend). The tests
import it as `from conftest import hvd_keras`."""

import importlib
import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402

MODULE = os.environ.get("HVD_KERAS_MODULE", "hvd.keras")
hvd_keras = importlib.import_module(MODULE)
only_hvd_keras = pytest.mark.skipif(MODULE != "hvd.keras", reason="checks hvd.keras itself")


def pytest_configure(config):
    # Keras's own variables still implement NumPy 1's __array__ (NumPy 2 warns at each use).
    config.addinivalue_line("filterwarnings",
                            "ignore:__array__ implementation:DeprecationWarning")


@pytest.fixture(autouse=True)
def joined():
    hvd_keras.init()
    yield


def make_model(seed, n_in=5, hidden=8):
    """A small MLP whose initial weights depend only on seed."""
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((n_in,)), keras.layers.Dense(hidden, activation="tanh"),
                             keras.layers.Dense(1)])


def regression_data(rows, seed, n_in=5):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, n_in)).astype(np.float32)
    return x, np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)


def shard(a, batch, n, r):
    """Rank r's rows of a: its share of every consecutive global batch of batch * n rows."""
    steps = len(a) // (batch * n)
    blocks = a[:steps * batch * n].reshape((steps, n, batch) + a.shape[1:])
    return blocks[:, r].reshape((steps * batch,) + a.shape[1:])


def weights_close(a, b, tol=1e-5):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)
