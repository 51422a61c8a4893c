// SPDX-License-Identifier: Apache-2.0
#include <poll.h>
#include <sched.h>

#include <chrono>

#include "transport/transport.h"

namespace hvd::transport {

namespace {

// Upper bound of one sleep, so an abort raised by another thread is seen promptly.
constexpr int64_t kMaxSleepMs = 20;

bool all_done(Completion *const *cs, size_t n, hvd_status_t *first_error) {
    bool done = true;
    for (size_t i = 0; i < n; ++i) {
        if (!cs[i]->done) {
            done = false;
        } else if (cs[i]->status != HVD_OK && *first_error == HVD_OK) {
            *first_error = cs[i]->status;
        }
    }
    return done;
}

hvd_status_t fail(Transport &t, hvd_status_t status) {
    t.abort_all(status);
    return status;
}

}  // namespace

bool may_run_on_several_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return true;
    return CPU_COUNT(&set) > 1;
}

hvd_status_t wait_all(Transport &t, Completion *const *cs, size_t n, const Deadline &deadline,
                      const std::atomic<int32_t> *abort_status) {
    // Keep polling a short while after the last event before sleeping on the event fd: on a
    // small VM a sleeping waiter costs a hypervisor round trip to wake, but a spinning one
    // steals the core its peer may need.
    const SpinPolicy spin = t.spin_policy();
    auto last_event = std::chrono::steady_clock::now();
    for (;;) {
        hvd_status_t err = HVD_OK;
        bool done = all_done(cs, n, &err);
        if (err != HVD_OK) return fail(t, err);
        if (done) return HVD_OK;
        if (abort_status != nullptr) {
            int32_t a = abort_status->load(std::memory_order_acquire);
            if (a != 0) return fail(t, static_cast<hvd_status_t>(a));
        }
        if (t.progress()) {
            last_event = std::chrono::steady_clock::now();
            continue;
        }
        if (deadline.expired()) return fail(t, HVD_ERR_TIMED_OUT);
        if (std::chrono::steady_clock::now() - last_event < spin.window) {
            if (spin.yield) ::sched_yield();
            continue;
        }
        if (!t.arm()) continue;  // events pending: progress again
        struct pollfd pfd = {t.event_fd(), POLLIN, 0};
        ::poll(&pfd, 1, static_cast<int>(deadline.remaining_ms(kMaxSleepMs)));
        last_event = std::chrono::steady_clock::now();
    }
}

}  // namespace hvd::transport
