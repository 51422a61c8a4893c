// SPDX-License-Identifier: Apache-2.0
#include "binding_policy.h"

namespace hvdrun {
namespace {

bool parse_level(const std::string &text, Level *level) {
    if (text == "core") {
        *level = Level::kCore;
    } else if (text == "numa") {
        *level = Level::kNuma;
    } else if (text == "socket" || text == "package") {
        *level = Level::kSocket;
    } else {
        return false;
    }
    return true;
}

}  // namespace

bool parse_bind_to(const std::string &text, BindPolicy *policy) {
    static const std::string kOverload = ":overload-allowed";
    std::string level = text;
    bool overload = false;
    if (level.size() > kOverload.size() &&
        level.compare(level.size() - kOverload.size(), kOverload.size(), kOverload) == 0) {
        level.resize(level.size() - kOverload.size());
        overload = true;
    }
    Level parsed = Level::kNone;
    if (level != "none" && !parse_level(level, &parsed)) return false;
    policy->bind_to = parsed;
    policy->overload_allowed = overload;
    return true;
}

bool parse_map_by(const std::string &text, BindPolicy *policy) {
    Level parsed = Level::kSlot;
    if (text != "slot" && !parse_level(text, &parsed)) return false;
    policy->map_by = parsed;
    return true;
}

const char *level_name(Level level) {
    switch (level) {
        case Level::kNone:
            return "none";
        case Level::kSlot:
            return "slot";
        case Level::kCore:
            return "core";
        case Level::kNuma:
            return "numa";
        case Level::kSocket:
            return "socket";
    }
    return "none";
}

}  // namespace hvdrun
