// SPDX-License-Identifier: Apache-2.0
// --bind-to, --map-by and --report-bindings on this host: its topology through hwloc, the CPUs
// each local rank is pinned to, and mpirun's report of them.
#pragma once

#include <string>
#include <vector>

#include "binding_policy.h"
#include "hosts.h"
#include "launch_plan.h"
#include "topology/machine.h"

namespace hvdrun {

// This host's packages, NUMA nodes and cores (hwloc's; HWLOC_XMLFILE or HWLOC_SYNTHETIC
// replace it), restricted to the CPUs hvdrun may run on when it is this machine's. False
// with *err when hwloc cannot load it.
bool load_local_machine(hvd::topology::Machine *machine, std::string *err);

// Sets plan[i].cpus for every rank of this host as place_local_ranks() places them on
// `machine` (ranks on other hosts are bound there: remote_binding.h). Fails with *err as
// place_local_ranks() does.
bool assign_cpus(const hvd::topology::Machine &machine, const BindPolicy &policy,
                 const std::vector<Placement> &ranks, std::vector<RankLaunch> *plan,
                 std::string *err);

// mpirun's --report-bindings lines, one per rank of this host (the others report on theirs):
// "[host:pid] MCW rank R bound to ..." (see
// describe_binding()) or "... MCW rank R is not bound (or bound to all available processors)";
// pid is hvdrun's.
std::vector<std::string> binding_report(const hvd::topology::Machine &machine,
                                        const std::vector<RankLaunch> &plan,
                                        const std::string &host, int pid);

}  // namespace hvdrun
