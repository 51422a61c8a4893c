// SPDX-License-Identifier: Apache-2.0
#include "topology/rank_locality.h"

namespace hvd::topology {
namespace {

// The place among `places` holding every CPU of `cpus`, or nullptr.
const Place *holder(const std::vector<Place> &places, const std::vector<int> &cpus) {
    for (const Place &p : places)
        if (contains(p.cpus, cpus)) return &p;
    return nullptr;
}

// 0 near the rank's NUMA node only, 1 near some of its CPUs, 2 in its package, 3 elsewhere.
int distance(const Device &d, const std::vector<int> &cpus, const Place *numa,
             const Place *package) {
    if (numa != nullptr && contains(numa->cpus, d.cpus)) return 0;
    if (intersects(d.cpus, cpus)) return 1;
    if (package != nullptr && intersects(package->cpus, d.cpus)) return 2;
    return 3;
}

const Device *nearest(const Machine &m, DeviceKind kind, const std::vector<int> &cpus,
                      const Place *numa, const Place *package) {
    const Device *best = nullptr;
    int best_distance = 4;
    for (const Device &d : m.devices) {
        if (d.kind != kind) continue;
        int dist = distance(d, cpus, numa, package);
        if (dist < best_distance) {
            best = &d;
            best_distance = dist;
        }
    }
    return best;
}

}  // namespace

RankLocality locate(const Machine &machine, std::vector<int> cpus) {
    RankLocality loc;
    if (cpus.empty()) {
        for (const Place &core : machine.cores)
            cpus.insert(cpus.end(), core.cpus.begin(), core.cpus.end());
        std::sort(cpus.begin(), cpus.end());
    }
    loc.cpus = cpus;
    const Place *numa = holder(machine.numa_nodes, cpus);
    const Place *package = holder(machine.packages, cpus);
    if (numa != nullptr) {
        loc.numa_node = numa->index;
        loc.numa_os_index = numa->os_index;
    }
    if (package != nullptr) loc.package = package->index;
    if (const Device *nic = nearest(machine, DeviceKind::kNic, cpus, numa, package)) {
        loc.nic = nic->name;
        loc.nic_pci_bus_id = nic->pci_bus_id;
    }
    if (const Device *gpu = nearest(machine, DeviceKind::kGpu, cpus, numa, package))
        loc.gpu_pci_bus_id = gpu->pci_bus_id;
    return loc;
}

std::string describe(const RankLocality &l) {
    std::string text = l.numa_node < 0 ? std::string("several NUMA nodes")
                                       : "NUMA node " + std::to_string(l.numa_node) + " (OS " +
                                             std::to_string(l.numa_os_index) + ")";
    text += l.package < 0 ? ", several packages" : ", package " + std::to_string(l.package);
    text += ", CPUs " + cpu_list_text(l.cpus);
    text += l.nic.empty() ? ", no NIC" : ", NIC " + l.nic + " (" + l.nic_pci_bus_id + ")";
    text += l.gpu_pci_bus_id.empty() ? ", no GPU" : ", GPU " + l.gpu_pci_bus_id;
    return text;
}

}  // namespace hvd::topology
