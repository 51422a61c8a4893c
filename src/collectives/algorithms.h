// SPDX-License-Identifier: Apache-2.0
// The algorithms of each collective as components: one table per collective, in order of
// preference, over the back-ends (shm/: a host's shared-memory group; p2p/: point-to-point
// messages through the transport; a GPU back-end adds its entries). The dispatching entry
// points of collectives.h run the first entry whose supports() accepts the call, so a new
// back-end or a hierarchical algorithm is a new entry, not another `if`. supports() looks only
// at the group, the call's size in bytes and where the buffers live; it must give the same
// answer on every member (the members of one call must pick the same algorithm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/comm.h"
#include "hvd/hvd.h"

namespace hvd::collectives {

template <typename Run>
struct Algorithm {
    const char *name;  // as in logs and tests: "ring allreduce"
    bool (*supports)(const Comm &comm, size_t bytes, Memory memory);
    Run run;  // the algorithm's checked entry point
};

using AllreduceRun = hvd_status_t (*)(Comm &, void *buf, size_t count, int32_t dtype, int32_t op);
using BroadcastRun = hvd_status_t (*)(Comm &, void *buf, size_t bytes, int32_t root_index);
using AllgathervRun = hvd_status_t (*)(Comm &, const void *in, void *out,
                                       const std::vector<size_t> &bytes);
using AlltoallvRun = hvd_status_t (*)(Comm &, const void *in, const std::vector<size_t> &send,
                                      void *out, const std::vector<size_t> &recv);
using ReducescatterRun = hvd_status_t (*)(Comm &, const void *in, void *out,
                                          const std::vector<size_t> &counts, int32_t dtype,
                                          int32_t op);

// The tables, built once, in order of preference. Thread-safe (read only).
const std::vector<Algorithm<AllreduceRun>> &allreduce_algorithms();
const std::vector<Algorithm<BroadcastRun>> &broadcast_algorithms();
const std::vector<Algorithm<AllgathervRun>> &allgatherv_algorithms();
const std::vector<Algorithm<AlltoallvRun>> &alltoallv_algorithms();
const std::vector<Algorithm<ReducescatterRun>> &reducescatter_algorithms();

// The first entry of `table` that supports the call, or null when none does (e.g. device
// memory before a GPU back-end is loaded).
template <typename Run>
const Algorithm<Run> *choose(const std::vector<Algorithm<Run>> &table, const Comm &comm,
                             size_t bytes, Memory memory) {
    for (const Algorithm<Run> &a : table)
        if (a.supports(comm, bytes, memory)) return &a;
    return nullptr;
}

// For a call no entry supports: logs which collective, size and memory, and returns
// HVD_ERR_UNSUPPORTED.
hvd_status_t no_algorithm(const Comm &comm, const char *collective, size_t bytes, Memory memory);

}  // namespace hvd::collectives
