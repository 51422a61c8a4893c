// SPDX-License-Identifier: Apache-2.0
#include "common/log.h"

#include <strings.h>
#include <unistd.h>

#include <cstdio>

#include "config/read.h"

namespace hvd {

namespace {

LogLevel parse_level() {
    const char *v = config::get_string(config::Setting::kLogLevel);
    if (!v) return LogLevel::kWarning;
    static const char *const kNames[] = {"trace", "debug", "info", "warning", "error", "fatal"};
    for (int i = 0; i < 6; ++i)
        if (!strcasecmp(v, kNames[i])) return static_cast<LogLevel>(i);
    if (!strcasecmp(v, "warn")) return LogLevel::kWarning;
    return LogLevel::kWarning;
}

const char *level_tag(LogLevel level) {
    static const char *const kTags[] = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"};
    return kTags[static_cast<int>(level)];
}

}  // namespace

LogLevel log_level() {
    static const LogLevel level = parse_level();
    return level;
}

bool log_enabled(LogLevel level) {
    return level >= log_level();
}

void log_line(LogLevel level, int rank, const std::string &msg) {
    char prefix[64];
    if (rank >= 0)
        std::snprintf(prefix, sizeof prefix, "[hvd %s rank %d] ", level_tag(level), rank);
    else
        std::snprintf(prefix, sizeof prefix, "[hvd %s] ", level_tag(level));
    std::string line = std::string(prefix) + msg + "\n";
    ssize_t ignored = ::write(2, line.data(), line.size());
    (void)ignored;
}

}  // namespace hvd
