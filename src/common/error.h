// SPDX-License-Identifier: Apache-2.0
// Errors inside the C++ core: an exception carrying a status and a readable detail, and the
// thread-local "last error" that the C ABI exposes through hvd_last_error().
#pragma once

#include <stdexcept>
#include <string>

#include "hvd/hvd.h"

namespace hvd {

// Thrown by the core; caught once, at the C ABI boundary (src/capi/guard.h).
class Error : public std::runtime_error {
  public:
    Error(hvd_status_t status, const std::string &detail)
        : std::runtime_error(detail), status_(status) {}
    hvd_status_t status() const { return status_; }

  private:
    hvd_status_t status_;
};

// printf-style message builder used for error details and log lines.
std::string strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// The calling thread's last error detail. set_last_error replaces it; clear empties it.
void set_last_error(const std::string &detail);
void clear_last_error();
const std::string &last_error();

// Name and message of a status; unknown values get "HVD_UNKNOWN_STATUS" / "unknown status".
const char *status_name(hvd_status_t status);
const char *status_message(hvd_status_t status);

}  // namespace hvd
