// SPDX-License-Identifier: Apache-2.0
// Loading this host's topology through hwloc and reading it into a Machine. hwloc honours
// HWLOC_XMLFILE and HWLOC_SYNTHETIC (a made-up machine, e.g. "pack:2 numa:2 core:4 pu:1"),
// which the tests use for machines this one is not. Header-only: libhvd and hvdrun both use it.
#pragma once

#include <hwloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include "topology/machine.h"

namespace hvd::topology {

// The OS numbers in an hwloc CPU set, ascending.
inline std::vector<int> cpus_of(hwloc_const_bitmap_t set) {
    std::vector<int> cpus;
    if (set == nullptr || hwloc_bitmap_iszero(set)) return cpus;
    for (int c = hwloc_bitmap_first(set); c >= 0; c = hwloc_bitmap_next(set, c))
        cpus.push_back(c);
    return cpus;
}

// An initialised and loaded topology, with the NICs and GPUs on the PCI buses when `with_io`
// (hwloc's "important" I/O objects; none where its PCI discovery is absent). nullptr with
// *err saying what failed; the caller destroys it with hwloc_topology_destroy.
inline hwloc_topology_t load_topology(bool with_io, std::string *err) {
    hwloc_topology_t topo = nullptr;
    if (hwloc_topology_init(&topo) != 0) {
        *err = "hwloc_topology_init failed";
        return nullptr;
    }
    if (with_io) hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        *err = "hwloc_topology_load failed (HWLOC_XMLFILE or HWLOC_SYNTHETIC malformed?)";
        hwloc_topology_destroy(topo);
        return nullptr;
    }
    return topo;
}

namespace detail {

inline std::vector<Place> read_places(hwloc_topology_t topo, hwloc_obj_type_t type) {
    std::vector<Place> places;
    int n = hwloc_get_nbobjs_by_type(topo, type);
    for (int i = 0; i < n; ++i) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(topo, type, static_cast<unsigned>(i));
        Place p;
        p.index = static_cast<int>(obj->logical_index);
        p.os_index = obj->os_index == HWLOC_UNKNOWN_INDEX ? -1 : static_cast<int>(obj->os_index);
        p.cpus = cpus_of(obj->cpuset);
        places.push_back(std::move(p));
    }
    return places;
}

inline hwloc_obj_t pci_ancestor(hwloc_obj_t obj) {
    while (obj != nullptr && obj->type != HWLOC_OBJ_PCI_DEVICE)
        obj = obj->parent;
    return obj;
}

inline std::string pci_bus_id(hwloc_obj_t pci) {
    char id[32];
    std::snprintf(id, sizeof id, "%04x:%02x:%02x.%x", pci->attr->pcidev.domain,
                  pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
    return id;
}

inline bool has_device(const std::vector<Device> &devices, DeviceKind kind,
                       const std::string &bus_id) {
    for (const Device &d : devices)
        if (d.kind == kind && d.pci_bus_id == bus_id) return true;
    return false;
}

// NICs (network and OpenFabrics OS devices) and GPUs (GPU and co-processor OS devices, one per
// PCI device, and 3D controllers that have none) on a PCI bus.
inline std::vector<Device> read_devices(hwloc_topology_t topo) {
    std::vector<Device> devices;
    for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os != nullptr;
         os = hwloc_get_next_osdev(topo, os)) {
        hwloc_obj_osdev_type_t t = os->attr->osdev.type;
        bool nic = t == HWLOC_OBJ_OSDEV_NETWORK || t == HWLOC_OBJ_OSDEV_OPENFABRICS;
        bool gpu = t == HWLOC_OBJ_OSDEV_GPU || t == HWLOC_OBJ_OSDEV_COPROC;
        hwloc_obj_t pci = pci_ancestor(os);
        if ((!nic && !gpu) || pci == nullptr) continue;
        Device d;
        d.kind = nic ? DeviceKind::kNic : DeviceKind::kGpu;
        d.pci_bus_id = pci_bus_id(pci);
        if (gpu && has_device(devices, d.kind, d.pci_bus_id)) continue;
        d.name = os->name != nullptr ? os->name : d.pci_bus_id;
        d.cpus = cpus_of(hwloc_get_non_io_ancestor_obj(topo, os)->cpuset);
        devices.push_back(std::move(d));
    }
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr;
         pci = hwloc_get_next_pcidev(topo, pci)) {
        constexpr unsigned kPci3dController = 0x0302;
        if (pci->attr->pcidev.class_id != kPci3dController) continue;
        Device d;
        d.kind = DeviceKind::kGpu;
        d.pci_bus_id = pci_bus_id(pci);
        if (has_device(devices, d.kind, d.pci_bus_id)) continue;
        d.name = d.pci_bus_id;
        d.cpus = cpus_of(hwloc_get_non_io_ancestor_obj(topo, pci)->cpuset);
        devices.push_back(std::move(d));
    }
    return devices;
}

}  // namespace detail

// The loaded topology as a Machine.
inline Machine read_machine(hwloc_topology_t topo) {
    Machine m;
    m.packages = detail::read_places(topo, HWLOC_OBJ_PACKAGE);
    m.numa_nodes = detail::read_places(topo, HWLOC_OBJ_NUMANODE);
    m.cores = detail::read_places(topo, HWLOC_OBJ_CORE);
    if (m.cores.empty()) m.cores = detail::read_places(topo, HWLOC_OBJ_PU);
    Place whole;
    whole.cpus = cpus_of(hwloc_get_root_obj(topo)->cpuset);
    if (m.packages.empty()) m.packages.push_back(whole);
    if (m.numa_nodes.empty()) m.numa_nodes.push_back(whole);
    m.io_discovered = hwloc_get_next_pcidev(topo, nullptr) != nullptr;
    m.devices = detail::read_devices(topo);
    return m;
}

}  // namespace hvd::topology
