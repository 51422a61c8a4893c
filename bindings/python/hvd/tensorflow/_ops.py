# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow's TensorFlow ops: _hvd_tf_ops.so, built against TensorFlow's stable C op and
kernel API and linked only to libhvd's C ABI, loaded with tf.load_op_library.

The kernels are asynchronous: each enqueues its collective and returns, and a libhvd wait
on the library's own thread finishes it, so inside a tf.function every collective is in
flight at once, in whatever order TensorFlow's executor runs them. Ranks match ops by name:
a name the caller gives becomes "<kind>.<name>" as in eager hvd; otherwise an op built in a
graph (tf.function) is named after its node ("<kind>.<node name>", alike on every rank that
traced the same function), and an eager one is named by libhvd in enqueue order.
"""

import ctypes
import os
import threading

import tensorflow as tf

from hvd import _runtime
from hvd._backend import backend  # noqa: F401 (libhvd is loaded before the ops' library)

_LIBRARY = "_hvd_tf_ops.so"
_lock = threading.Lock()
_module = None


def library_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIBRARY)


def ops():
    """The loaded op module (tf.load_op_library), told of the live context."""
    global _module
    with _lock:
        if _module is not None:
            return _module
        path = library_path()
        if not os.path.exists(path):
            raise RuntimeError(
                "hvd.tensorflow: %s is missing; configure libhvd with "
                "-DHVD_PYTHON_TF_INTERPRETER=<a python with tensorflow> to build it" % path)
        module = tf.load_op_library(path)
        lib = ctypes.CDLL(path)
        lib.hvd_tf_set_context.argtypes = [ctypes.c_void_p]
        lib.hvd_tf_set_context.restype = None
        lib.hvd_tf_set_process_set.argtypes = [ctypes.c_int64, ctypes.c_void_p]
        lib.hvd_tf_set_process_set.restype = None
        _runtime.context_listeners.append(lib.hvd_tf_set_context)
        lib.hvd_tf_set_context(_runtime.state.ctx)
        module._hvd_lib = lib
        _module = module
        return module


def naming(name):
    """The op_name / use_node_name attributes of an op called with name (see the docstring)."""
    if name is not None:
        if not isinstance(name, str):
            raise ValueError("name must be a str or None, got %r" % (name,))
        return {"op_name": name}
    return {"use_node_name": not tf.executing_eagerly()}


def process_set_id(process_set):
    """The set's id for the op's attribute (its handle handed to the kernels)."""
    module = ops()
    _runtime.context()  # ValueError when not initialised, as the eager hvd ops
    if process_set is None or process_set.process_set_id == 0:
        return 0
    handle = process_set._handle_for(_runtime.context())
    module._hvd_lib.hvd_tf_set_process_set(process_set.process_set_id, handle)
    return process_set.process_set_id
