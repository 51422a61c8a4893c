// SPDX-License-Identifier: Apache-2.0
// Horovod's local and cross communicators, computed from the host name each rank reports:
// local = the ranks on my host (ordered by global rank); cross = the ranks that share my
// local rank, one per host (ordered by global rank).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvd::topology {

struct HostPlacement {
    int32_t local_rank = 0;
    int32_t local_size = 1;
    int32_t cross_rank = 0;
    int32_t cross_size = 1;
};

// hosts[r] is rank r's host name; returns the placement of `rank`.
HostPlacement place_rank(const std::vector<std::string> &hosts, int32_t rank);

// This process's host name: HVD_HOSTNAME if set (hvdrun sets it), else gethostname().
std::string this_host_name();

}  // namespace hvd::topology
