// SPDX-License-Identifier: Apache-2.0
#include "common/error.h"

#include <cstdarg>
#include <cstdio>

#include "common/status_table.h"

namespace hvd {

namespace {
thread_local std::string t_last_error;
}

std::string strprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0) std::vsnprintf(&out[0], out.size() + 1, fmt, ap2);
    va_end(ap2);
    return out;
}

void set_last_error(const std::string &detail) {
    t_last_error = detail;
}
void clear_last_error() {
    t_last_error.clear();
}
const std::string &last_error() {
    return t_last_error;
}

const char *status_name(hvd_status_t status) {
    switch (static_cast<int>(status)) {
#define HVD_STATUS_NAME_CASE(name, value, message) \
    case value:                                    \
        return #name;
        HVD_STATUS_TABLE(HVD_STATUS_NAME_CASE)
#undef HVD_STATUS_NAME_CASE
    }
    return "HVD_UNKNOWN_STATUS";
}

const char *status_message(hvd_status_t status) {
    switch (static_cast<int>(status)) {
#define HVD_STATUS_MESSAGE_CASE(name, value, message) \
    case value:                                       \
        return message;
        HVD_STATUS_TABLE(HVD_STATUS_MESSAGE_CASE)
#undef HVD_STATUS_MESSAGE_CASE
    }
    return "unknown status";
}

}  // namespace hvd
