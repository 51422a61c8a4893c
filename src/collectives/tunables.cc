// The size thresholds and chunk sizes of the collectives, overridable by environment.
#include "collectives/collectives.h"
#include "common/env.h"

namespace hvd::collectives {

namespace {

size_t env_bytes(const char *key, size_t dflt) {
    int64_t v = env_setting_int(key, static_cast<int64_t>(dflt));
    return v > 0 ? static_cast<size_t>(v) : dflt;
}

}  // namespace

// Read once: the engine calls these on every collective, and a setting changed mid-run
// would make ranks that read it at different times pick different algorithms.
size_t recursive_doubling_max_bytes() {
    static const size_t v = env_bytes("ALLREDUCE_RD_MAX_BYTES", kRecursiveDoublingMaxBytes);
    return v;
}

size_t ring_chunk_bytes() {
    static const size_t v = env_bytes("ALLREDUCE_RING_CHUNK_BYTES", kRingChunkBytes);
    return v;
}

size_t broadcast_tree_max_bytes() {
    static const size_t v = env_bytes("BROADCAST_TREE_MAX_BYTES", kBroadcastTreeMaxBytes);
    return v;
}

size_t broadcast_chunk_bytes() {
    static const size_t v = env_bytes("BROADCAST_CHUNK_BYTES", kBroadcastChunkBytes);
    return v;
}

}  // namespace hvd::collectives
