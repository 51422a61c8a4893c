// SPDX-License-Identifier: Apache-2.0
// The context's fatal-error latch: the first cause wins, everything after it sees the same
// status and detail. Read lock-free on hot paths.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "hvd/hvd.h"

namespace hvd::engine {

class AbortState {
  public:
    // Returns true if this call set the cause (it was the first).
    bool set(hvd_status_t status, const std::string &detail) {
        std::lock_guard<std::mutex> lock(mu_);
        if (status_.load(std::memory_order_relaxed) != 0) return false;
        detail_ = detail;
        status_.store(status, std::memory_order_release);
        return true;
    }
    hvd_status_t status() const {
        return static_cast<hvd_status_t>(status_.load(std::memory_order_acquire));
    }
    bool aborted() const { return status() != HVD_OK; }
    std::string detail() const {
        std::lock_guard<std::mutex> lock(mu_);
        return detail_;
    }
    const std::atomic<int32_t> *flag() const { return &status_; }

  private:
    mutable std::mutex mu_;
    std::atomic<int32_t> status_{0};
    std::string detail_;
};

}  // namespace hvd::engine
