// SPDX-License-Identifier: Apache-2.0
// Process sets: create and destroy (collective, negotiated on the global set) and queries.
#include <algorithm>

#include "capi/guard.h"
#include "capi/handles.h"

using hvd::Error;
using hvd::strprintf;
using hvd::capi::fail;
using hvd::capi::guarded;
using hvd::engine::OpType;
using hvd::engine::Request;

namespace {

// Runs one membership op through the global set's negotiation and waits for it.
std::shared_ptr<Request> negotiate(const char *fn, hvd::engine::Context &c, OpType type,
                                   std::vector<int32_t> ranks, int32_t set_id) {
    hvd::engine::AbortState &a = c.abort_state();
    if (a.aborted()) throw Error(a.status(), a.detail());
    auto req = hvd::engine::make_request();
    req->meta.type = type;
    req->meta.set_id = 0;
    req->meta.name = c.engine().auto_name(type, 0);
    req->meta.splits = std::move(ranks);
    req->meta.root = set_id;
    req->deadline = hvd::Deadline::after_ms(c.op_timeout_ms());
    std::string err;
    hvd_status_t s = c.engine().enqueue(req, &err);
    if (s != HVD_OK) throw Error(s, strprintf("%s: %s", fn, err.c_str()));
    s = req->wait(req->completion_bound());
    if (s == HVD_INPROGRESS)
        throw Error(HVD_ERR_TIMED_OUT, strprintf("%s: the other ranks did not join in time", fn));
    if (s != HVD_OK) throw Error(s, strprintf("%s: %s", fn, req->message().c_str()));
    return req;
}

}  // namespace

hvd::engine::ProcessSetPtr hvd_context::process_set(hvd_process_set_h ps, const char *fn) {
    if (ps == nullptr) return ctx->process_sets().global();
    std::lock_guard<std::mutex> lock(process_sets_mu);
    if (!process_sets.count(ps))
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("%s: unknown or destroyed process set handle", fn));
    return ps->info;
}

extern "C" {

HVD_API hvd_status_t hvd_process_set_create(hvd_context_h ctx, const int32_t *ranks, int32_t n,
                                            hvd_process_set_h *ps_p) noexcept {
    const char *fn = "hvd_process_set_create";
    return guarded(fn, [&] {
        if (ctx == nullptr || ranks == nullptr || ps_p == nullptr)
            return fail(HVD_ERR_INVALID_ARG, strprintf("%s: NULL argument", fn));
        hvd::engine::Context &c = *ctx->ctx;
        if (n <= 0 || n > c.size())
            return fail(HVD_ERR_INVALID_ARG,
                        strprintf("%s: %d ranks for a job of %d", fn, n, c.size()));
        std::vector<int32_t> sorted(ranks, ranks + n);
        std::sort(sorted.begin(), sorted.end());
        for (int32_t i = 0; i < n; ++i) {
            if (sorted[i] < 0 || sorted[i] >= c.size())
                return fail(HVD_ERR_INVALID_ARG,
                            strprintf("%s: rank %d is outside [0, %d)", fn, sorted[i], c.size()));
            if (i > 0 && sorted[i] == sorted[i - 1])
                return fail(HVD_ERR_INVALID_ARG,
                            strprintf("%s: rank %d is listed twice", fn, sorted[i]));
        }
        auto req = negotiate(fn, c, OpType::kProcessSetCreate, sorted, 0);
        auto handle = std::make_unique<hvd_process_set>();
        handle->info = c.process_sets().find(static_cast<uint16_t>(req->value));
        if (!handle->info)
            return fail(HVD_ERR_INTERNAL, strprintf("%s: the new set is not registered", fn));
        hvd_process_set *raw = handle.get();
        std::lock_guard<std::mutex> lock(ctx->process_sets_mu);
        ctx->process_sets[raw] = std::move(handle);
        *ps_p = raw;
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_process_set_destroy(hvd_context_h ctx, hvd_process_set_h ps) noexcept {
    const char *fn = "hvd_process_set_destroy";
    return guarded(fn, [&] {
        if (ctx == nullptr) return fail(HVD_ERR_INVALID_ARG, strprintf("%s: ctx is NULL", fn));
        if (ps == nullptr)
            return fail(HVD_ERR_INVALID_ARG,
                        strprintf("%s: the global process set cannot be destroyed", fn));
        hvd::engine::ProcessSetPtr info = ctx->process_set(ps, fn);
        negotiate(fn, *ctx->ctx, OpType::kProcessSetDestroy, {}, info->id);
        std::lock_guard<std::mutex> lock(ctx->process_sets_mu);
        ctx->process_sets.erase(ps);
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_process_set_included(hvd_context_h ctx, hvd_process_set_h ps,
                                              int32_t *included_p) noexcept {
    const char *fn = "hvd_process_set_included";
    return guarded(fn, [&] {
        if (ctx == nullptr || included_p == nullptr)
            return fail(HVD_ERR_INVALID_ARG, strprintf("%s: NULL argument", fn));
        *included_p = ctx->process_set(ps, fn)->my_index >= 0 ? 1 : 0;
        return HVD_OK;
    });
}

}  // extern "C"
