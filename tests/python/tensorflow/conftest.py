# SPDX-License-Identifier: Apache-2.0
"""Every rank of an hvdrun job runs the same tests in the same order; each test starts with
the process joined to the job. Ops run on the CPU; TensorFlow's logging is quiet."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

import hvd.tensorflow as hvd  # noqa: E402

tf.config.set_visible_devices([], "GPU")


@pytest.fixture(autouse=True)
def joined():
    hvd.init()
    yield


def run(mode, fn, *args):
    """fn(*args) eagerly, or traced into a tf.function and called."""
    if mode == "function":
        return tf.function(fn, autograph=False)(*args)
    return fn(*args)
