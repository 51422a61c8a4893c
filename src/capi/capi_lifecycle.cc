// SPDX-License-Identifier: Apache-2.0
// Init, finalize, abort and the topology queries.
#include "bootstrap/unique_id.h"
#include "capi/guard.h"
#include "capi/handles.h"
#include "config/read.h"

using hvd::Error;
using hvd::strprintf;
using hvd::capi::fail;
using hvd::capi::guarded;

namespace {

constexpr uint64_t kKnownInitFields =
    HVD_INIT_FIELD_RANK | HVD_INIT_FIELD_UNIQUE_ID | HVD_INIT_FIELD_TIMEOUT;

int64_t default_bootstrap_timeout_ms() {
    return hvd::config::get_int(hvd::config::Setting::kStartTimeout) * 1000;
}

int64_t default_op_timeout_ms() {
    int64_t s = hvd::config::get_int(hvd::config::Setting::kOpTimeout);
    return s < 0 ? -1 : s * 1000;
}

// Copies the caller's struct once, applying defaults first (UCC/NCCL style).
hvd::engine::InitConfig read_init_params(const hvd_init_params_t *p) {
    hvd::engine::InitConfig c;
    c.bootstrap_timeout_ms = default_bootstrap_timeout_ms();
    c.op_timeout_ms = default_op_timeout_ms();
    if (p == nullptr) return c;
    if (p->field_mask & ~kKnownInitFields)
        throw Error(HVD_ERR_UNSUPPORTED,
                    strprintf("unknown field_mask bits 0x%llx in hvd_init_params_t",
                              static_cast<unsigned long long>(p->field_mask & ~kKnownInitFields)));
    if (p->field_mask & HVD_INIT_FIELD_RANK) {
        if (p->size < 1 || p->rank < 0 || p->rank >= p->size)
            throw Error(HVD_ERR_INVALID_ARG,
                        strprintf("rank %d of size %d is not a valid rank", p->rank, p->size));
        c.explicit_rank = true;
        c.rank = p->rank;
        c.size = p->size;
    }
    if (p->field_mask & HVD_INIT_FIELD_UNIQUE_ID) {
        if (!c.explicit_rank)
            throw Error(HVD_ERR_INVALID_ARG,
                        "HVD_INIT_FIELD_UNIQUE_ID needs HVD_INIT_FIELD_RANK (rank and size)");
        c.has_unique_id = true;
        c.unique_id = p->unique_id;
    }
    if (p->field_mask & HVD_INIT_FIELD_TIMEOUT) {
        if (p->timeout_ms == 0)
            throw Error(HVD_ERR_INVALID_ARG, "timeout_ms 0 leaves no time to join the job");
        c.bootstrap_timeout_ms = p->timeout_ms < 0 ? default_bootstrap_timeout_ms() : p->timeout_ms;
        c.op_timeout_ms = p->timeout_ms;
    }
    return c;
}

hvd_status_t with_context(hvd_context_h ctx, int32_t *out, const char *fn,
                          int32_t (*get)(hvd::engine::Context &)) {
    if (ctx == nullptr || out == nullptr)
        return fail(HVD_ERR_INVALID_ARG, strprintf("%s: NULL argument", fn));
    *out = get(*ctx->ctx);
    return HVD_OK;
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_get_unique_id(hvd_unique_id_t *id_p) noexcept {
    return guarded("hvd_get_unique_id", [&] {
        if (id_p == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_get_unique_id: id_p is NULL");
        *id_p = hvd::bootstrap::make_unique_id(default_bootstrap_timeout_ms());
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_init_versioned(uint32_t abi_version, uint32_t version_code,
                                        const hvd_init_params_t *params,
                                        hvd_context_h *ctx_p) noexcept {
    return guarded("hvd_init", [&] {
        if (abi_version != HVD_ABI_VERSION)
            return fail(HVD_ERR_VERSION,
                        strprintf("hvd_init: the program was built for libhvd ABI %u, this is "
                                  "libhvd.so.%d (%s)",
                                  abi_version, HVD_ABI_VERSION, HVD_VERSION_STRING));
        if (version_code > HVD_VERSION_CODE)
            hvd::set_last_error(strprintf("hvd_init: built against libhvd %u, running %u",
                                          version_code, HVD_VERSION_CODE));
        if (ctx_p == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_init: ctx_p is NULL");
        hvd::engine::InitConfig config = read_init_params(params);
        auto handle = std::make_unique<hvd_context>();
        handle->ctx = std::make_unique<hvd::engine::Context>(config);
        *ctx_p = handle.release();
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_finalize(hvd_context_h ctx) noexcept {
    return guarded("hvd_finalize", [&] {
        if (ctx == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_finalize: ctx is NULL");
        std::unique_ptr<hvd_context> handle(ctx);
        handle->ctx->finalize();
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_abort(hvd_context_h ctx, hvd_status_t reason) noexcept {
    return guarded("hvd_abort", [&] {
        if (ctx == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_abort: ctx is NULL");
        hvd_status_t status = reason < 0 ? reason : HVD_ERR_ABORTED;
        ctx->ctx->abort(status, strprintf("rank %d: the application called hvd_abort (%s)",
                                          ctx->ctx->rank(), hvd_status_name(status)));
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_context_error(hvd_context_h ctx) noexcept {
    return guarded("hvd_context_error", [&] {
        if (ctx == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_context_error: ctx is NULL");
        hvd::engine::AbortState &a = ctx->ctx->abort_state();
        if (!a.aborted()) return HVD_OK;
        return fail(a.status(), a.detail());
    });
}

HVD_API hvd_status_t hvd_rank(hvd_context_h ctx, hvd_process_set_h ps, int32_t *rank_p) noexcept {
    return guarded("hvd_rank", [&] {
        if (ctx == nullptr || rank_p == nullptr)
            return fail(HVD_ERR_INVALID_ARG, "hvd_rank: NULL argument");
        *rank_p = ctx->process_set(ps, "hvd_rank")->my_index;
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_size(hvd_context_h ctx, hvd_process_set_h ps, int32_t *size_p) noexcept {
    return guarded("hvd_size", [&] {
        if (ctx == nullptr || size_p == nullptr)
            return fail(HVD_ERR_INVALID_ARG, "hvd_size: NULL argument");
        *size_p = ctx->process_set(ps, "hvd_size")->size();
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_local_rank(hvd_context_h ctx, int32_t *rank_p) noexcept {
    return guarded("hvd_local_rank", [&] {
        return with_context(ctx, rank_p, "hvd_local_rank",
                            [](hvd::engine::Context &c) { return c.placement().local_rank; });
    });
}

HVD_API hvd_status_t hvd_local_size(hvd_context_h ctx, int32_t *size_p) noexcept {
    return guarded("hvd_local_size", [&] {
        return with_context(ctx, size_p, "hvd_local_size",
                            [](hvd::engine::Context &c) { return c.placement().local_size; });
    });
}

HVD_API hvd_status_t hvd_cross_rank(hvd_context_h ctx, int32_t *rank_p) noexcept {
    return guarded("hvd_cross_rank", [&] {
        return with_context(ctx, rank_p, "hvd_cross_rank",
                            [](hvd::engine::Context &c) { return c.placement().cross_rank; });
    });
}

HVD_API hvd_status_t hvd_cross_size(hvd_context_h ctx, int32_t *size_p) noexcept {
    return guarded("hvd_cross_size", [&] {
        return with_context(ctx, size_p, "hvd_cross_size",
                            [](hvd::engine::Context &c) { return c.placement().cross_size; });
    });
}

HVD_API hvd_status_t hvd_elastic_membership(hvd_context_h ctx, int64_t *round_p,
                                            int32_t *pending_p) noexcept {
    return guarded("hvd_elastic_membership", [&] {
        if (ctx == nullptr)
            return fail(HVD_ERR_INVALID_ARG, "hvd_elastic_membership: NULL context");
        int64_t round = -1;
        bool pending = false;
        ctx->ctx->elastic_membership(&round, &pending);
        if (round_p != nullptr) *round_p = round;
        if (pending_p != nullptr) *pending_p = pending ? 1 : 0;
        return HVD_OK;
    });
}

}  // extern "C"
