// SPDX-License-Identifier: Apache-2.0
// A job's hosts as the hierarchical algorithms see them: every host's ranks, this rank's host
// (its ranks, in rank order, with their shared-memory group), which of them hold a share of
// the data across hosts, and this rank's cross group (the holders of its share on every host,
// in host order). Built once at init for a job that spans hosts (engine/host_groups.h), from
// every rank's host and place on it; the same shape on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "collectives/comm.h"

namespace hvd::shm {
class Group;
}

namespace hvd::collectives {

// A collective that never runs hierarchically.
constexpr size_t kHierarchyOff = std::numeric_limits<size_t>::max();

// Where a rank sits on its host, as far as choosing share holders goes: the NIC nearest to
// it and its NUMA node (topology/rank_locality.h); "" and -1 when unknown.
struct RankPlace {
    std::string nic;
    int numa_node = -1;
};

struct Hierarchy {
    std::vector<std::vector<int32_t>> hosts;  // every host's ranks (ranks_by_host)
    int32_t host_index = 0;                   // this rank's host in hosts
    std::vector<int32_t> local_members;       // global ranks of this host, in rank order
    int32_t local_index = 0;                  // this rank's index in local_members
    shm::Group *local_shm = nullptr;          // the host's group: exactly local_members, in order
    // The share (of min_local_size()) each local index of this host holds, -1 for none: shares
    // 0, 1, ... in ascending local index, so that the shares lie in the buffer in local order.
    std::vector<int32_t> local_share;
    std::vector<int32_t> cross_members;  // the holders of this rank's share, in host order;
                                         // empty where this rank holds none
    int32_t cross_index = 0;             // this rank's index in cross_members
    // Each collective runs hierarchically from this many bytes (0: every size; kHierarchyOff:
    // never).
    size_t allreduce_min_bytes = 0;
    size_t allgather_min_bytes = 0;
    size_t broadcast_min_bytes = 0;
    // Allgathers of more bytes of output than this run flat (HVD_HIERARCHICAL_ALLGATHER_MAX_BYTES).
    size_t allgather_max_bytes = std::numeric_limits<size_t>::max();
    // Allreduces of CUDA tensors on NCCL run hierarchically too (HVD_HIERARCHICAL_ALLREDUCE=1,
    // never `auto`: NCCL across hosts is the better default there): NCCL within each host,
    // the host path across hosts (engine/gpu_hierarchical_allreduce.cc).
    bool cuda_allreduce = false;
    // Allgathers of CUDA tensors on NCCL too (HVD_HIERARCHICAL_ALLGATHER=1, where some host
    // runs two ranks or more): NCCL within each host, the hosts' first ranks across hosts
    // (engine/gpu_hierarchical_allgather.cc).
    bool cuda_allgather = false;

    // The fewest ranks any host runs: the number of shares a host's data is cut into, one per
    // local index that every host has.
    size_t min_local_size() const;
    // The share this rank holds, -1 for none.
    int32_t my_share() const { return local_share.at(static_cast<size_t>(local_index)); }
    // The Comm of `members` (global ranks; this rank at `index`) within `comm`, over `shm` (or
    // the transport where null), without the hierarchy.
    static Comm sub_comm(const Comm &comm, const std::vector<int32_t> &members, int32_t index,
                         shm::Group *shm);
    // The Comm of this rank's cross group, and of this host.
    Comm cross_comm(const Comm &comm) const {
        return sub_comm(comm, cross_members, cross_index, nullptr);
    }
    Comm local_comm(const Comm &comm) const {
        return sub_comm(comm, local_members, local_index, local_shm);
    }
};

// The members' global ranks by host (hosts[r]: rank r's host name): hosts in order of their
// lowest rank, each host's ranks in rank order. Pure.
std::vector<std::vector<int32_t>> ranks_by_host(const std::vector<std::string> &hosts);

// Whether the hierarchical allreduce applies: more than one host, one of them running two
// ranks or more (where every host runs one rank it would be the flat allreduce). Pure.
bool hierarchy_applies(const std::vector<std::vector<int32_t>> &by_host);

// Whether the hierarchical allgather and broadcast apply: more than one host. `any_size`:
// also where every host runs one rank (then they run as the flat algorithms would, among the
// hosts). Pure.
bool spans_hosts(const std::vector<std::vector<int32_t>> &by_host, bool any_size);

// Which of a host's ranks hold its `shares` shares (places: theirs, in local order; shares <=
// places.size()): ascending local indices, spread first over the NICs nearest to them and
// then over their NUMA nodes, so that the flows across hosts leave through every NIC and the
// reductions run on every NUMA node; the lowest local indices where that does not tell them
// apart. Pure.
std::vector<int32_t> choose_share_holders(const std::vector<RankPlace> &places, size_t shares);

// The hierarchy of `rank` (which must be in by_host), every rank's place on its host given by
// `places` (indexed by rank; empty: none known); local_shm and the sizes are left for the
// caller (every size, but the allreduce off where !hierarchy_applies()). Pure.
Hierarchy make_hierarchy(const std::vector<std::vector<int32_t>> &by_host, int32_t rank,
                         const std::vector<RankPlace> &places = {});

// HVD_OK where comm has a hierarchy that describes its members (every rank of the job, in
// rank order) with the host's shared-memory group wherever the host runs more than one rank;
// else aborts with HVD_ERR_INVALID_ARG, naming `algorithm`.
hvd_status_t check_hierarchy(const Comm &comm, const char *algorithm);

// Cuts `bytes` into `shares` consecutive shares (the first bytes % shares one byte longer);
// offsets[i], sizes[i]. Pure.
void cut_shares(size_t bytes, size_t shares, std::vector<size_t> *offsets,
                std::vector<size_t> *sizes);

}  // namespace hvd::collectives
