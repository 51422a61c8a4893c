// SPDX-License-Identifier: Apache-2.0
#include "completer.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace hvd_jax {

namespace {
// A wait slice: while requests are outstanding, they are all tested this often.
constexpr int64_t kWaitSliceMs = 2;
constexpr auto kIdleSlice = std::chrono::milliseconds(200);
}  // namespace

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

Completer::Completer() : thread_([this] { loop(); }) {}

Completer::~Completer() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void Completer::add(hvd_request_h req, xla::ffi::Promise promise, std::string what,
                    FinishFn finish) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(Pending{req, std::move(promise), std::move(what), std::move(finish)});
    }
    cv_.notify_one();
}

void Completer::settle(Pending &p, hvd_status_t status) {
    std::string error;
    if (status == HVD_OK) {
        error = p.finish ? p.finish(p.req) : std::string();
        if (!error.empty()) error = error_text(HVD_ERR_MISMATCH, p.what, error, false);
    } else {
        char buf[2048];
        size_t n = hvd_request_message(p.req, buf, sizeof(buf));
        error = error_text(status, p.what, std::string(buf, n < sizeof(buf) ? n : 0), false);
    }
    hvd_request_release(p.req);
    if (error.empty()) {
        p.promise.SetAvailable();
    } else {
        p.promise.SetError(xla::ffi::Error(xla::ffi::ErrorCode::kInternal, error));
    }
}

void Completer::loop() {
    std::vector<Pending> pending;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            if (pending.empty() && queue_.empty()) {
                if (stop_) return;
                cv_.wait_for(lock, kIdleSlice);
            }
            while (!queue_.empty()) {
                pending.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            if (stop_) {  // the process is exiting: nobody waits for these any more
                for (Pending &p : pending)
                    settle(p, HVD_ERR_ABORTED);
                pending.clear();
                continue;
            }
        }
        if (pending.empty()) continue;
        // Waiting on the oldest drives libhvd's engine; a short slice keeps the others'
        // completions prompt. Every request completes by its op timeout at the latest.
        hvd_request_wait(pending.front().req, kWaitSliceMs);
        size_t kept = 0;
        for (size_t i = 0; i < pending.size(); ++i) {
            hvd_status_t status = hvd_request_test(pending[i].req);
            if (status != HVD_INPROGRESS) {
                settle(pending[i], status);
            } else {
                if (kept != i) pending[kept] = std::move(pending[i]);
                ++kept;
            }
        }
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(kept), pending.end());
    }
}

Completer &completer() {
    static Completer c;
    return c;
}

}  // namespace hvd_jax
