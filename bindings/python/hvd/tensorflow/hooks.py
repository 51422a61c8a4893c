# SPDX-License-Identifier: Apache-2.0
"""horovod.tensorflow's session hook for TensorFlow 1-style graphs
(tf.compat.v1.train.MonitoredTrainingSession): broadcasts the global variables from a root
rank once the session is created, so every rank starts from the same values."""

import tensorflow as tf

from hvd.tensorflow import mpi_ops
from hvd.tensorflow.mpi_ops import global_process_set


def broadcast_global_variables(root_rank, process_set=global_process_set):
    """An op assigning root_rank's value to every global variable of the default graph.
    Graph mode only: eager code has no global variable collection (use broadcast_variables)."""
    if tf.executing_eagerly():
        raise RuntimeError("hvd.tensorflow.broadcast_global_variables() does not support eager "
                           "execution; use hvd.tensorflow.broadcast_variables(variables, "
                           "root_rank) instead")
    variables = tf.compat.v1.global_variables()
    return tf.group(*[v.assign(mpi_ops.broadcast(tf.convert_to_tensor(v), root_rank,
                                                 process_set=process_set))
                      for v in variables])


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """Broadcasts the graph's global variables from root_rank after the session is created
    (and after a checkpoint restore, which MonitoredTrainingSession does first)."""

    def __init__(self, root_rank, device="", process_set=global_process_set):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.process_set = process_set
        self.bcast_op = None

    def begin(self):
        if self.bcast_op is None or self.bcast_op.graph != tf.compat.v1.get_default_graph():
            with tf.device(self.device):
                self.bcast_op = broadcast_global_variables(self.root_rank, self.process_set)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)
