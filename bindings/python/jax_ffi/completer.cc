// SPDX-License-Identifier: Apache-2.0
#include "completer.h"

#include <memory>
#include <utility>

#include "request_completer.h"

namespace hvd_jax {

std::string error_text(hvd_status_t status, const std::string &what, const std::string &detail,
                       bool at_enqueue) {
    bool caller_error =
        at_enqueue && (status == HVD_ERR_INVALID_ARG || status == HVD_ERR_UNSUPPORTED ||
                       status == HVD_ERR_NOT_READY || status == HVD_ERR_VERSION);
    std::string text = caller_error ? "ValueError: " : "HorovodInternalError: ";
    text += hvd_status_name(status);
    text += ": hvd.jax " + what;
    if (!detail.empty()) text += ": " + detail;
    return text;
}

void complete(hvd_request_h req, xla::ffi::Promise promise, std::string what, FinishFn finish) {
    auto held = std::make_shared<xla::ffi::Promise>(std::move(promise));
    hvd_native::request_completer().add(
        req, [held, what = std::move(what), finish = std::move(finish)](hvd_request_h r,
                                                                        hvd_status_t status) {
            std::string error;
            if (status == HVD_OK) {
                error = finish ? finish(r) : std::string();
                if (!error.empty()) error = error_text(HVD_ERR_MISMATCH, what, error, false);
            } else {
                char buf[2048];
                size_t n = hvd_request_message(r, buf, sizeof(buf));
                error = error_text(status, what, std::string(buf, n < sizeof(buf) ? n : 0), false);
            }
            hvd_request_release(r);
            if (error.empty()) {
                held->SetAvailable();
            } else {
                held->SetError(xla::ffi::Error(xla::ffi::ErrorCode::kInternal, error));
            }
        });
}

}  // namespace hvd_jax
