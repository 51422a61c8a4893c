// SPDX-License-Identifier: Apache-2.0
// hvdrun's --map-by / --bind-to placement and --report-bindings text on machines hwloc makes
// up (synthetic topologies: several sockets and NUMA nodes this host does not have), and the
// parsing of the two options. End to end (real pinning, read back from /proc) the launcher
// is tested by hvdrun_cases.sh (bind, bind_synthetic).
#include "../unit/cmocka_prelude.h"

#include <string>
#include <vector>

#include "binding_policy.h"
#include "cpu_binding.h"
#include "options.h"
#include "placement.h"
#include "topology/hwloc_reader.h"

using namespace hvdrun;
using hvd::topology::Machine;

namespace {

using Cpus = std::vector<std::vector<int>>;

Machine synthetic(const char *description) {
    hwloc_topology_t topo = nullptr;
    assert_int_equal(hwloc_topology_init(&topo), 0);
    assert_int_equal(hwloc_topology_set_synthetic(topo, description), 0);
    assert_int_equal(hwloc_topology_load(topo), 0);
    Machine m = hvd::topology::read_machine(topo);
    hwloc_topology_destroy(topo);
    return m;
}

BindPolicy policy(const char *map_by, const char *bind_to) {
    BindPolicy p;
    assert_true(parse_map_by(map_by, &p));
    assert_true(parse_bind_to(bind_to, &p));
    return p;
}

// Places ranks 0..n-1 and expects success.
Cpus place(const Machine &m, const BindPolicy &p, int n) {
    std::vector<int> ranks;
    for (int r = 0; r < n; ++r)
        ranks.push_back(r);
    Cpus cpus;
    std::string err;
    if (!place_local_ranks(m, p, ranks, &cpus, &err)) fail_msg("%s", err.c_str());
    return cpus;
}

std::string place_error(const Machine &m, const BindPolicy &p, std::vector<int> ranks) {
    Cpus cpus;
    std::string err;
    assert_false(place_local_ranks(m, p, ranks, &cpus, &err));
    return err;
}

void test_read_synthetic(void **) {
    Machine m = synthetic("pack:2 numa:2 core:4 pu:2");
    assert_int_equal(m.packages.size(), 2);
    assert_int_equal(m.numa_nodes.size(), 4);
    assert_int_equal(m.cores.size(), 16);
    assert_true(m.packages[1].cpus.front() == 16 && m.packages[1].cpus.back() == 31);
    assert_true((m.numa_nodes[2].cpus == std::vector<int>{16, 17, 18, 19, 20, 21, 22, 23}));
    assert_true((m.cores[5].cpus == std::vector<int>{10, 11}));
    assert_int_equal(m.numa_nodes[3].os_index, 3);
    assert_true(m.devices.empty());  // synthetic machines have no I/O
    // Without cores hwloc's PUs stand in for them; without packages the whole machine.
    Machine bare = synthetic("pu:3");
    assert_int_equal(bare.cores.size(), 3);
    assert_int_equal(bare.packages.size(), 1);
    assert_true((bare.packages[0].cpus == std::vector<int>{0, 1, 2}));
}

void test_map_and_bind_core(void **) {
    Machine m = synthetic("pack:2 numa:2 core:4 pu:2");
    // By slot or core: core after core.
    assert_true((place(m, policy("slot", "core"), 3) == Cpus{{0, 1}, {2, 3}, {4, 5}}));
    assert_true((place(m, policy("core", "core"), 2) == Cpus{{0, 1}, {2, 3}}));
    // By socket: round-robin over the sockets, each rank on the next core of its socket.
    assert_true(
        (place(m, policy("socket", "core"), 4) == Cpus{{0, 1}, {16, 17}, {2, 3}, {18, 19}}));
    // By NUMA node: the first cores of the four NUMA nodes, then the second ones.
    assert_true(
        (place(m, policy("numa", "core"), 5) == Cpus{{0, 1}, {8, 9}, {16, 17}, {24, 25}, {2, 3}}));
}

void test_bind_coarser(void **) {
    Machine m = synthetic("pack:2 numa:2 core:2 pu:1");
    std::vector<int> numa0{0, 1}, numa1{2, 3}, numa2{4, 5}, pack0{0, 1, 2, 3}, pack1{4, 5, 6, 7};
    // Core after core, each bound to the NUMA node or socket holding its core.
    assert_true((place(m, policy("core", "numa"), 3) == Cpus{numa0, numa0, numa1}));
    assert_true((place(m, policy("slot", "socket"), 5) == Cpus{pack0, pack0, pack0, pack0, pack1}));
    // By socket, bound to NUMA nodes: the first, then the second NUMA node of each socket.
    assert_true((place(m, policy("socket", "numa"), 3) == Cpus{numa0, numa2, numa1}));
    assert_true((place(m, policy("numa", "socket"), 3) == Cpus{pack0, pack0, pack1}));
    // --bind-to none binds nothing, whatever the mapping.
    assert_true((place(m, policy("socket", "none"), 2) == Cpus{{}, {}}));
}

void test_overload(void **) {
    Machine m = synthetic("pack:1 core:2 pu:2");
    assert_string_equal(
        place_error(m, policy("core", "core"), {4, 5, 6}).c_str(),
        "--bind-to core: ranks 4 and 6 would share core L#0 (CPUs 0-1), which has 1 core (3 "
        "ranks on this host); use --bind-to core:overload-allowed to allow it, or --bind-to "
        "none");
    assert_true(
        (place(m, policy("core", "core:overload-allowed"), 3) == Cpus{{0, 1}, {2, 3}, {0, 1}}));
    // A socket of 2 cores takes 2 ranks, not 3.
    assert_true((place(m, policy("slot", "socket"), 2) == Cpus{{0, 1, 2, 3}, {0, 1, 2, 3}}));
    std::string err = place_error(m, policy("slot", "socket"), {0, 1, 2});
    assert_true(err.find("ranks 0, 1 and 2 would share socket L#0 (CPUs 0-3), which has 2 cores") !=
                std::string::npos);
}

void test_report(void **) {
    Machine m = synthetic("pack:2 core:2 pu:2");
    assert_string_equal(describe_binding(m, {2, 3}).c_str(),
                        "socket 0[core 1[hwt 0-1]]: [../BB][../..]");
    assert_string_equal(describe_binding(m, {4, 6}).c_str(),
                        "socket 1[core 2[hwt 0]], socket 1[core 3[hwt 0]]: [../..][B./B.]");
    std::vector<RankLaunch> plan(2);
    plan[0].rank = 0;
    plan[0].cpus = {0, 1};
    plan[1].rank = 1;
    std::vector<std::string> lines = binding_report(m, plan, "h", 42);
    assert_int_equal(lines.size(), 2);
    assert_string_equal(lines[0].c_str(),
                        "[h:42] MCW rank 0 bound to socket 0[core 0[hwt 0-1]]: [BB/..][../..]");
    assert_string_equal(lines[1].c_str(),
                        "[h:42] MCW rank 1 is not bound (or bound to all available processors)");
}

// Binding ranks needs their host's topology: a rank on another host is refused.
// Ranks on other hosts get no CPUs here (their host pins them, remote_binding.h), nor do
// they count among this host's: the local ranks are placed as if alone.
void test_remote_ranks_left_to_their_host(void **) {
    Machine m = synthetic("pack:1 core:2 pu:1");
    std::vector<Placement> ranks(3);
    for (int r = 0; r < 3; ++r)
        ranks[r].rank = r;
    ranks[1].host = "node-b";
    std::vector<RankLaunch> plan(3);
    for (int r = 0; r < 3; ++r)
        plan[r].rank = r;
    plan[1].remote = true;
    std::string err;
    assert_true(assign_cpus(m, policy("slot", "core"), ranks, &plan, &err));
    assert_true(plan[0].cpus == std::vector<int>{0});
    assert_true(plan[1].cpus.empty());
    assert_true(plan[2].cpus == std::vector<int>{1});
    std::vector<std::string> report = binding_report(m, plan, "node-a", 7);
    assert_int_equal(report.size(), 2);  // node-b reports rank 1
    assert_true(report[1].find("MCW rank 2 bound to") != std::string::npos);
}

void test_parse(void **) {
    BindPolicy p;
    assert_true(parse_bind_to("package", &p) && p.bind_to == Level::kSocket);
    assert_true(parse_bind_to("numa:overload-allowed", &p));
    assert_true(p.bind_to == Level::kNuma && p.overload_allowed);
    assert_true(parse_bind_to("none", &p) && p.bind_to == Level::kNone && !p.overload_allowed);
    assert_false(parse_bind_to("hwthread", &p));
    assert_false(parse_bind_to(":overload-allowed", &p));
    assert_false(parse_map_by("node", &p));
    assert_true(parse_map_by("numa", &p) && p.map_by == Level::kNuma);
    assert_string_equal(level_name(Level::kSlot), "slot");

    // --map-by alone binds to what it maps to, as mpirun; HVD_RUN_BIND_TO and --bind-to win.
    Options o;
    std::string err;
    assert_true(parse_options({"-np", "1", "--map-by", "socket", "--report-bindings", "prog"}, &o,
                              &err) == ParseOutcome::kRun);
    assert_true(o.map_given && o.report_bindings);
    assert_true(apply_bind_env(nullptr, &o, &err));
    assert_true(o.binding.bind_to == Level::kSocket);
    o = Options();
    assert_true(parse_options({"-np", "1", "--map-by=numa", "prog"}, &o, &err) ==
                ParseOutcome::kRun);
    assert_true(apply_bind_env("core", &o, &err));
    assert_true(o.binding.bind_to == Level::kCore && o.binding.map_by == Level::kNuma);
    o = Options();
    assert_true(parse_options({"-np", "1", "--map-by", "core", "--bind-to", "none", "prog"}, &o,
                              &err) == ParseOutcome::kRun);
    assert_true(apply_bind_env("numa", &o, &err));
    assert_true(o.binding.bind_to == Level::kNone);
    o = Options();
    assert_true(parse_options({"-np", "1", "prog"}, &o, &err) == ParseOutcome::kRun);
    assert_false(apply_bind_env("l3cache", &o, &err));
    assert_string_equal(err.c_str(),
                        "invalid HVD_RUN_BIND_TO value 'l3cache' (expected core, numa, socket "
                        "or none, optionally :overload-allowed)");
    assert_true(parse_options({"-np", "1", "--map-by", "board", "prog"}, &o, &err) ==
                ParseOutcome::kError);
    assert_string_equal(err.c_str(),
                        "invalid --map-by value 'board' (expected slot, core, numa or socket)");
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_synthetic),
        cmocka_unit_test(test_map_and_bind_core),
        cmocka_unit_test(test_bind_coarser),
        cmocka_unit_test(test_overload),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_remote_ranks_left_to_their_host),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
