# SPDX-License-Identifier: Apache-2.0
"""The exceptions of ``horovod.common.exceptions``, under the same names."""

from hvd._errors import HorovodInternalError, HostsUpdatedInterrupt

__all__ = ["HorovodInternalError", "HostsUpdatedInterrupt"]
