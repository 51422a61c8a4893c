// SPDX-License-Identifier: Apache-2.0
// Timeline start/stop at run time.
#include "capi/guard.h"
#include "capi/handles.h"

using hvd::capi::fail;
using hvd::capi::guarded;

extern "C" {

HVD_API hvd_status_t hvd_timeline_start(hvd_context_h ctx, const char *path,
                                        int32_t mark_cycles) noexcept {
    return guarded("hvd_timeline_start", [&] {
        if (ctx == nullptr || path == nullptr || path[0] == '\0')
            return fail(HVD_ERR_INVALID_ARG, "hvd_timeline_start: NULL or empty argument");
        ctx->ctx->timeline().start(path, mark_cycles != 0, ctx->ctx->rank());
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_timeline_stop(hvd_context_h ctx) noexcept {
    return guarded("hvd_timeline_stop", [&] {
        if (ctx == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_timeline_stop: ctx is NULL");
        ctx->ctx->timeline().stop();
        return HVD_OK;
    });
}

}  // extern "C"
