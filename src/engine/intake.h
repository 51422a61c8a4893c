// SPDX-License-Identifier: Apache-2.0
// Where callers hand requests to the engine, and where finished requests leave it: the queue
// the engine thread takes new requests from, the names in flight (a second op of a name in
// flight is refused, Horovod's rule), the auto-names of unnamed ops, and completion, which
// frees a request's name before its waiters wake. Callers' threads enqueue; the engine's
// passes take and finish. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics/timeline.h"
#include "engine/in_flight_names.h"
#include "engine/request.h"

namespace hvd::engine {

class Intake {
  public:
    // timeline: borrowed, outlives the intake; its QUEUE spans start here.
    Intake(int32_t rank, diagnostics::Timeline *timeline) : rank_(rank), timeline_(timeline) {}
    Intake(const Intake &) = delete;
    Intake &operator=(const Intake &) = delete;

    // Queues reqs[0, n) in order, or none of them: HVD_ERR_INVALID_ARG (with *err) when one's
    // name is in flight, HVD_ERR_NOT_READY once closed.
    hvd_status_t enqueue(const RequestPtr *reqs, size_t n, std::string *err);
    // Refuses every enqueue from now on (the context is finalizing).
    void close();

    // Whether a request was queued since the last take(); no lock.
    bool has_work() const { return work_queued_.load(); }
    // Swaps the queued requests into *fresh (cleared, its capacity kept for the next swap).
    void take(std::vector<RequestPtr> *fresh);

    // Settles every request with status and message, frees their names, then wakes their
    // waiters (every request is settled before any waiter runs: see Request::complete) and
    // tells each one's parent (a grouped op). A request finished before is harmless.
    void finish_all(const RequestPtr *reqs, size_t n, hvd_status_t status,
                    const std::string &message);
    void finish(const RequestPtr &req, hvd_status_t status, const std::string &message) {
        finish_all(&req, 1, status, message);
    }

    // The request in flight under that name, or null. Valid while it is in flight.
    Request *find(uint16_t set_id, const std::string &name);

    // Next auto-name for unnamed ops of one kind in one process set ("allreduce.noname.7").
    std::string auto_name(OpType type, uint16_t set_id);

  private:
    const int32_t rank_;
    diagnostics::Timeline *timeline_;
    std::mutex mu_;
    bool closed_ = false;            // guarded by mu_
    std::vector<RequestPtr> queue_;  // guarded by mu_
    // Names enqueued and not yet finished (finish_all takes each request's entry out).
    InFlightNames names_;                                              // guarded by mu_
    std::map<std::pair<uint16_t, int>, uint64_t> auto_name_counters_;  // guarded by mu_
    std::atomic<bool> work_queued_{false};
};

}  // namespace hvd::engine
