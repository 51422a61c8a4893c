# SPDX-License-Identifier: Apache-2.0
"""libhvd's run-time knobs (hvd_config_key_t) and their reads and writes."""

from hvd import _runtime
from hvd._backend import backend

CONFIG_FUSION_THRESHOLD = 0  # bytes of allreduces fused together; 0 disables fusion
CONFIG_CYCLE_TIME = 1  # ms the engine may hold new ops to report them together
CONFIG_STALL_CHECK_TIME = 2  # s before the stall inspector warns; 0 off
CONFIG_STALL_SHUTDOWN_TIME = 3  # s before stalled ops fail and the job aborts; 0 never
CONFIG_AUTOTUNE = 4  # 1: rank 0 tunes fusion threshold and cycle time online
CONFIG_CACHE_CAPACITY = 5  # response cache entries per process set; 0 off


def config_set(key, value, default=False):
    """Sets a knob of the running context, or with default=True the process-wide default that
    contexts created later start from."""
    backend.config_set(0 if default else _runtime.context(), key, value)


def config_get(key, default=False):
    """A knob of the running context (default=True: the process-wide default)."""
    return backend.config_get(0 if default else _runtime.context(), key)
