# SPDX-License-Identifier: Apache-2.0
"""Exceptions of the hvd package and the mapping from libhvd status codes to them.

Horovod's convention: a call that is wrong on this rank alone (bad argument, unsupported
dtype or op, not initialised) raises ``ValueError`` before anything is queued; a collective
that fails while running (ranks disagree, a peer died, a timeout) raises
``HorovodInternalError``, a ``RuntimeError``.
"""

# Status codes of include/hvd/hvd.h (hvd_status_t).
OK = 0
INPROGRESS = 1
ERR_INVALID_ARG = -1
ERR_NO_MEMORY = -2
ERR_UNSUPPORTED = -3
ERR_VERSION = -4
ERR_NOT_READY = -5
ERR_BUSY = -6
ERR_MISMATCH = -7
ERR_TIMED_OUT = -8
ERR_ABORTED = -9
ERR_PEER_FAILED = -10
ERR_DEVICE = -11
ERR_TRANSPORT = -12
ERR_INTERNAL = -13

_NAMES = {
    OK: "HVD_OK",
    INPROGRESS: "HVD_INPROGRESS",
    ERR_INVALID_ARG: "HVD_ERR_INVALID_ARG",
    ERR_NO_MEMORY: "HVD_ERR_NO_MEMORY",
    ERR_UNSUPPORTED: "HVD_ERR_UNSUPPORTED",
    ERR_VERSION: "HVD_ERR_VERSION",
    ERR_NOT_READY: "HVD_ERR_NOT_READY",
    ERR_BUSY: "HVD_ERR_BUSY",
    ERR_MISMATCH: "HVD_ERR_MISMATCH",
    ERR_TIMED_OUT: "HVD_ERR_TIMED_OUT",
    ERR_ABORTED: "HVD_ERR_ABORTED",
    ERR_PEER_FAILED: "HVD_ERR_PEER_FAILED",
    ERR_DEVICE: "HVD_ERR_DEVICE",
    ERR_TRANSPORT: "HVD_ERR_TRANSPORT",
    ERR_INTERNAL: "HVD_ERR_INTERNAL",
}

# Statuses that mean "this call was wrong on this rank": Horovod raises ValueError for them.
_CALLER_ERRORS = (ERR_INVALID_ARG, ERR_UNSUPPORTED, ERR_NOT_READY, ERR_VERSION)


class HorovodInternalError(RuntimeError):
    """A collective failed while running: ranks disagreed, a peer failed, it timed out or the
    job was aborted. ``status`` is the libhvd status code (an ``int``)."""

    def __init__(self, message, status=ERR_INTERNAL):
        super().__init__(message)
        self.status = status


class HostsUpdatedInterrupt(RuntimeError):
    """The set of hosts changed (elastic mode): reset without restoring the committed state."""

    def __init__(self, skip_sync=False):
        super().__init__("the set of hosts changed")
        self.skip_sync = skip_sync


class HvdValueError(ValueError):
    """A call was rejected on this rank before anything was queued (``status`` says why)."""

    def __init__(self, message, status=ERR_INVALID_ARG):
        super().__init__(message)
        self.status = status


def status_name(status):
    return _NAMES.get(status, "unknown status %d" % status)


def error_for(status, detail, during_wait=False):
    """The exception to raise for a failed libhvd call. ``detail`` is libhvd's message."""
    text = "%s: %s" % (status_name(status), detail) if detail else status_name(status)
    if not during_wait and status in _CALLER_ERRORS:
        return HvdValueError(text, status)
    return HorovodInternalError(text, status)
