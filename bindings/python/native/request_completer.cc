// SPDX-License-Identifier: Apache-2.0
#include "request_completer.h"

#include <chrono>
#include <cstddef>
#include <utility>

namespace hvd_native {

namespace {
// While requests are outstanding, the oldest is waited on for this long, then all are tested.
constexpr int64_t kWaitSliceMs = 2;
constexpr auto kIdleSlice = std::chrono::milliseconds(200);
}  // namespace

RequestCompleter::RequestCompleter() : thread_([this] { loop(); }) {}

RequestCompleter::~RequestCompleter() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void RequestCompleter::add(hvd_request_h req, SettleFn settle) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(Pending{req, std::move(settle)});
    }
    cv_.notify_one();
}

bool RequestCompleter::take_new(std::vector<Pending> &pending) {
    std::unique_lock<std::mutex> lock(mu_);
    if (pending.empty() && queue_.empty()) {
        if (stop_) return false;
        cv_.wait_for(lock, kIdleSlice);
    }
    for (; !queue_.empty(); queue_.pop_front())
        pending.push_back(std::move(queue_.front()));
    // At process exit TensorFlow may be gone already: the requests are left to hvd_finalize
    // and their kernels are not finished.
    if (stop_) pending.clear();
    return true;
}

void RequestCompleter::loop() {
    std::vector<Pending> pending;
    while (take_new(pending)) {
        if (pending.empty()) continue;
        // Waiting drives libhvd's engine on this thread; every request completes by its op
        // timeout at the latest.
        hvd_request_wait(pending.front().req, kWaitSliceMs);
        size_t kept = 0;
        for (size_t i = 0; i < pending.size(); ++i) {
            hvd_status_t status = hvd_request_test(pending[i].req);
            if (status != HVD_INPROGRESS) {
                pending[i].settle(pending[i].req, status);
            } else {
                if (kept != i) pending[kept] = std::move(pending[i]);
                ++kept;
            }
        }
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(kept), pending.end());
    }
}

RequestCompleter &request_completer() {
    static RequestCompleter c;
    return c;
}

}  // namespace hvd_native
