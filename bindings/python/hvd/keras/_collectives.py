# SPDX-License-Identifier: Apache-2.0
"""The collectives hvd.keras runs on Keras's own tensors, for the Keras backend in use.

Keras 3 runs its train step on JAX (traced under jax.jit), torch (eagerly) or TensorFlow (in
a tf.function). The gradient allreduce has to run inside that step on the backend's tensors,
so each backend needs the libhvd binding for its framework: hvd.jax (XLA custom calls that
work under jax.jit, and eagerly) and hvd.torch. Everything backend-specific that hvd.keras
does goes through framework() and is_symbolic() here.
"""

import keras

_NEEDS_TF = (
    "hvd.keras: on Keras's TensorFlow backend use hvd.tensorflow.keras (needs hvd.tensorflow: "
    "its collectives run inside the tf.function of Keras's train step); hvd.keras runs Keras "
    "on its JAX or torch backend (KERAS_BACKEND=jax or KERAS_BACKEND=torch)")


def backend_name():
    return keras.backend.backend()


def framework():
    """The hvd binding whose collectives take this Keras backend's tensors: hvd.jax or
    hvd.torch (both offer allreduce, grouped_allreduce, allgather, broadcast and
    reducescatter with the same arguments). NotImplementedError for other backends."""
    name = backend_name()
    if name == "jax":
        import hvd.jax as module
        return module
    if name == "torch":
        import hvd.torch as module
        return module
    if name == "tensorflow":
        raise NotImplementedError(_NEEDS_TF)
    raise NotImplementedError("hvd.keras: Keras backend %r is not supported (jax and torch are)"
                              % (name,))


def is_symbolic(x):
    """Whether x is a value being traced (JAX under jax.jit, a graph tensor in a
    tf.function) rather than a concrete one."""
    name = backend_name()
    if name == "tensorflow":
        import tensorflow as tf
        return tf.is_symbolic_tensor(x)
    if name != "jax":
        return False
    import jax
    return isinstance(x, jax.core.Tracer)

