// SPDX-License-Identifier: Apache-2.0
// The size thresholds and chunk sizes of the collectives, overridable by environment.
#include "collectives/collectives.h"
#include "config/read.h"

namespace hvd::collectives {

namespace {

// The table's range (>= 1, else the default) keeps v positive.
size_t env_bytes(config::Setting s) {
    return static_cast<size_t>(config::get_int(s));
}

}  // namespace

// Read once: the engine calls these on every collective, and a setting changed mid-run
// would make ranks that read it at different times pick different algorithms.
size_t recursive_doubling_max_bytes() {
    static const size_t v = env_bytes(config::Setting::kAllreduceRdMaxBytes);
    return v;
}

size_t ring_chunk_bytes() {
    static const size_t v = env_bytes(config::Setting::kAllreduceRingChunkBytes);
    return v;
}

size_t broadcast_tree_max_bytes() {
    static const size_t v = env_bytes(config::Setting::kBroadcastTreeMaxBytes);
    return v;
}

size_t broadcast_chunk_bytes() {
    static const size_t v = env_bytes(config::Setting::kBroadcastChunkBytes);
    return v;
}

}  // namespace hvd::collectives
