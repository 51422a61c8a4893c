// SPDX-License-Identifier: Apache-2.0
// One table for every status: its value, its name and its message. hvd.h declares the
// enum by hand (a public header must read plainly); tests/unit/test_status.cc checks that
// the two agree, so appending a status means appending a row here too.
#pragma once

// X(name, value, message)
#define HVD_STATUS_TABLE(X)                                                         \
    X(HVD_OK, 0, "success")                                                         \
    X(HVD_INPROGRESS, 1, "operation in progress")                                   \
    X(HVD_ERR_INVALID_ARG, -1, "invalid argument")                                  \
    X(HVD_ERR_NO_MEMORY, -2, "out of memory")                                       \
    X(HVD_ERR_UNSUPPORTED, -3, "unsupported parameter, dtype, device or operation") \
    X(HVD_ERR_VERSION, -4, "header and library versions are incompatible")          \
    X(HVD_ERR_NOT_READY, -5, "context not initialised or shutting down")            \
    X(HVD_ERR_BUSY, -6, "resource busy")                                            \
    X(HVD_ERR_MISMATCH, -7, "ranks disagree on the parameters of a collective")     \
    X(HVD_ERR_TIMED_OUT, -8, "operation timed out")                                 \
    X(HVD_ERR_ABORTED, -9, "context aborted")                                       \
    X(HVD_ERR_PEER_FAILED, -10, "a peer process failed or became unreachable")      \
    X(HVD_ERR_DEVICE, -11, "device (CUDA/NCCL) error")                              \
    X(HVD_ERR_TRANSPORT, -12, "transport (UCX/socket) error")                       \
    X(HVD_ERR_INTERNAL, -13, "internal error")
