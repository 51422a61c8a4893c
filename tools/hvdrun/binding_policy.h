// SPDX-License-Identifier: Apache-2.0
// --map-by and --bind-to as mpirun reads them: where each rank of a host is placed (map) and
// which CPUs it is pinned to (bind).
#pragma once

#include <string>

namespace hvdrun {

// The places of a host ranks are mapped to and bound to. kSlot maps rank after rank onto the
// cores in order (as kCore) and never binds; kNone never binds.
enum class Level { kNone, kSlot, kCore, kNuma, kSocket };

struct BindPolicy {
    Level map_by = Level::kSlot;
    Level bind_to = Level::kNone;
    bool overload_allowed = false;  // --bind-to X:overload-allowed: more ranks than cores in a
                                    // place is no error
};

// "core", "numa", "socket" (alias "package"), "none" with an optional ":overload-allowed".
// False for anything else.
bool parse_bind_to(const std::string &text, BindPolicy *policy);
// "slot", "core", "numa", "socket" (alias "package"). False for anything else.
bool parse_map_by(const std::string &text, BindPolicy *policy);

// "core", "numa", "socket", "slot" or "none".
const char *level_name(Level level);

}  // namespace hvdrun
