# SPDX-License-Identifier: Apache-2.0
"""Framework-independent parts shared by ``hvd`` and ``hvd.torch`` (as ``horovod.common``)."""
