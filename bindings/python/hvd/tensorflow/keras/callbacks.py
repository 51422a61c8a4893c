# SPDX-License-Identifier: Apache-2.0
"""horovod.tensorflow.keras.callbacks: hvd.keras's callbacks, which run between Keras's steps
through hvd's NumPy path and so serve Keras's TensorFlow backend as they are."""

from hvd.keras.callbacks import (BestModelCheckpoint,  # noqa: F401
                                 BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
                                 LearningRateWarmupCallback, MetricAverageCallback)
