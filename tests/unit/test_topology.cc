// SPDX-License-Identifier: Apache-2.0
// The host topology through hwloc: a machine of two sockets with NICs and a GPU on their PCI
// buses (an hwloc XML topology), the locality a rank gets on it, this process's own locality
// (checked against the kernel's view), and binding memory to a NUMA node.
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "topology/hwloc_reader.h"
#include "topology/local_topology.h"
#include "topology/rank_locality.h"

using namespace hvd::topology;

namespace {

// Two packages of one NUMA node and two cores each: an InfiniBand HCA (mlx5_0) on package 0's
// bus, an Ethernet NIC (eth1) and a 3D controller (card1) on package 1's, and an Ethernet NIC
// (eth0) on a bus attached to the whole machine.
constexpr char kTwoSocketsXml[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
 <object type="Machine" os_index="0" cpuset="0x0000000f" nodeset="0x00000003">
  <object type="Package" os_index="0" cpuset="0x00000003" nodeset="0x00000001">
   <object type="NUMANode" os_index="0" cpuset="0x00000003" nodeset="0x00000001"/>
   <object type="Core" os_index="0" cpuset="0x00000001" nodeset="0x00000001">
    <object type="PU" os_index="0" cpuset="0x00000001" nodeset="0x00000001"/>
   </object>
   <object type="Core" os_index="1" cpuset="0x00000002" nodeset="0x00000001">
    <object type="PU" os_index="1" cpuset="0x00000002" nodeset="0x00000001"/>
   </object>
   <object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0000:[01-01]">
    <object type="PCIDev" pci_busid="0000:01:00.0" pci_type="0207 [15b3:1017] [15b3:0007] 00">
     <object type="OSDev" name="mlx5_0" osdev_type="3"/>
    </object>
   </object>
  </object>
  <object type="Package" os_index="1" cpuset="0x0000000c" nodeset="0x00000002">
   <object type="NUMANode" os_index="1" cpuset="0x0000000c" nodeset="0x00000002"/>
   <object type="Core" os_index="2" cpuset="0x00000004" nodeset="0x00000002">
    <object type="PU" os_index="2" cpuset="0x00000004" nodeset="0x00000002"/>
   </object>
   <object type="Core" os_index="3" cpuset="0x00000008" nodeset="0x00000002">
    <object type="PU" os_index="3" cpuset="0x00000008" nodeset="0x00000002"/>
   </object>
   <object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0000:[81-82]">
    <object type="PCIDev" pci_busid="0000:81:00.0" pci_type="0200 [8086:1572] [8086:0000] 01">
     <object type="OSDev" name="eth1" osdev_type="2"/>
    </object>
    <object type="PCIDev" pci_busid="0000:82:00.0" pci_type="0302 [10de:2335] [10de:18be] a1">
     <object type="OSDev" name="card1" osdev_type="1"/>
    </object>
   </object>
  </object>
  <object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0000:[00-00]">
   <object type="PCIDev" pci_busid="0000:00:03.0" pci_type="0200 [1af4:1041] [1af4:1041] 01">
    <object type="OSDev" name="eth0" osdev_type="2"/>
   </object>
  </object>
 </object>
</topology>
)";

// hwloc's XML import needs complete_cpuset and complete_nodeset beside cpuset and nodeset
// (equal on a machine without offline CPUs); added here to keep the text above short.
std::string with_complete_sets(std::string xml) {
    for (const std::string attr : {"cpuset", "nodeset"}) {
        const std::string key = " " + attr + "=\"";
        for (size_t at = xml.find(key); at != std::string::npos; at = xml.find(key, at + 1)) {
            size_t start = at + key.size();
            std::string value = xml.substr(start, xml.find('"', start) - start);
            xml.insert(start + value.size() + 1, " complete_" + attr + "=\"" + value + "\"");
        }
    }
    return xml;
}

Machine two_sockets() {
    const std::string xml = with_complete_sets(kTwoSocketsXml);
    hwloc_topology_t topo = nullptr;
    assert_int_equal(hwloc_topology_init(&topo), 0);
    assert_int_equal(
        hwloc_topology_set_xmlbuffer(topo, xml.c_str(), static_cast<int>(xml.size() + 1)), 0);
    assert_int_equal(hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT), 0);
    assert_int_equal(hwloc_topology_load(topo), 0);
    Machine m = read_machine(topo);
    hwloc_topology_destroy(topo);
    return m;
}

void test_read_devices(void **) {
    Machine m = two_sockets();
    assert_int_equal(m.packages.size(), 2);
    assert_int_equal(m.numa_nodes.size(), 2);
    assert_int_equal(m.cores.size(), 4);
    assert_true(m.io_discovered);
    assert_int_equal(m.devices.size(), 4);
    const char *names[] = {"mlx5_0", "eth1", "card1", "eth0"};
    const char *buses[] = {"0000:01:00.0", "0000:81:00.0", "0000:82:00.0", "0000:00:03.0"};
    std::vector<int> near[] = {{0, 1}, {2, 3}, {2, 3}, {0, 1, 2, 3}};
    for (size_t i = 0; i < 4; ++i) {
        assert_string_equal(m.devices[i].name.c_str(), names[i]);
        assert_string_equal(m.devices[i].pci_bus_id.c_str(), buses[i]);
        assert_true(m.devices[i].cpus == near[i]);
        assert_true(m.devices[i].kind == (i == 2 ? DeviceKind::kGpu : DeviceKind::kNic));
    }
}

void test_locality(void **) {
    Machine m = two_sockets();
    RankLocality a = locate(m, {1});
    assert_int_equal(a.numa_node, 0);
    assert_int_equal(a.numa_os_index, 0);
    assert_int_equal(a.package, 0);
    assert_string_equal(a.nic.c_str(), "mlx5_0");  // its own socket's HCA, not eth0
    assert_string_equal(a.gpu_pci_bus_id.c_str(), "0000:82:00.0");  // the only GPU
    RankLocality b = locate(m, {2, 3});
    assert_int_equal(b.numa_node, 1);
    assert_int_equal(b.package, 1);
    assert_string_equal(b.nic.c_str(), "eth1");
    assert_string_equal(b.nic_pci_bus_id.c_str(), "0000:81:00.0");
    assert_string_equal(describe(b).c_str(),
                        "NUMA node 1 (OS 1), package 1, CPUs 2-3, NIC eth1 (0000:81:00.0), GPU "
                        "0000:82:00.0");
    // Across both sockets (or unbound): no NUMA node; the first NIC near any of its CPUs.
    RankLocality c = locate(m, {});
    assert_true((c.cpus == std::vector<int>{0, 1, 2, 3}));
    assert_int_equal(c.numa_node, -1);
    assert_int_equal(c.package, -1);
    assert_string_equal(c.nic.c_str(), "mlx5_0");
    assert_string_equal(describe(c).c_str(),
                        "several NUMA nodes, several packages, CPUs 0-3, NIC mlx5_0 "
                        "(0000:01:00.0), GPU 0000:82:00.0");
    // A machine without I/O: no devices.
    Machine bare = m;
    bare.devices.clear();
    assert_string_equal(describe(locate(bare, {0})).c_str(),
                        "NUMA node 0 (OS 0), package 0, CPUs 0, no NIC, no GPU");
}

// This process on this host: its CPUs are the kernel's affinity list, its NUMA node the one
// sysfs lists for them, its NIC one the kernel knows.
void test_this_process(void **) {
    const Machine *m = local_machine();
    assert_non_null(m);
    assert_true((hvd_features() & HVD_FEATURE_HWLOC) != 0);
    RankLocality mine = this_process_locality();
    cpu_set_t set;
    CPU_ZERO(&set);
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    std::vector<int> allowed;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) allowed.push_back(c);
    assert_true(mine.cpus == allowed);
    if (access("/sys/devices/system/node/node1", F_OK) != 0) {  // one NUMA node: it holds all
        assert_int_equal(m->numa_nodes.size(), 1);
        assert_int_equal(mine.numa_node, 0);
    }
    if (!mine.nic.empty()) {
        assert_true(access(("/sys/class/net/" + mine.nic).c_str(), F_OK) == 0 ||
                    access(("/sys/class/infiniband/" + mine.nic).c_str(), F_OK) == 0);
    }
}

// Binding memory to this rank's NUMA node never fails where there is one node (nothing to
// do); elsewhere it succeeds or says why, and the memory stays usable either way.
void test_bind_memory(void **) {
    const size_t len = 1 << 20;
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    std::memset(p, 1, len);
    std::string why;
    const bool one_node = local_machine()->numa_nodes.size() == 1;
    bool ok = bind_memory(p, len, this_process_locality().numa_node, &why);
    assert_true(one_node ? ok && why.empty() : ok || !why.empty());
    assert_true(bind_memory(p, len, -1, &why));
    why.clear();
    ok = bind_memory(p, len, 99, &why);
    if (one_node)
        assert_true(ok);
    else
        assert_string_equal(why.c_str(), "no NUMA node 99");
    assert_int_equal(static_cast<unsigned char *>(p)[len - 1], 1);
    munmap(p, len);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_devices),
        cmocka_unit_test(test_locality),
        cmocka_unit_test(test_this_process),
        cmocka_unit_test(test_bind_memory),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
