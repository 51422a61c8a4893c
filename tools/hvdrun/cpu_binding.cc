// SPDX-License-Identifier: Apache-2.0
#include "cpu_binding.h"

#include "placement.h"
#include "topology/hwloc_reader.h"

namespace hvdrun {

bool load_local_machine(hvd::topology::Machine *machine, std::string *err) {
    std::string why;
    hwloc_topology_t topo = hvd::topology::load_topology(false, &why);
    if (topo == nullptr) {
        *err = "cannot read this host's topology: " + why;
        return false;
    }
    // hvdrun's own affinity (taskset, a batch system's binding) bounds its ranks'.
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
    if (allowed != nullptr && hwloc_topology_is_thissystem(topo) &&
        hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS) == 0 &&
        !hwloc_bitmap_iszero(allowed))
        hwloc_topology_restrict(topo, allowed, 0);
    hwloc_bitmap_free(allowed);
    *machine = hvd::topology::read_machine(topo);
    hwloc_topology_destroy(topo);
    return true;
}

bool assign_cpus(const hvd::topology::Machine &machine, const BindPolicy &policy,
                 const std::vector<Placement> &ranks, std::vector<RankLaunch> *plan,
                 std::string *err) {
    if (policy.bind_to == Level::kNone) return true;
    std::vector<int> local;
    std::vector<size_t> where;
    for (size_t i = 0; i < ranks.size() && i < plan->size(); ++i) {
        if ((*plan)[i].remote) continue;  // bound on its own host (remote_binding.h)
        local.push_back(ranks[i].rank);
        where.push_back(i);
    }
    std::vector<std::vector<int>> cpus;
    if (!place_local_ranks(machine, policy, local, &cpus, err)) return false;
    for (size_t k = 0; k < where.size(); ++k)
        (*plan)[where[k]].cpus = cpus[k];
    return true;
}

std::vector<std::string> binding_report(const hvd::topology::Machine &machine,
                                        const std::vector<RankLaunch> &plan,
                                        const std::string &host, int pid) {
    std::vector<std::string> lines;
    for (const RankLaunch &launch : plan) {
        if (launch.remote) continue;  // its host reports it (remote_binding.h)
        std::string line =
            "[" + host + ":" + std::to_string(pid) + "] MCW rank " + std::to_string(launch.rank);
        line += launch.cpus.empty() ? " is not bound (or bound to all available processors)"
                                    : " bound to " + describe_binding(machine, launch.cpus);
        lines.push_back(line);
    }
    return lines;
}

}  // namespace hvdrun
