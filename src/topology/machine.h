// SPDX-License-Identifier: Apache-2.0
// A host's hardware as plain values: its packages (sockets), NUMA nodes and cores, each with
// the OS numbers of its processing units (PUs, hardware threads), and the NICs and GPUs on
// its PCI buses with the CPUs near each. Read from hwloc (topology/hwloc_reader.h);
// header-only, so that hvdrun, which links none of libhvd, shares it.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace hvd::topology {

// A package, NUMA node or core.
struct Place {
    int index = 0;          // hwloc's logical index among the places of its kind
    int os_index = -1;      // the OS's number (package id, NUMA node number); -1 unknown
    std::vector<int> cpus;  // OS numbers of its PUs, ascending
};

enum class DeviceKind { kNic, kGpu };

// A device on a PCI bus, from hwloc's I/O discovery.
struct Device {
    DeviceKind kind = DeviceKind::kNic;
    std::string name;        // the OS's name ("eth0", "mlx5_0", "card1"); the bus id if none
    std::string pci_bus_id;  // "0000:3b:00.0"
    std::vector<int> cpus;   // the PUs nearest to it (its host bridge's locality), ascending
};

struct Machine {
    std::vector<Place> packages;    // at least one (the whole machine when hwloc knows none)
    std::vector<Place> numa_nodes;  // at least one
    std::vector<Place> cores;       // the PUs themselves when hwloc knows no cores
    std::vector<Device> devices;    // in hwloc's order; empty without I/O discovery
    bool io_discovered = false;     // whether hwloc found PCI devices (its I/O discovery ran)
};

// Whether every CPU of `inner` is in `outer` (both ascending); false for an empty `inner`.
inline bool contains(const std::vector<int> &outer, const std::vector<int> &inner) {
    return !inner.empty() && std::includes(outer.begin(), outer.end(), inner.begin(), inner.end());
}

// Whether the two ascending CPU lists share a CPU.
inline bool intersects(const std::vector<int> &a, const std::vector<int> &b) {
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
        if (a[i] == b[j]) return true;
        a[i] < b[j] ? ++i : ++j;
    }
    return false;
}

// "0-3,8,10-11": the ascending CPU list as Linux writes it (Cpus_allowed_list).
inline std::string cpu_list_text(const std::vector<int> &cpus) {
    std::string text;
    for (size_t i = 0; i < cpus.size();) {
        size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
            ++j;
        text += (text.empty() ? "" : ",") + std::to_string(cpus[i]);
        if (j > i) text += "-" + std::to_string(cpus[j]);
        i = j + 1;
    }
    return text;
}

}  // namespace hvd::topology
