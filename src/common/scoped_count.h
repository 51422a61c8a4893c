// SPDX-License-Identifier: Apache-2.0
// Counts the threads inside a region: +1 on entry, -1 on leaving it, however it is left.
#pragma once

#include <atomic>

namespace hvd {

class ScopedCount {
  public:
    explicit ScopedCount(std::atomic<int> &n) : n_(n) { n_.fetch_add(1); }
    ~ScopedCount() { n_.fetch_sub(1); }
    ScopedCount(const ScopedCount &) = delete;
    ScopedCount &operator=(const ScopedCount &) = delete;

  private:
    std::atomic<int> &n_;
};

}  // namespace hvd
