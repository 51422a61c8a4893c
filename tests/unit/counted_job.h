// SPDX-License-Identifier: Apache-2.0
// In-process jobs (inprocess_job.h) that record each rank's response-cache hits and ops
// negotiated through the coordinator, for the response cache's tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "capi/handles.h"
#include "hvd/hvd.h"
#include "inprocess_job.h"

namespace counted_job {

struct Counters {
    uint64_t hits = 0;
    uint64_t negotiated = 0;
};

// Each rank's counters of the last job, recorded when its body returned.
inline std::vector<Counters> &counters() {
    static std::vector<Counters> c;
    return c;
}

// Waits up to 30 s and releases the request: its status.
inline hvd_status_t wait(hvd_request_h req) {
    hvd_status_t s = hvd_request_wait(req, 30000);
    hvd_request_release(req);
    return s;
}

// One rank's part of a job on its joined context: "" or what went wrong.
using ContextBody = std::function<std::string(hvd_context_h ctx, int32_t rank, int32_t size)>;

// Runs body on every rank of a new job of `size` ranks and records each rank's counters.
inline void run_recorded(int32_t size, const ContextBody &body) {
    counters().assign(static_cast<size_t>(size), Counters());
    inprocess_job::run_on_ranks(size, [&](const hvd_unique_id_t &id, int32_t rank, int32_t n) {
        hvd_context_h ctx;
        if (inprocess_job::join_job(id, rank, n, &ctx) != HVD_OK) return std::string("init failed");
        std::string err = body(ctx, rank, n);
        counters()[rank].hits = ctx->ctx->engine().cache_hits();
        counters()[rank].negotiated = ctx->ctx->engine().negotiated();
        // Finalize stops this rank's engine, whose votes the others' cached ops need until
        // they are done too (a rank outside a set finishes before the set's members).
        hvd_request_h barrier;
        if (err.empty() &&
            (hvd_barrier_enqueue(ctx, nullptr, &barrier) != HVD_OK || wait(barrier) != HVD_OK))
            err = "barrier failed";
        if (hvd_finalize(ctx) != HVD_OK && err.empty()) err = "finalize failed";
        return err;
    });
}

}  // namespace counted_job
