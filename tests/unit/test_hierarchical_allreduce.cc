// SPDX-License-Identifier: Apache-2.0
// The hierarchical allreduce (collectives/hierarchical/) on N ranks as threads split into
// "hosts": each host gets its own shared-memory group and every rank the hierarchy
// make_hierarchy builds, and the dispatcher must pick the hierarchical algorithm. Every dtype x
// op x count (counts below, at and above the number of shares, uneven shares, many slot
// rounds) against references computed independently of libhvd; hosts of 2 and 3 ranks, 2 and
// 3 hosts, ranks of a host contiguous or interleaved, hosts of different sizes (a host of one
// rank among them), share holders chosen by place. Also the hierarchy's shape, the choice of
// share holders and the table's choice by size.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
// cmocka 1.1.5's header has no extern "C" guard of its own.
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/collectives.h"
#include "collectives/hierarchy.h"
#include "common/dtype.h"
#include "host_cluster.h"
#include "rank_threads.h"

namespace {

using hvd::collectives::Comm;
using hvd::collectives::Hierarchy;
using namespace rank_threads;

constexpr int32_t kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};

struct Case {
    int32_t dtype;
    int32_t op;
    size_t count;
};

void check_cases(const std::vector<std::string> &host_of,
                 const std::vector<hvd::collectives::RankPlace> &places = {}) {
    HostCluster c(host_of, 0, places);
    const int32_t n = c.world.size();
    std::vector<Case> cases;
    for (int32_t dtype : kAllDtypes)
        for (int32_t op : kOps)
            for (size_t count : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{1001}})
                cases.push_back({dtype, op, count});
    cases.push_back({HVD_DTYPE_FLOAT32, HVD_OP_SUM, 100003});  // many slot rounds per share
    std::vector<std::vector<std::vector<uint8_t>>> bufs(n);
    for (int32_t r = 0; r < n; ++r)
        for (const Case &k : cases) {
            std::vector<uint8_t> b(k.count * hvd::dtype_size(k.dtype));
            for (size_t i = 0; i < k.count; ++i)
                store(b.data(), i, k.dtype, static_cast<double>(input_value(r, i, k.dtype, k.op)));
            bufs[r].push_back(std::move(b));
        }
    std::vector<std::string> chosen(n);
    assert_all_ok(run_ranks(c.world, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        comm.hierarchy = &c.hierarchies[r];
        const Case &cs = cases[k];
        const auto *a = hvd::collectives::choose(hvd::collectives::allreduce_algorithms(), comm,
                                                 cs.count * hvd::dtype_size(cs.dtype),
                                                 hvd::collectives::Memory::kHost);
        if (a != nullptr && chosen[r].empty()) chosen[r] = a->name;
        return hvd::collectives::allreduce(comm, bufs[r][k].data(), cs.count, cs.dtype, cs.op);
    }));
    for (int32_t r = 0; r < n; ++r)
        assert_string_equal(chosen[r].c_str(), "hierarchical allreduce");
    for (size_t k = 0; k < cases.size(); ++k) {
        const Case &cs = cases[k];
        for (int32_t r = 0; r < n; ++r)
            for (size_t i = 0; i < cs.count; ++i) {
                double got = load(bufs[r][k].data(), i, cs.dtype);
                double want = static_cast<double>(expected_value(n, i, cs.dtype, cs.op));
                if (got != want)
                    fail_msg("%d ranks, %s %s count %zu: rank %d element %zu is %g, want %g", n,
                             hvd::dtype_name(cs.dtype), hvd::reduce_op_name(cs.op), cs.count, r, i,
                             got, want);
            }
    }
}

void test_two_hosts_of_two(void **) {
    check_cases({"a", "a", "b", "b"});
}

void test_three_hosts_of_two(void **) {
    check_cases({"a", "a", "b", "b", "c", "c"});
}

void test_two_hosts_of_three(void **) {
    check_cases({"a", "a", "a", "b", "b", "b"});
}

void test_interleaved_hosts(void **) {
    check_cases({"x", "y", "x", "y"});
}

void test_uneven_hosts(void **) {
    check_cases({"a", "a", "b"});            // a host of one rank: one share
    check_cases({"a", "a", "a", "b", "b"});  // local rank 2 of host a holds no share
    check_cases({"x", "y", "x", "z", "y"});  // 2 + 2 + 1, a host's ranks apart
    // Local ranks 0 and 2 of host a hold the shares (rank 2 has a NIC of its own), 1 none.
    check_cases({"a", "a", "a", "b", "b"}, {{"eth0", 0}, {"eth0", 0}, {"eth1", 1}, {}, {}});
    // Host x (ranks 0, 2, 4; one NIC): ranks 0 and 4, on NUMA nodes 0 and 1, hold.
    check_cases({"x", "y", "x", "y", "x"},
                {{"eth0", 0}, {"eth0", 1}, {"eth0", 0}, {"eth0", 0}, {"eth0", 1}});
}

void test_share_holders(void **) {
    using hvd::collectives::choose_share_holders;
    using hvd::collectives::RankPlace;
    using V = std::vector<int32_t>;
    // Nothing known, or all alike: the lowest local indices.
    assert_true((choose_share_holders({{}, {}, {}, {}}, 2) == V{0, 1}));
    assert_true((choose_share_holders({{"ib0", 0}, {"ib0", 0}, {"ib0", 0}}, 3) == V{0, 1, 2}));
    // Two NICs, ranks placed in blocks: one holder on each.
    const std::vector<RankPlace> blocks = {{"mlx5_0", 0}, {"mlx5_0", 0}, {"mlx5_0", 0},
                                           {"mlx5_1", 1}, {"mlx5_1", 1}, {"mlx5_1", 1}};
    assert_true((choose_share_holders(blocks, 2) == V{0, 3}));
    assert_true((choose_share_holders(blocks, 4) == V{0, 1, 3, 4}));
    assert_true((choose_share_holders(blocks, 1) == V{0}));
    // One NIC, two NUMA nodes: NUMA nodes in turn.
    assert_true(
        (choose_share_holders({{"eth0", 0}, {"eth0", 0}, {"eth0", 1}, {"eth0", 1}}, 2) == V{0, 2}));
    // NICs first, then NUMA nodes within each NIC's ranks.
    const std::vector<RankPlace> mixed = {{"a", 0}, {"a", 0}, {"a", 1}, {"b", 2}, {"b", 2}};
    assert_true((choose_share_holders(mixed, 2) == V{0, 3}));
    assert_true((choose_share_holders(mixed, 3) == V{0, 2, 3}));
    assert_true((choose_share_holders(mixed, 4) == V{0, 2, 3, 4}));
    // The hierarchy they make: host a's holders 0 and 2 (ranks 0, 2), host b's both.
    const auto by_host = hvd::collectives::ranks_by_host({"a", "a", "a", "b", "b"});
    const std::vector<RankPlace> places = {{"e0", 0}, {"e0", 0}, {"e1", 0}, {}, {}};
    Hierarchy h2 = hvd::collectives::make_hierarchy(by_host, 2, places);
    assert_true((h2.local_share == V{0, -1, 1}));
    assert_int_equal(h2.my_share(), 1);
    assert_true((h2.cross_members == V{2, 4}));
    assert_int_equal(h2.cross_index, 0);
    Hierarchy h1 = hvd::collectives::make_hierarchy(by_host, 1, places);
    assert_int_equal(h1.my_share(), -1);
    assert_true(h1.cross_members.empty());
    Hierarchy h3 = hvd::collectives::make_hierarchy(by_host, 3, places);
    assert_true((h3.local_share == V{0, 1}));
    assert_true((h3.cross_members == V{0, 3}));
    assert_int_equal(h3.cross_index, 1);
}

void test_hierarchy_shape(void **) {
    const auto by_host = hvd::collectives::ranks_by_host({"q", "p", "q", "p", "r", "r"});
    assert_int_equal(by_host.size(), 3);
    assert_true((by_host[0] == std::vector<int32_t>{0, 2}));  // hosts by their lowest rank
    assert_true((by_host[1] == std::vector<int32_t>{1, 3}));
    assert_true((by_host[2] == std::vector<int32_t>{4, 5}));
    assert_true(hvd::collectives::hierarchy_applies(by_host));
    Hierarchy h = hvd::collectives::make_hierarchy(by_host, 3);
    assert_true((h.local_members == std::vector<int32_t>{1, 3}));
    assert_int_equal(h.local_index, 1);
    assert_true((h.cross_members == std::vector<int32_t>{2, 3, 5}));
    assert_int_equal(h.cross_index, 1);
    assert_int_equal(h.min_local_size(), 2);
    // Uneven hosts: as many shares as the smallest host has ranks.
    const auto uneven = hvd::collectives::ranks_by_host({"a", "a", "a", "b", "b"});
    assert_true(hvd::collectives::hierarchy_applies(uneven));
    Hierarchy u = hvd::collectives::make_hierarchy(uneven, 2);
    assert_int_equal(u.min_local_size(), 2);
    assert_int_equal(u.local_index, 2);
    assert_int_equal(u.my_share(), -1);  // the host's first two ranks hold the shares
    assert_true(u.cross_members.empty());
    assert_true(
        hvd::collectives::hierarchy_applies(hvd::collectives::ranks_by_host({"a", "a", "b"})));
    // Where it does not apply: one host, every host of one rank.
    assert_false(hvd::collectives::hierarchy_applies(hvd::collectives::ranks_by_host({"a", "a"})));
    assert_false(hvd::collectives::hierarchy_applies(hvd::collectives::ranks_by_host({"a", "b"})));
    assert_false(
        hvd::collectives::hierarchy_applies(hvd::collectives::ranks_by_host({"a", "b", "c"})));
}

void test_table_choice_by_size(void **) {
    Hierarchy h;
    h.allreduce_min_bytes = 1 << 20;
    Comm comm;
    comm.members = {0, 1, 2, 3};
    comm.hierarchy = &h;
    const auto &t = hvd::collectives::allreduce_algorithms();
    auto name = [&](size_t bytes, hvd::collectives::Memory m) {
        const auto *a = hvd::collectives::choose(t, comm, bytes, m);
        return std::string(a != nullptr ? a->name : "none");
    };
    const auto host = hvd::collectives::Memory::kHost;
    assert_string_equal(name(8, host).c_str(), "recursive doubling allreduce");
    assert_string_equal(name(1 << 20, host).c_str(), "hierarchical allreduce");
    assert_string_equal(name(size_t{1} << 30, host).c_str(), "hierarchical allreduce");
    assert_string_equal(name(1 << 20, hvd::collectives::Memory::kDevice).c_str(), "none");
    comm.hierarchy = nullptr;
    assert_string_equal(name(size_t{1} << 30, host).c_str(), "ring allreduce");
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hierarchy_shape),    cmocka_unit_test(test_table_choice_by_size),
        cmocka_unit_test(test_two_hosts_of_two),   cmocka_unit_test(test_three_hosts_of_two),
        cmocka_unit_test(test_two_hosts_of_three), cmocka_unit_test(test_interleaved_hosts),
        cmocka_unit_test(test_uneven_hosts),       cmocka_unit_test(test_share_holders),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
