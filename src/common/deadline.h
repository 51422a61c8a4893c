// SPDX-License-Identifier: Apache-2.0
// A point in steady time after which a wait gives up. Every blocking loop in libhvd takes one.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace hvd {

class Deadline {
  public:
    using Clock = std::chrono::steady_clock;

    // Timeouts from this on (146 years) never expire either: the clock's time points (64-bit
    // nanoseconds) cannot hold now plus one much longer.
    static constexpr int64_t kNeverMs = INT64_MAX / 2000000;

    // timeout_ms < 0 or >= kNeverMs: never expires.
    static Deadline after_ms(int64_t timeout_ms) {
        Deadline d;
        d.infinite_ = timeout_ms < 0 || timeout_ms >= kNeverMs;
        if (!d.infinite_) d.at_ = Clock::now() + std::chrono::milliseconds(timeout_ms);
        return d;
    }
    // after_ms for an op's bound, read from the kernel's tick clock (CLOCK_MONOTONIC_COARSE:
    // a fraction of the precise clock's cost per read, one read per enqueued tensor) when the
    // timeout is a second or more: the same clock, behind by at most one kernel tick, so the
    // deadline comes at most that much early. Shorter timeouts read the precise clock.
    static Deadline after_ms_coarse(int64_t timeout_ms) {
        if (timeout_ms < 1000 || timeout_ms >= kNeverMs) return after_ms(timeout_ms);
        struct timespec ts;
        if (::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return after_ms(timeout_ms);
        Deadline d;
        d.infinite_ = false;
        d.at_ = Clock::time_point(std::chrono::seconds(ts.tv_sec) +
                                  std::chrono::nanoseconds(ts.tv_nsec)) +
                std::chrono::milliseconds(timeout_ms);
        return d;
    }
    static Deadline never() { return after_ms(-1); }

    bool infinite() const { return infinite_; }
    bool expired() const { return !infinite_ && Clock::now() >= at_; }
    // expired() against a time the caller read once for many deadlines.
    bool expired_at(Clock::time_point now) const { return !infinite_ && now >= at_; }
    Clock::time_point at() const { return at_; }
    // Milliseconds left, clamped to [0, cap_ms]; cap_ms when infinite.
    int64_t remaining_ms(int64_t cap_ms) const {
        if (infinite_) return cap_ms;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
        int64_t ms = left.count();
        if (ms < 0) return 0;
        return ms < cap_ms ? ms : cap_ms;
    }
    // The earlier of two deadlines.
    static Deadline earlier(const Deadline &a, const Deadline &b) {
        if (a.infinite_) return b;
        if (b.infinite_) return a;
        return a.at_ <= b.at_ ? a : b;
    }

  private:
    bool infinite_ = true;
    Clock::time_point at_{};
};

}  // namespace hvd
