// SPDX-License-Identifier: Apache-2.0
// Runs the responses every rank agreed on, in the agreed order, on this rank: a single op, a
// fused run of ops as one collective, barriers, joins and process-set changes; on a rank that
// joined a set, zeros in the others' allreduces. It takes each response's request out of the
// pending ops, builds the collective's view of its process set, runs it through the executor
// and finishes the requests. Engine thread (or a caller driving the engine) only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/comm.h"
#include "diagnostics/timeline.h"
#include "engine/abort_state.h"
#include "engine/intake.h"
#include "engine/pending_ops.h"
#include "engine/process_set_table.h"
#include "engine/request.h"
#include "engine/tuner.h"
#include "engine/watchdog.h"
#include "transport/transport.h"
#include "util/fifo.h"

#include "shm/shm_group.h"

namespace hvd::engine {

class GpuRunner;

// What a runner works with, all borrowed: they outlive it.
struct RunnerParts {
    int32_t rank = 0;
    int32_t size = 1;
    transport::Transport *transport = nullptr;
    AbortState *abort = nullptr;
    ProcessSetTable *sets = nullptr;
    diagnostics::Timeline *timeline = nullptr;
    PendingOps *pending = nullptr;  // requests reported and not yet run
    Intake *intake = nullptr;       // finishes requests
    Tuner *tuner = nullptr;         // records the bytes each collective carried
    Watchdog *watchdog = nullptr;   // waits for the cause of a transport error
};

class Runner {
  public:
    explicit Runner(const RunnerParts &parts);
    ~Runner();
    Runner(const Runner &) = delete;
    Runner &operator=(const Runner &) = delete;

    // Shared memory: `group` is the single-host job's group (null where there is none;
    // outlives the runner), through which collectives of process sets with every rank go.
    // A process set created later whose members all share a host (hosts[r]: rank r's host)
    // gets a group of its own (set_shared_memory.h) where this rank wants shared memory
    // (HVD_SHM). Call before the first run.
    void use_shared_memory(shm::Group *group, std::vector<std::string> hosts, bool wanted) {
        shm_ = group;
        hosts_ = std::move(hosts);
        shm_wanted_ = wanted;
    }

    // The hosts of a job that spans them (collectives/hierarchy.h; outlives the runner; null:
    // none): collectives of process sets with every rank run on it. Call before the first run.
    void use_hierarchy(const collectives::Hierarchy *hierarchy) { hierarchy_ = hierarchy; }

    // Runs responses from the front of the queue until it is empty or the context aborted;
    // each leaves the queue once run. Returns whether there was any. A failed collective
    // finishes its requests with the failure and, unless the failure was this op's alone
    // (mismatch, bad argument), aborts the context. Throws hvd::Error when a response cannot
    // be run at all (no request for it on this rank, a fused run that arrived incomplete),
    // after finishing the requests it had taken with that error.
    bool run(util::Fifo<Response> &responses);

    // The context aborted: ends the NCCL work of ops on CUDA tensors (GpuRunner).
    void abort_device_work();
    // Polls the device work of ops that completed on callers' streams; one that failed or
    // outlived its deadline aborts the context with what happened. Never blocks.
    void check_device_work();
    // Whether such work is still running: the engine sleeps no longer than a few ms then.
    bool watching_device_work() const;

    // Whether a failed collective aborted the transport (wait_all does on failure).
    bool transport_aborted() const { return transport_aborted_; }
    void set_transport_aborted() { transport_aborted_ = true; }

    // Collectives that ran several tensors, and those tensors. Thread-safe.
    uint64_t fused_collectives() const { return fused_collectives_.load(); }
    uint64_t fused_tensors() const { return fused_tensors_.load(); }

  private:
    void run_one(const Response &resp, const RequestPtr &req);
    // A run of allreduces chained with fuse_next, from the queue's front; first_req is the
    // front's request. Pops the run once it ran.
    void run_fused(util::Fifo<Response> &responses, RequestPtr first_req);
    // The rest of run_fused, once every request of the run is taken: runs the collective and
    // finishes them all. resps: the run's responses, as many as reqs.
    void run_fused_taken(const Response *resps, const std::vector<RequestPtr> &reqs);
    // This rank's request for resp, taken out of the pending ops; null if it has none.
    RequestPtr take_request(Response &resp);
    // take_request(), or, on a rank that joined the set, a zero tensor for its allreduce
    // (null for another op, which a joined rank skips). Throws if neither.
    RequestPtr request_for(Response &resp);
    // A zero tensor standing in for a joined rank's part of an allreduce.
    static RequestPtr zeros_like(const Response &resp, const Request &join);
    // This rank joined and the others run their allreduce of CUDA tensors through host memory
    // (runs_staged_allreduce): it takes part in their chunks with zeros.
    hvd_status_t run_joined_staged(collectives::Comm &comm, const std::vector<RequestPtr> &reqs,
                                   std::string *message);
    // Creates or destroys a process set. Not HVD_OK (with *message) when a new set's shared
    // memory could not be set up because the transport failed.
    hvd_status_t run_membership_change(const Response &resp, Request &req, std::string *message);
    collectives::Comm make_comm(const Response &resp, const Request &req);
    // The status a failed collective completes with; aborts the context unless the failure
    // was this op's alone (mismatch, bad argument).
    hvd_status_t settle_failure(const Response &resp, hvd_status_t s, std::string *message);
    // From a catch block: finishes the requests with what is being thrown.
    void finish_thrown(const RequestPtr *reqs, size_t n);
    // Timeline: closes the request's NEGOTIATE span and opens the span of its op.
    void trace_start_op(Request &req);
    void trace_end_op(const Request &req);

    const RunnerParts p_;
    shm::Group *shm_ = nullptr;
    const collectives::Hierarchy *hierarchy_ = nullptr;
    std::vector<std::string> hosts_;  // rank r's host name
    bool shm_wanted_ = false;         // HVD_SHM on this rank
    // Whether every member of the set runs on one host.
    bool on_one_host(const std::vector<int32_t> &members) const;
    // Shared-memory groups of the process sets this rank is in, other than the global one.
    std::map<uint16_t, std::unique_ptr<shm::Group>> set_groups_;
    // Ops on CUDA tensors: the GPU runner, made on the first one.
    static bool on_device(const Request &req);
    GpuRunner &gpu_runner();
    std::unique_ptr<GpuRunner> gpu_;
    bool transport_aborted_ = false;
    std::chrono::steady_clock::time_point next_device_check_{};  // check_device_work
    collectives::ScratchBuffer scratch_;
    collectives::ScratchBuffer fusion_buffer_;  // persistent: no page faults per step
    std::vector<RequestPtr> fused_reqs_;        // run_fused's run, kept for its capacity
    std::atomic<uint64_t> fused_collectives_{0};
    std::atomic<uint64_t> fused_tensors_{0};
};

// What the exception being handled means for the context: its status and message, as the
// aborted context and the requests it ends report them. Call from a catch block.
hvd_status_t thrown_status(int32_t rank, std::string *message);

}  // namespace hvd::engine
