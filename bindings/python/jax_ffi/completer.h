// SPDX-License-Identifier: Apache-2.0
// Settles XLA's futures of hvd.jax's custom calls: the handlers hand each enqueued libhvd
// request to the bindings' request completer (native/request_completer.h), which, once it
// completed, runs its finishing step (copying a library-owned output into XLA's result
// buffer) and settles its promise. The handlers thus return as soon as their collective is
// queued, so independent collectives of one XLA program are all enqueued whatever order XLA
// runs them in.
#pragma once

#include <hvd/hvd.h>

#include <functional>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace hvd_jax {

// Returns "" when the finished request's output was delivered, else what went wrong.
using FinishFn = std::function<std::string(hvd_request_h)>;

// Takes ownership of req; settles promise once it completed (what names the op in errors).
void complete(hvd_request_h req, xla::ffi::Promise promise, std::string what, FinishFn finish);

// The text of a failed op, led by the Python exception Horovod raises for it: ValueError for
// a call wrong on this rank (refused at enqueue), else HorovodInternalError.
std::string error_text(hvd_status_t status, const std::string &what, const std::string &detail,
                       bool at_enqueue);

}  // namespace hvd_jax
