// SPDX-License-Identifier: Apache-2.0
// Where a rank sits on its host: the NUMA node and package its CPUs are in, and the NIC and
// GPU nearest to them, for placing its memory and, later, for choosing hierarchical
// algorithms. A pure function of a Machine and the rank's CPUs.
#pragma once

#include <string>
#include <vector>

#include "topology/machine.h"

namespace hvd::topology {

struct RankLocality {
    std::vector<int> cpus;   // the CPUs the rank may run on (its binding)
    int numa_node = -1;      // logical index of the NUMA node holding all of `cpus`; -1 when
                             // they span several (an unbound rank on a multi-node host)
    int numa_os_index = -1;  // that node's OS number (as numactl names it); -1 likewise
    int package = -1;        // logical index of the package holding all of `cpus`; -1 likewise
    std::string nic;         // the nearest NIC's name ("eth0", "mlx5_0"); "" when none is known
    std::string nic_pci_bus_id;
    std::string gpu_pci_bus_id;  // the nearest GPU's; "" when none is known
};

// The locality of a rank allowed to run on `cpus` (ascending; empty means every CPU of the
// machine). The nearest device is the first of its kind, in the machine's order, of: near
// the rank's NUMA node only, near some of the rank's CPUs (e.g. attached to the whole
// machine), in the rank's package, anywhere.
RankLocality locate(const Machine &machine, std::vector<int> cpus);

// "NUMA node 0 (OS 0), package 0, CPUs 0-3, NIC eth0 (0000:00:03.0), no GPU": for logs.
std::string describe(const RankLocality &locality);

}  // namespace hvd::topology
