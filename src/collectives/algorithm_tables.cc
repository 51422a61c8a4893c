// SPDX-License-Identifier: Apache-2.0
// The entries of each collective's table (algorithms.h), in order of preference.
#include "collectives/algorithms.h"
#include "collectives/collectives.h"
#include "collectives/hierarchy.h"
#include "collectives/shm/shm_sync.h"

namespace hvd::collectives {

namespace {

bool on_host(const Comm &, size_t, Memory memory) {
    return memory == Memory::kHost;
}

// Every member on one host, in one shared-memory group.
bool on_shared_memory(const Comm &comm, size_t, Memory memory) {
    return memory == Memory::kHost && comm.shm != nullptr;
}

// Three members or more on one host's shared memory. Two reduce-scatter about as fast over
// the transport, whose single copy between two processes reads the other's input where it
// lies, without the slots' hand-off (measured on a 2-CPU VM: the slots 0.9x at 1 MiB, par
// from 16 MiB; from three members they won from 1 MiB).
bool reducescatter_on_shared_memory(const Comm &comm, size_t bytes, Memory memory) {
    return on_shared_memory(comm, bytes, memory) && comm.size() >= 3;
}

// A job spanning hosts, from the hierarchy's size for the collective on (kHierarchyOff where
// it does not apply).
bool hierarchy_from(const Comm &comm, size_t bytes, Memory memory, size_t Hierarchy::*min_bytes) {
    return memory == Memory::kHost && comm.hierarchy != nullptr &&
           comm.hierarchy->*min_bytes != kHierarchyOff && bytes >= comm.hierarchy->*min_bytes;
}
bool allreduce_across_hosts(const Comm &comm, size_t bytes, Memory memory) {
    return hierarchy_from(comm, bytes, memory, &Hierarchy::allreduce_min_bytes);
}
bool allgather_across_hosts(const Comm &comm, size_t bytes, Memory memory) {
    return hierarchy_from(comm, bytes, memory, &Hierarchy::allgather_min_bytes) &&
           bytes <= comm.hierarchy->allgather_max_bytes;
}
bool broadcast_across_hosts(const Comm &comm, size_t bytes, Memory memory) {
    return hierarchy_from(comm, bytes, memory, &Hierarchy::broadcast_min_bytes);
}

// Recursive doubling moves the whole buffer log2(n) times but in only log2(n) rounds; the
// ring moves 2(n-1)/n of it in 2(n-1) rounds. Rounds dominate small messages, bytes large ones.
bool small_allreduce(const Comm &, size_t bytes, Memory memory) {
    return memory == Memory::kHost && bytes <= recursive_doubling_max_bytes();
}

// The tree finishes in log2(n) message latencies but the root sends the whole buffer log2(n)
// times; the chain sends it once per link and pays n-2 chunk latencies to fill. With two
// members both are one link, and one whole message beats chunks.
bool tree_broadcast(const Comm &comm, size_t bytes, Memory memory) {
    return memory == Memory::kHost && (bytes <= broadcast_tree_max_bytes() || comm.size() == 2);
}

}  // namespace

const std::vector<Algorithm<AllreduceRun>> &allreduce_algorithms() {
    static const std::vector<Algorithm<AllreduceRun>> table{
        {"shm allreduce", on_shared_memory, allreduce_shm},
        {"hierarchical allreduce", allreduce_across_hosts, allreduce_hierarchical},
        {"recursive doubling allreduce", small_allreduce, allreduce_recursive_doubling},
        {"ring allreduce", on_host, allreduce_ring},
    };
    return table;
}

const std::vector<Algorithm<BroadcastRun>> &broadcast_algorithms() {
    static const std::vector<Algorithm<BroadcastRun>> table{
        {"shm broadcast", on_shared_memory, broadcast_shm},
        {"hierarchical broadcast", broadcast_across_hosts, broadcast_hierarchical},
        {"binomial tree broadcast", tree_broadcast, broadcast_binomial_tree},
        {"chain broadcast", on_host, broadcast_chain},
    };
    return table;
}

const std::vector<Algorithm<AllgathervRun>> &allgatherv_algorithms() {
    static const std::vector<Algorithm<AllgathervRun>> table{
        {"shm allgatherv", on_shared_memory, allgatherv_shm},
        {"hierarchical allgatherv", allgather_across_hosts, allgatherv_hierarchical},
        {"ring allgatherv", on_host, allgatherv_ring},
    };
    return table;
}

const std::vector<Algorithm<AlltoallvRun>> &alltoallv_algorithms() {
    static const std::vector<Algorithm<AlltoallvRun>> table{
        {"pairwise alltoallv", on_host, alltoallv_pairwise},
    };
    return table;
}

const std::vector<Algorithm<ReducescatterRun>> &reducescatter_algorithms() {
    static const std::vector<Algorithm<ReducescatterRun>> table{
        {"shm reducescatter", reducescatter_on_shared_memory, reducescatter_shm},
        {"ring reducescatter", on_host, reducescatter_ring},
    };
    return table;
}

}  // namespace hvd::collectives
