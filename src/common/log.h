// SPDX-License-Identifier: Apache-2.0
// Leveled, rank-prefixed logging to stderr. Level from HVD_LOG_LEVEL
// (trace, debug, info, warning, error, fatal; default warning).
#pragma once

#include <string>

#include "common/error.h"

namespace hvd {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarning, kError, kFatal };

LogLevel log_level();
bool log_enabled(LogLevel level);

// rank < 0: no rank in the prefix. Thread-safe (one write(2) per line).
void log_line(LogLevel level, int rank, const std::string &msg);

}  // namespace hvd

#define HVD_LOG(level, rank, ...)                                                           \
    do {                                                                                    \
        if (::hvd::log_enabled(::hvd::LogLevel::level))                                     \
            ::hvd::log_line(::hvd::LogLevel::level, (rank), ::hvd::strprintf(__VA_ARGS__)); \
    } while (0)
