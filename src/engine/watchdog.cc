// SPDX-License-Identifier: Apache-2.0
#include "engine/watchdog.h"

#include <iterator>
#include <thread>

#include "common/deadline.h"
#include "common/error.h"
#include "common/log.h"

namespace hvd::engine {

namespace {

// How long a transport error waits for the failure monitor to name a dead peer.
constexpr int64_t kFailureReportWaitMs = 2000;

}  // namespace

void Watchdog::check_timeouts(const PendingOps &pending,
                              const negotiation::Coordinator *coordinator) {
    if (pending.empty()) return;
    // At most once per millisecond: a waiter driving the engine runs passes back to back,
    // and each check walks every pending op.
    const auto now = Deadline::Clock::now();
    if (now < next_timeout_check_) return;
    next_timeout_check_ = now + std::chrono::milliseconds(1);
    for (const RequestPtr &req : pending.all()) {
        if (!req->deadline.expired_at(now)) continue;
        std::string detail = strprintf("rank %d: %s '%s' timed out waiting for the other ranks",
                                       rank_, op_type_name(req->meta.type), req->meta.name.c_str());
        if (coordinator != nullptr) {
            for (const auto &w : coordinator->waiting()) {
                if (w.set_id != req->meta.set_id || w.name != req->meta.name) continue;
                detail += " (not yet enqueued on rank";
                for (int32_t r : w.missing_ranks)
                    detail += strprintf(" %d", r);
                detail += ")";
            }
        }
        abort_->set(HVD_ERR_TIMED_OUT, detail);
        return;
    }
}

std::string Watchdog::inspect_stalls(negotiation::Coordinator &coordinator,
                                     std::vector<negotiation::Response> *expired) {
    using Waiting = negotiation::Coordinator::Waiting;
    const int64_t check_s = config_->stall_check_s.load();
    const int64_t shutdown_s = config_->stall_shutdown_s.load();
    auto now = std::chrono::steady_clock::now();
    if (check_s <= 0 || now < next_stall_check_) return "";
    next_stall_check_ = now + std::chrono::seconds(1);
    std::string shutdown_detail;
    auto age_of = [&](const Waiting &w) {
        return static_cast<int64_t>(
            std::chrono::duration_cast<std::chrono::seconds>(now - w.since).count());
    };
    auto describe = [&](const Waiting &w) {
        std::string missing;
        for (int32_t r : w.missing_ranks)
            missing += strprintf("%s%d", missing.empty() ? "" : ",", r);
        return strprintf("'%s' (process set %u) has waited %lld s: not yet enqueued on rank(s) %s",
                         w.name.c_str(), w.set_id, static_cast<long long>(age_of(w)),
                         missing.c_str());
    };
    std::vector<Waiting> waiting = coordinator.waiting();
    for (const Waiting &w : waiting) {
        int64_t age = age_of(w);
        if (age < check_s) continue;
        std::string line = describe(w);
        auto &last = stall_warned_[{w.set_id, w.name}];
        if (now - last >= std::chrono::seconds(check_s)) {
            HVD_LOG(kWarning, rank_, "stall inspector: %s", line.c_str());
            last = now;
        }
        if (shutdown_s > 0 && age >= shutdown_s && shutdown_detail.empty())
            shutdown_detail = "stall shutdown: " + line;
    }
    if (!shutdown_detail.empty())
        for (const Waiting &w : waiting)
            coordinator.expire(w.set_id, w.name, HVD_ERR_TIMED_OUT,
                               "stall shutdown: " + describe(w), expired);
    for (auto it = stall_warned_.begin(); it != stall_warned_.end();)
        it = now - it->second > std::chrono::seconds(2 * check_s) ? stall_warned_.erase(it)
                                                                  : std::next(it);
    return shutdown_detail;
}

void Watchdog::await_failure_report() const {
    // A transport error is often the first sign of a dead peer on this host (its shared
    // memory or process_vm_readv fails before the rendezvous server has reported it).
    Deadline limit = Deadline::after_ms(kFailureReportWaitMs);
    while (!abort_->aborted() && !limit.expired())
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace hvd::engine
