// SPDX-License-Identifier: Apache-2.0
// Runs one negotiated collective on this rank: scaling, the algorithm over the transport,
// library-owned outputs. Called only on the engine thread.
#pragma once

#include <string>
#include <vector>

#include "collectives/comm.h"
#include "diagnostics/timeline.h"
#include "engine/request.h"
#include "negotiation/op_meta.h"

namespace hvd::engine {

// Executes resp for req over comm (comm.seq and deadline already set). Returns the status
// the request completes with; *message gets a detail on failure.
hvd_status_t execute_response(collectives::Comm &comm, const Response &resp, Request &req,
                              std::string *message);

// Allreduces count elements of dtype from `in` into `out` (equal: in place; else apart, `in`
// left as it was): prescaled, reduced with op (Sum, Min, Max, Product or Adasum: Average is a
// Sum with its 1 / size in `postscale`), then scaled by postscale. Through shared memory the
// postscale is folded into the reduction's last store. Blocking; the collective's failures.
hvd_status_t allreduce_scaled(collectives::Comm &comm, const void *in, void *out, size_t count,
                              int32_t dtype, int32_t op, double prescale, double postscale);

// The timeline activity of an op's data movement: SHM_<OP> when it goes through the
// shared-memory group, UCX_<OP> otherwise.
std::string transfer_activity(const collectives::Comm &comm, OpType type);

// Activity sub-spans on the timeline rows of the tensors being run (no-op without one).
class ActivityTrace {
  public:
    ActivityTrace(diagnostics::Timeline *timeline, const std::vector<RequestPtr> &reqs)
        : timeline_(timeline), reqs_(reqs) {}
    void begin(const std::string &activity) const;
    void end() const;

  private:
    diagnostics::Timeline *timeline_;
    const std::vector<RequestPtr> &reqs_;
};

// An activity of a run's trace for as long as it lives: ends it on the way out of a scope,
// an exception's way included.
class ActivitySpan {
  public:
    ActivitySpan(const ActivityTrace &trace, const std::string &activity) : trace_(trace) {
        trace_.begin(activity);
    }
    ActivitySpan(const ActivitySpan &) = delete;
    ActivitySpan &operator=(const ActivitySpan &) = delete;
    ~ActivitySpan() { trace_.end(); }

  private:
    const ActivityTrace &trace_;
};

// A fused run (responses chained with fuse_next, one request each): the execute_fused_* of
// its op type below.
hvd_status_t execute_fused(collectives::Comm &comm, const Response *resps,
                           const std::vector<RequestPtr> &reqs, collectives::ScratchBuffer *fusion,
                           const ActivityTrace &trace, std::string *message);

// Runs several allreduces (same set, dtype, op and scale factors) as one collective: packs
// the (prescaled) inputs into `fusion`, reduces once, unpacks (postscaled) into the outputs.
hvd_status_t execute_fused_allreduce(collectives::Comm &comm, const std::vector<RequestPtr> &reqs,
                                     collectives::ScratchBuffer *fusion, const ActivityTrace &trace,
                                     std::string *message);

// Runs several allgathers (same set and dtype) as one allgatherv: member r's block is its
// pieces of every tensor in order; each output is reassembled from the blocks. resps: the
// run's responses, one per request.
hvd_status_t execute_fused_allgather(collectives::Comm &comm, const Response *resps,
                                     const std::vector<RequestPtr> &reqs,
                                     collectives::ScratchBuffer *fusion, const ActivityTrace &trace,
                                     std::string *message);

// Runs several reducescatters (same set, dtype, op and scale factors) as one: member r's
// block holds its rows of every tensor in order.
hvd_status_t execute_fused_reducescatter(collectives::Comm &comm,
                                         const std::vector<RequestPtr> &reqs,
                                         collectives::ScratchBuffer *fusion,
                                         const ActivityTrace &trace, std::string *message);

}  // namespace hvd::engine
