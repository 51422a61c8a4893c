// SPDX-License-Identifier: Apache-2.0
// Completes the requests that the bindings' native libraries (hvd.jax's XLA custom calls,
// hvd.tensorflow's kernels) enqueue for a framework: one thread waits on them and, as each
// completes, runs its settling step (copying a library-owned output into the framework's
// buffer or recording the failure, then telling the framework: XLA's future, TensorFlow's
// done callback). The framework's call thus returns as soon as its collective is queued, and
// none of the framework's threads waits on other ranks.
#pragma once

#include <hvd/hvd.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hvd_native {

// Called once on the completer's thread with the request's final status; it owns the request
// (releases it).
using SettleFn = std::function<void(hvd_request_h, hvd_status_t)>;

class RequestCompleter {
  public:
    RequestCompleter();
    ~RequestCompleter();
    RequestCompleter(const RequestCompleter &) = delete;
    RequestCompleter &operator=(const RequestCompleter &) = delete;

    // Hands over req; settle runs once it completed.
    void add(hvd_request_h req, SettleFn settle);

  private:
    struct Pending {
        hvd_request_h req = nullptr;
        SettleFn settle;
    };
    void loop();
    // Moves newly added requests into pending; false once stopping with nothing left.
    bool take_new(std::vector<Pending> &pending);

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Pending> queue_;
    bool stop_ = false;
    std::thread thread_;
};

// The process's completer (started on first use).
RequestCompleter &request_completer();

}  // namespace hvd_native
