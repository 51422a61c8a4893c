// SPDX-License-Identifier: Apache-2.0
// The engine's watch over ops that wait too long: each op's own timeout (HVD_OP_TIMEOUT, on
// every rank) and Horovod's stall inspector (on the coordinator): ops that some ranks
// enqueued and others did not are named in the log with the missing ranks once per check
// period, and once one of them passes the shutdown time (if set) every waiting op fails on
// the ranks that enqueued it, each with its own line naming the ranks missing, and the job
// aborts. Engine thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/runtime_config.h"
#include "engine/abort_state.h"
#include "engine/pending_ops.h"
#include "negotiation/coordinator.h"

namespace hvd::engine {

class Watchdog {
  public:
    // Borrowed, outlive the watchdog.
    Watchdog(int32_t rank, AbortState *abort, config::RuntimeConfig *config)
        : rank_(rank), abort_(abort), config_(config) {}

    // Aborts the context with HVD_ERR_TIMED_OUT when a pending op passed its deadline, naming
    // the op and, on the coordinator (non-null), the ranks that have not enqueued it. Looks at
    // most once per millisecond.
    void check_timeouts(const PendingOps &pending, const negotiation::Coordinator *coordinator);

    // The stall inspector's check, at most once a second (HVD_STALL_CHECK_TIME_SECONDS; off
    // when <= 0). When an op passed HVD_STALL_SHUTDOWN_TIME_SECONDS, appends to *expired the
    // error responses that fail every waiting op and returns the abort's detail; else "".
    std::string inspect_stalls(negotiation::Coordinator &coordinator,
                               std::vector<negotiation::Response> *expired);

    // After a transport error: waits up to 2 s for the failure monitor to name a dead peer,
    // so that the failed op reports the cause (HVD_ERR_PEER_FAILED) rather than the symptom.
    void await_failure_report() const;

  private:
    using Key = std::pair<uint16_t, std::string>;  // (process set, name)
    const int32_t rank_;
    AbortState *abort_;
    config::RuntimeConfig *config_;
    std::chrono::steady_clock::time_point next_stall_check_{};
    std::chrono::steady_clock::time_point next_timeout_check_{};
    std::map<Key, std::chrono::steady_clock::time_point> stall_warned_;
};

}  // namespace hvd::engine
