// SPDX-License-Identifier: Apache-2.0
// Where the ranks of one host run, as mpirun's --map-by and --bind-to place them on the host's
// packages, NUMA nodes and cores. Pure functions of a Machine, so that any machine (hwloc's
// synthetic ones) can be tried here.
#pragma once

#include <string>
#include <vector>

#include "binding_policy.h"
#include "topology/machine.h"

namespace hvdrun {

// The CPUs each of a host's ranks is bound to; ranks[k] is the global rank of local rank k.
// Local rank k is mapped to the (k mod P)-th of the P places of the --map-by level (cores for
// slot), as the j = (k div P)-th rank there; it is bound to the place of the --bind-to level
// that holds that place, or, when that level is finer, to the j-th such place inside it.
// (*cpus)[k] is empty for every rank when the policy binds nothing. Fails with *err naming
// the ranks when more of them would share a place than it has cores (unless
// policy.overload_allowed) or the machine has no place of a level.
bool place_local_ranks(const hvd::topology::Machine &machine, const BindPolicy &policy,
                       const std::vector<int> &ranks, std::vector<std::vector<int>> *cpus,
                       std::string *err);

// mpirun --report-bindings' description of a binding to `cpus` (not empty): each core it
// covers as "socket P[core C[hwt H]]" (logical numbers), then a map of the machine, one
// bracket per socket, one field per core, one character per hardware thread (B: bound):
// "socket 0[core 1[hwt 0-1]]: [../BB][../..]".
std::string describe_binding(const hvd::topology::Machine &machine, const std::vector<int> &cpus);

}  // namespace hvdrun
