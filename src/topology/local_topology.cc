// SPDX-License-Identifier: Apache-2.0
#include "topology/local_topology.h"

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/log.h"
#include "topology/hwloc_reader.h"

namespace hvd::topology {
namespace {

// The process's topology, loaded once and never destroyed: contexts on any thread may bind
// memory through it until the process exits (hwloc's queries and binding calls are
// thread-safe on a loaded topology).
struct Loaded {
    hwloc_topology_t topo = nullptr;
    Machine machine;
};

const Loaded *loaded() {
    static const Loaded *instance = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string why;
        hwloc_topology_t topo = load_topology(true, &why);
        if (topo == nullptr) {
            HVD_LOG(kWarning, -1, "host topology unknown: %s", why.c_str());
            return;
        }
        Loaded *l = new Loaded;
        l->topo = topo;
        l->machine = read_machine(topo);
        instance = l;
    });
    return instance;
}

}  // namespace

const Machine *local_machine() {
    const Loaded *l = loaded();
    return l != nullptr ? &l->machine : nullptr;
}

RankLocality this_process_locality() {
    const Loaded *l = loaded();
    if (l == nullptr) return RankLocality();
    std::vector<int> cpus;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set != nullptr && hwloc_topology_is_thissystem(l->topo) &&
        hwloc_get_cpubind(l->topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(l->topo));
        cpus = cpus_of(set);
    }
    hwloc_bitmap_free(set);
    return locate(l->machine, std::move(cpus));
}

bool bind_memory(void *addr, size_t bytes, int numa_node, std::string *why) {
    const Loaded *l = loaded();
    if (numa_node < 0 || bytes == 0 || (l != nullptr && l->machine.numa_nodes.size() < 2))
        return true;
    if (l == nullptr) {
        *why = "the host topology is unknown";
        return false;
    }
    hwloc_obj_t node =
        hwloc_get_obj_by_type(l->topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(numa_node));
    if (node == nullptr) {
        *why = "no NUMA node " + std::to_string(numa_node);
        return false;
    }
    const int flags = HWLOC_MEMBIND_BYNODESET;
    if (hwloc_set_area_membind(l->topo, addr, bytes, node->nodeset, HWLOC_MEMBIND_BIND,
                               flags | HWLOC_MEMBIND_MIGRATE) == 0 ||
        hwloc_set_area_membind(l->topo, addr, bytes, node->nodeset, HWLOC_MEMBIND_BIND, flags) == 0)
        return true;
    *why = std::string("hwloc_set_area_membind: ") + std::strerror(errno);
    return false;
}

}  // namespace hvd::topology
