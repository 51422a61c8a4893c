# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow.keras.elastic: horovod.tensorflow.keras.elastic, which is hvd.keras.elastic
(its KerasState and callbacks serve Keras's TensorFlow backend as they are)."""

from hvd.keras.elastic import (CommitStateCallback, KerasState, ObjectState,  # noqa: F401
                               State, UpdateBatchStateCallback, UpdateEpochStateCallback, run)
