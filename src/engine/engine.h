// SPDX-License-Identifier: Apache-2.0
// The background engine of one context: a thread that negotiates named ops with the other
// ranks and runs them in the agreed order. It composes the parts that do the work: the
// intake (callers' queue, names in flight, completion), a negotiator (the response cache over
// rank 0's coordinator), the runner (collectives on this rank), the watchdog (op timeouts,
// stall inspector), the tuner (autotune) and the control channel. Itself it owns the thread,
// its passes over those parts, and sleeping: on the transport's event fd and an eventfd that
// enqueue() signals, no fixed-interval polling, so an idle engine uses no CPU; a caller that
// waits on a request may run the passes itself meanwhile.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/hierarchy.h"
#include "config/runtime_config.h"
#include "diagnostics/timeline.h"
#include "engine/abort_state.h"
#include "engine/control_channel.h"
#include "engine/intake.h"
#include "engine/negotiator.h"
#include "engine/pending_ops.h"
#include "engine/process_set_table.h"
#include "engine/request.h"
#include "engine/runner.h"
#include "engine/tuner.h"
#include "engine/tuning_space.h"
#include "engine/watchdog.h"
#include "topology/rank_locality.h"
#include "transport/transport.h"
#include "util/fifo.h"

namespace hvd::shm {
class Group;
}

namespace hvd::engine {

using config::RuntimeConfig;  // config/runtime_config.h

class Engine {
  public:
    Engine(int32_t rank, int32_t size, transport::Transport *transport, AbortState *abort,
           ProcessSetTable *sets, diagnostics::Timeline *timeline, RuntimeConfig *config);
    ~Engine();  // stops the thread if still running
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // Shared memory for collectives (Runner::use_shared_memory): the single-host job's group
    // (owned by the context, outlives the engine; may be null), every rank's host name, and
    // whether this rank wants shared memory. Call before start().
    void use_shared_memory(shm::Group *group, std::vector<std::string> hosts, bool wanted) {
        runner_.use_shared_memory(group, std::move(hosts), wanted);
    }
    // The hosts of a job that spans them, for the hierarchical collectives (owned by the
    // context, outlives the engine; null: none). Call before start().
    void use_hierarchy(const collectives::Hierarchy *hierarchy) {
        runner_.use_hierarchy(hierarchy);
        tuner_.set_hierarchical_available(hierarchical_available(hierarchy));
    }
    // Where this rank runs on its host (NUMA node, nearest NIC and GPU), for algorithms that
    // depend on it. Call before start().
    void set_locality(topology::RankLocality locality) { locality_ = std::move(locality); }
    const topology::RankLocality &locality() const { return locality_; }

    void start();
    // Stops the thread; requests not yet completed fail with HVD_ERR_ABORTED.
    void stop();

    // Thread-safe. Queues req; HVD_ERR_INVALID_ARG (with *err) if its name is in flight.
    hvd_status_t enqueue(const RequestPtr &req, std::string *err) {
        return enqueue_span(&req, 1, err);
    }
    // Thread-safe. Queues every member of a group, or none of them (a name in flight).
    hvd_status_t enqueue_group(const std::vector<RequestPtr> &reqs, std::string *err) {
        return enqueue_span(reqs.data(), reqs.size(), err);
    }
    // Thread-safe. Makes the engine thread look at its queue and the abort state now.
    void wake();

    // Called by a thread about to sleep until req completes: while the engine thread sleeps,
    // runs the engine's passes on this thread, spinning up to the spin window after the last
    // pass that did work (no hand-off to the engine thread and back, each a context switch
    // when both share one CPU, a wake-up of the caller's sleeping CPU when they do not).
    // Only where spinning is allowed (HVD_SPIN_US > 0); yields the CPU between passes that
    // found nothing when unpinned or when ranks share CPUs (HVD_SPIN_YIELD). Returns at
    // once when the engine thread is running a pass. The caller then waits on req as usual
    // (at once complete when this thread finished it). Thread-safe.
    void drive_while_waiting(const Request &req, const Deadline &until);

    // Next auto-name for unnamed ops of one kind in one process set ("allreduce.noname.7").
    // Thread-safe.
    std::string auto_name(OpType type, uint16_t set_id) { return intake_.auto_name(type, set_id); }

    // Tensor fusion statistics: collectives that ran several tensors, and those tensors.
    uint64_t fused_collectives() const { return runner_.fused_collectives(); }
    uint64_t fused_tensors() const { return runner_.fused_tensors(); }
    // Response cache statistics: ops this rank ran from the cache (agreed by a round of bit
    // vectors), and ops it ran as the coordinator's responses. Thread-safe.
    uint64_t cache_hits() const { return negotiator_->cache_hits(); }
    uint64_t negotiated() const { return negotiator_->negotiated(); }

  private:
    hvd_status_t enqueue_span(const RequestPtr *reqs, size_t n, std::string *err);
    void loop();
    bool run_pass();  // one round of everything; true if anything happened. Under drive_mu_.
    // run_pass() by a caller holding `drive`; on an abort, lets go of it and wakes the engine
    // thread, which fails what is left.
    bool driven_pass(std::unique_lock<std::mutex> &drive);
    // New requests into the pending ops; reported to the negotiator once the cycle time
    // since the first of them passed.
    bool take_new_requests();
    bool receive_control();
    // The stall inspector's check (coordinator): a stall shutdown fails the waiting ops on
    // every rank that enqueued them and aborts the context.
    void inspect_stalls();
    // Lets the control messages just sent leave, and this rank run its own share of them,
    // before an abort closes the endpoints.
    void flush_before_abort();
    void fail_everything(hvd_status_t status, const std::string &detail);
    void sleep_until_work(std::unique_lock<std::mutex> &drive);
    std::chrono::steady_clock::time_point held_until() const;

    const int32_t rank_;
    transport::Transport *transport_;
    AbortState *abort_;
    diagnostics::Timeline *timeline_;
    RuntimeConfig *config_;
    int wake_fd_ = -1;
    std::thread thread_;
    bool unpinned_ = true;  // the engine thread (and so its caller) may use several CPUs
    topology::RankLocality locality_;
    // stop_flag_: a stop was requested. sleeping_: the engine is (about to be) blocked in
    // poll, so an enqueue must write the eventfd; otherwise it need not. The enqueue that
    // writes it clears it.
    std::atomic<bool> stop_flag_{false};
    std::atomic<bool> sleeping_{false};
    // Held by whichever thread runs a pass: the engine thread, except while it sleeps, or a
    // waiting caller (drive_while_waiting). The engine-thread state below is only touched
    // under it.
    std::mutex drive_mu_;
    std::atomic<bool> waiters_drive_{false};
    std::atomic<int> drivers_{0};  // threads inside drive_while_waiting (stop() waits for 0)

    Intake intake_;  // shared with callers

    // Engine-thread state.
    // Cycle time: requests taken from the queue but held back to be reported together.
    std::vector<RequestPtr> held_;
    std::vector<RequestPtr> fresh_;  // take_new_requests' swap partner of the intake's queue
    std::chrono::steady_clock::time_point held_since_{};
    PendingOps pending_;              // reported to the negotiator, not yet run
    util::Fifo<Response> responses_;  // agreed order, not yet run (no allocation once warm)
    ControlChannel control_;
    Watchdog watchdog_;
    Tuner tuner_;
    std::unique_ptr<Negotiator> negotiator_;
    Runner runner_;
};

}  // namespace hvd::engine
