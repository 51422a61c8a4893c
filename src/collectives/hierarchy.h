// SPDX-License-Identifier: Apache-2.0
// A job's hosts as the hierarchical algorithms see them: this rank's host (its ranks, in rank
// order, with their shared-memory group) and its cross group (the rank of the same local
// index on every host, in host order). Built once at init where every host runs the same
// number of ranks (engine/host_groups.h); the same shape on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hvd::shm {
class Group;
}

namespace hvd::collectives {

struct Hierarchy {
    std::vector<int32_t> local_members;  // global ranks of this host, in rank order
    int32_t local_index = 0;             // this rank's index in local_members
    shm::Group *local_shm = nullptr;     // the host's group: exactly local_members, in order
    std::vector<int32_t> cross_members;  // global ranks of local index local_index, host order
    int32_t cross_index = 0;             // this rank's index in cross_members
    // Allreduces from this many bytes run hierarchically (0: every size).
    size_t allreduce_min_bytes = 0;
};

// The members' global ranks by host (hosts[r]: rank r's host name): hosts in order of their
// lowest rank, each host's ranks in rank order. Pure.
std::vector<std::vector<int32_t>> ranks_by_host(const std::vector<std::string> &hosts);

// Whether every host runs the same number of ranks, at least two, on more than one host:
// where the hierarchical algorithms apply. Pure.
bool hierarchy_applies(const std::vector<std::vector<int32_t>> &by_host);

// The hierarchy of `rank` (which must be in by_host); local_shm and allreduce_min_bytes are
// left for the caller. Pure.
Hierarchy make_hierarchy(const std::vector<std::vector<int32_t>> &by_host, int32_t rank);

}  // namespace hvd::collectives
