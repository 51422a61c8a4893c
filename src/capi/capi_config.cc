// SPDX-License-Identifier: Apache-2.0
// Runtime configuration: hvd_config_get / hvd_config_set.
#include <string>

#include "capi/guard.h"
#include "capi/handles.h"
#include "config/runtime_config.h"

using hvd::capi::fail;
using hvd::capi::guarded;

namespace {

hvd::config::RuntimeConfig &config_of(hvd_context_h ctx) {
    return ctx == nullptr ? hvd::config::process_config() : ctx->ctx->config();
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_config_set(hvd_context_h ctx, int32_t key, double value) noexcept {
    return guarded("hvd_config_set", [&] {
        std::string err;
        if (!config_of(ctx).set(key, value, &err))
            return fail(HVD_ERR_INVALID_ARG, "hvd_config_set: " + err);
        if (ctx != nullptr) ctx->ctx->engine().wake();
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_config_get(hvd_context_h ctx, int32_t key, double *value_p) noexcept {
    return guarded("hvd_config_get", [&] {
        if (value_p == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_config_get: value_p is NULL");
        std::string err;
        if (!config_of(ctx).get(key, value_p, &err))
            return fail(HVD_ERR_INVALID_ARG, "hvd_config_get: " + err);
        return HVD_OK;
    });
}

}  // extern "C"
