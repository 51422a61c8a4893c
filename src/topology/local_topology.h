// SPDX-License-Identifier: Apache-2.0
// This host's topology as hwloc sees it (with its NICs and GPUs), loaded once per process on
// first use and kept: the machine does not change while a process runs, and every context of
// the process reads the same one. Also where this process runs on it, and the binding of
// memory to a NUMA node.
#pragma once

#include <cstddef>
#include <string>

#include "topology/machine.h"
#include "topology/rank_locality.h"

namespace hvd::topology {

// The machine, or nullptr when hwloc cannot load this host's topology (logged once).
const Machine *local_machine();

// This process's locality: its CPU binding (hvdrun --bind-to, mpirun, taskset) on the local
// machine; an empty locality (no NUMA node, no devices) without one.
RankLocality this_process_locality();

// Binds the pages of [addr, addr + bytes) to NUMA node `numa_node` (logical index), moving
// those already there where the kernel allows; the node is preferred, not strict (Linux's
// MPOL_PREFERRED): pages go elsewhere when it is full. True when done, or nothing to do (one NUMA
// node on the host, or numa_node < 0); false with *why when the OS refuses (no NUMA support,
// a restricted container, a topology that is not this machine's), which leaves the memory
// where it is: callers treat that as no failure.
bool bind_memory(void *addr, size_t bytes, int numa_node, std::string *why);

}  // namespace hvd::topology
