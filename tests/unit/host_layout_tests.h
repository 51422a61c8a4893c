// SPDX-License-Identifier: Apache-2.0
// What the tests of the hierarchical allgather and broadcast share beside host_cluster.h: the
// check of an algorithm table's choice by size, and their main(): that check, then the
// collective's cases on every host layout, once with the hosts' groups staging through their
// slots and once reading by single copy. Include after cmocka's header.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/hierarchy.h"
#include "host_cluster.h"

namespace rank_threads {

// The single-copy minimum of the second pass: the small cases still go through the slots.
constexpr size_t kLayoutSingleCopyFrom = 8192;

// Fails unless `table` picks, on 4 ranks with hierarchy h, each named algorithm for its size.
template <typename Run>
void expect_choices(const std::vector<hvd::collectives::Algorithm<Run>> &table,
                    const hvd::collectives::Hierarchy &h,
                    const std::vector<std::pair<size_t, const char *>> &expected) {
    hvd::collectives::Comm comm;
    comm.members = {0, 1, 2, 3};
    comm.hierarchy = &h;
    for (const auto &[bytes, name] : expected) {
        const std::string got = chosen_name(table, comm, bytes);
        if (got != name)
            fail_msg("%zu bytes: the table picks %s, want %s", bytes, got.c_str(), name);
    }
}

// A collective's cases on a layout (host_cluster.h's HostCluster with the same
// single_copy_from).
using LayoutCheck = void (*)(const HostLayout &layout, size_t single_copy_from);

inline LayoutCheck g_layout_check = nullptr;

inline void test_host_layouts(void **) {
    for (const HostLayout &layout : host_layouts())
        g_layout_check(layout, 0);
}

inline void test_host_layouts_single_copy(void **) {
    for (const HostLayout &layout : host_layouts())
        g_layout_check(layout, kLayoutSingleCopyFrom);
}

// main() of such a test: table_choice, then `check` on every layout, both ways.
inline int run_host_layout_tests(CMUnitTestFunction table_choice, LayoutCheck check) {
    g_layout_check = check;
    const struct CMUnitTest tests[] = {
        {"test_table_choice_by_size", table_choice, nullptr, nullptr, nullptr},
        cmocka_unit_test(test_host_layouts),
        cmocka_unit_test(test_host_layouts_single_copy),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}

}  // namespace rank_threads
