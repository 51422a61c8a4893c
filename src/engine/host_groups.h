// SPDX-License-Identifier: Apache-2.0
// Shared memory per host, set up through the rendezvous at init: the whole job's group where
// every rank shares one host, and for a job that spans hosts, one group per host (of two ranks
// or more) plus the hierarchy the hierarchical collectives run on (collectives/hierarchy.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/kv_store.h"
#include "collectives/hierarchy.h"
#include "common/deadline.h"
#include "shm/shm_group.h"
#include "topology/rank_locality.h"

namespace hvd::engine {

// The shared-memory group of the host whose ranks are host_ranks (in rank order; this rank
// among them): the host's first rank creates the segment and publishes its name under
// "shm.<first rank>", the others open it; single copy and mapped buffers are enabled where
// every rank of the host can use them. Collective over every rank of the job (its two
// all_gathers), whatever `wanted` says: each rank calls it once, with its own host's ranks.
// Returns null (with *problem where this rank knows why) when shared memory is not wanted
// here (HVD_SHM=0) or any rank of the host could not map the segment. Throws hvd::Error when
// the rendezvous fails or times out.
std::unique_ptr<shm::Group> attach_host_group(bootstrap::KvClient &kv, int32_t rank,
                                              const std::vector<int32_t> &host_ranks, bool wanted,
                                              const Deadline &deadline, std::string *problem);

// The hierarchy of a job that spans hosts, or null: set up where at least one of the
// hierarchical allreduce, allgather and broadcast applies (HVD_HIERARCHICAL_ALLREDUCE,
// _ALLGATHER, _BROADCAST and the hosts' shapes), every host of two ranks or more has its
// group and every rank the same settings; otherwise every rank gets null (rank 0 logs why when
// a setting asked for it). *group receives this host's group (it must outlive the hierarchy).
// `locality` is this rank's; every rank's NUMA node and nearest NIC choose the share holders.
// Collective over every rank of a job spanning hosts.
// Throws hvd::Error when the rendezvous fails or times out.
std::unique_ptr<collectives::Hierarchy> set_up_hierarchy(bootstrap::KvClient &kv, int32_t rank,
                                                         const std::vector<std::string> &hosts,
                                                         const topology::RankLocality &locality,
                                                         const Deadline &deadline,
                                                         std::unique_ptr<shm::Group> *group);

}  // namespace hvd::engine
