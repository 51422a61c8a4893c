# SPDX-License-Identifier: Apache-2.0
"""The collectives hvd.keras runs on Keras's own tensors, for the Keras backend in use.

Keras 3 runs its train step on JAX (traced under jax.jit), torch (eagerly) or TensorFlow (in
a tf.function). The gradient allreduce has to run inside that step on the backend's tensors,
so each backend needs the libhvd binding for its framework: hvd.jax (XLA custom calls that
work under jax.jit, and eagerly), hvd.torch and hvd.tensorflow (TensorFlow ops, eager and in
graphs). Everything backend-specific that hvd.keras does goes through framework() and
is_symbolic() here.
"""

import keras


def backend_name():
    return keras.backend.backend()


def framework():
    """The hvd binding whose collectives take this Keras backend's tensors: hvd.jax,
    hvd.torch or hvd.tensorflow (each offers allreduce, grouped_allreduce, allgather,
    broadcast and reducescatter with the same arguments). NotImplementedError for other
    backends."""
    name = backend_name()
    if name == "jax":
        import hvd.jax as module
        return module
    if name == "torch":
        import hvd.torch as module
        return module
    if name == "tensorflow":
        import hvd.tensorflow as module
        return module
    raise NotImplementedError("hvd.keras: Keras backend %r is not supported (jax, torch and "
                              "tensorflow are)" % (name,))


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

