// SPDX-License-Identifier: Apache-2.0
// --bind-to core: which CPU each rank on this host is pinned to.
#pragma once

#include <string>
#include <vector>

#include "hosts.h"
#include "launch_plan.h"

namespace hvdrun {

// Sets plan[i].cpu for every rank to the (local rank mod n)-th of the n CPUs in `allowed`
// (ascending CPU numbers: hvdrun's own affinity). Fails with *err when a rank runs on another
// host (its CPUs are not known here) or `allowed` is empty.
bool assign_cpus(const std::vector<Placement> &ranks, const std::vector<int> &allowed,
                 std::vector<RankLaunch> *plan, std::string *err);

// The CPUs this process may run on, ascending.
std::vector<int> allowed_cpus();

}  // namespace hvdrun
