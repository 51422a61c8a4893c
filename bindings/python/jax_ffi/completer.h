// SPDX-License-Identifier: Apache-2.0
// Completes XLA's futures of hvd.jax's custom calls: one thread waits on the libhvd requests
// the handlers enqueued and, as each finishes, runs its finishing step (copying a
// library-owned output into XLA's result buffer) and settles its promise. The handlers thus
// return as soon as their collective is queued, so independent collectives of one XLA
// program are all enqueued whatever order XLA runs them in.
#pragma once

#include <hvd/hvd.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "xla/ffi/api/ffi.h"

namespace hvd_jax {

// Returns "" when the finished request's output was delivered, else what went wrong.
using FinishFn = std::function<std::string(hvd_request_h)>;

class Completer {
  public:
    Completer();
    ~Completer();
    Completer(const Completer &) = delete;
    Completer &operator=(const Completer &) = delete;

    // Takes ownership of req; settles promise once it completed (what names the op in errors).
    void add(hvd_request_h req, xla::ffi::Promise promise, std::string what, FinishFn finish);

  private:
    struct Pending {
        hvd_request_h req = nullptr;
        xla::ffi::Promise promise;
        std::string what;
        FinishFn finish;
    };
    void loop();
    void settle(Pending &p, hvd_status_t status);

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Pending> queue_;
    bool stop_ = false;
    std::thread thread_;
};

// The process's completer (started on first use).
Completer &completer();

// The text of a failed op, led by the Python exception Horovod raises for it: ValueError for
// a call wrong on this rank (refused at enqueue), else HorovodInternalError.
std::string error_text(hvd_status_t status, const std::string &what, const std::string &detail,
                       bool at_enqueue);

}  // namespace hvd_jax
