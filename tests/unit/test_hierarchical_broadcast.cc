// SPDX-License-Identifier: Apache-2.0
// The hierarchical broadcast (collectives/hierarchical/) on N ranks as threads split into
// "hosts" (host_cluster.h), and the dispatcher must pick it. Every dtype at small sizes (by
// one leader per host) and large ones (in shares where every host runs two ranks or more),
// from every rank as root, against the root's values; on host_layouts() (even and uneven
// hosts, a host's ranks contiguous or apart). Also the table's choice by size.
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

#include <string>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/collectives.h"
#include "collectives/hierarchy.h"
#include "common/dtype.h"
#include "host_cluster.h"
#include "host_layout_tests.h"
#include "rank_threads.h"

namespace {

using hvd::collectives::Comm;
using namespace rank_threads;

struct Case {
    int32_t dtype;
    size_t count;
    int32_t root;
};

double value(int32_t root, size_t i, int32_t dtype) {
    return static_cast<double>(input_value(root, i, dtype, HVD_OP_MAX));
}

void check_cases(const HostLayout &layout, size_t single_copy_from) {
    HostCluster c(layout.host_of, single_copy_from, layout.places);
    const int32_t n = c.world.size();
    std::vector<Case> cases;
    int32_t root = 0;
    for (int32_t dtype : kAllDtypes)
        for (size_t count : {size_t{1}, size_t{7}, size_t{1001}})
            cases.push_back({dtype, count, root++ % n});
    // Above broadcast_tree_max_bytes(): in shares, from every root.
    const size_t large = hvd::collectives::broadcast_tree_max_bytes() / 4 * 3 + 12345;
    for (int32_t r = 0; r < n; ++r)
        cases.push_back({r % 2 == 0 ? HVD_DTYPE_FLOAT32 : HVD_DTYPE_INT32, large, r});
    std::vector<std::vector<std::vector<uint8_t>>> bufs(n);
    for (int32_t r = 0; r < n; ++r)
        for (const Case &k : cases) {
            std::vector<uint8_t> b(k.count * hvd::dtype_size(k.dtype), uint8_t{0xA5});
            if (r == k.root)
                for (size_t i = 0; i < k.count; ++i)
                    store(b.data(), i, k.dtype, value(r, i, k.dtype));
            bufs[r].push_back(std::move(b));
        }
    std::vector<std::string> chosen(n);
    assert_all_ok(run_ranks(c.world, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        comm.hierarchy = &c.hierarchies[r];
        const Case &cs = cases[k];
        const size_t bytes = cs.count * hvd::dtype_size(cs.dtype);
        const std::string name = chosen_name(hvd::collectives::broadcast_algorithms(), comm, bytes);
        if (chosen[r].empty() || name != "hierarchical broadcast") chosen[r] = name;  // every call
        return hvd::collectives::broadcast(comm, bufs[r][k].data(), bytes, cs.root);
    }));
    for (int32_t r = 0; r < n; ++r)
        assert_string_equal(chosen[r].c_str(), "hierarchical broadcast");
    for (size_t k = 0; k < cases.size(); ++k) {
        const Case &cs = cases[k];
        for (int32_t r = 0; r < n; ++r)
            for (size_t i = 0; i < cs.count; ++i) {
                double got = load(bufs[r][k].data(), i, cs.dtype);
                double want = value(cs.root, i, cs.dtype);
                if (got != want)
                    fail_msg(
                        "hosts %s%s: %s count %zu from rank %d: rank %d element %zu is %g, "
                        "want %g",
                        layout_name(layout.host_of, layout.places).c_str(),
                        single_copy_from > 0 ? " (single copy)" : "", hvd::dtype_name(cs.dtype),
                        cs.count, cs.root, r, i, got, want);
            }
    }
}

void test_table_choice_by_size(void **) {
    hvd::collectives::Hierarchy h;
    h.broadcast_min_bytes = 1 << 20;
    expect_choices(hvd::collectives::broadcast_algorithms(), h,
                   {{8, "binomial tree broadcast"}, {1 << 20, "hierarchical broadcast"}});
    h.broadcast_min_bytes = hvd::collectives::kHierarchyOff;
    expect_choices(hvd::collectives::broadcast_algorithms(), h,
                   {{size_t{1} << 30, "chain broadcast"}});
}

}  // namespace

int main() {
    return rank_threads::run_host_layout_tests(test_table_choice_by_size, check_cases);
}
