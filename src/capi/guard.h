// SPDX-License-Identifier: Apache-2.0
// The one wall between C and C++: every exported function runs its body through guarded(),
// which turns exceptions into status codes and records the detail for hvd_last_error().
#pragma once

#include <new>
#include <string>

#include "common/error.h"
#include "hvd/hvd.h"

namespace hvd::capi {

// Records detail as this thread's last error and returns status.
inline hvd_status_t fail(hvd_status_t status, const std::string &detail) {
    set_last_error(detail);
    return status;
}

// "fn: detail", once: errors thrown by the enqueue checks already start with the function.
inline std::string prefixed(const char *fn, const char *detail) {
    std::string head = std::string(fn) + ": ";
    return std::string(detail).rfind(head, 0) == 0 ? std::string(detail) : head + detail;
}

template <typename Body>
hvd_status_t guarded(const char *fn, Body &&body) noexcept {
    try {
        return body();
    } catch (const Error &e) {
        return fail(e.status(), prefixed(fn, e.what()));
    } catch (const std::bad_alloc &) {
        return fail(HVD_ERR_NO_MEMORY, std::string(fn) + ": out of memory");
    } catch (const std::exception &e) {
        return fail(HVD_ERR_INTERNAL, std::string(fn) + ": internal error: " + e.what());
    } catch (...) {
        return fail(HVD_ERR_INTERNAL, std::string(fn) + ": internal error (unknown exception)");
    }
}

// snprintf-like copy of s into buf (len bytes including NUL); returns s.size().
inline size_t copy_out(const std::string &s, char *buf, size_t len) {
    if (buf != nullptr && len > 0) {
        size_t n = s.size() < len - 1 ? s.size() : len - 1;
        s.copy(buf, n);
        buf[n] = '\0';
    }
    return s.size();
}

}  // namespace hvd::capi
