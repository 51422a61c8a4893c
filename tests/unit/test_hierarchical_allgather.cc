// SPDX-License-Identifier: Apache-2.0
// The hierarchical allgather (collectives/hierarchical/) on N ranks as threads split into
// "hosts" (host_cluster.h), and the dispatcher must pick it. Every dtype, rows of 3 elements
// in ragged numbers per rank (none on some ranks), a large case of many slot rounds, and the
// in-place form (the input at its place in the output), against references built element by
// element; on host_layouts() (even and uneven hosts, a host's ranks contiguous or apart). Also the
// table's choice by size.
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

#include <cstring>
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

constexpr size_t kRowElems = 3;

struct Case {
    int32_t dtype;
    std::vector<size_t> rows;  // per rank
    bool in_place;
};

// Rank r's element i of a case: distinct across ranks and positions, exact in every dtype.
double value(int32_t r, size_t i, int32_t dtype) {
    return static_cast<double>(input_value(r, i, dtype, HVD_OP_MAX));
}

void check_cases(const HostLayout &layout, size_t single_copy_from) {
    HostCluster c(layout.host_of, single_copy_from, layout.places);
    const int32_t n = c.world.size();
    std::vector<Case> cases;
    for (int32_t dtype : kAllDtypes)
        for (size_t pattern = 0; pattern < 4; ++pattern) {
            std::vector<size_t> rows(n);
            for (int32_t r = 0; r < n; ++r)
                rows[r] = (static_cast<size_t>(r) * 3 + pattern * 5) % 7;  // 0 to 6 rows
            cases.push_back({dtype, rows, pattern % 2 == 1});
        }
    std::vector<size_t> large(n);
    for (int32_t r = 0; r < n; ++r)
        large[r] = 20000 + static_cast<size_t>(r) * 1001;  // many slot rounds per share
    cases.push_back({HVD_DTYPE_FLOAT32, large, false});
    cases.push_back({HVD_DTYPE_INT64, large, true});
    std::vector<std::vector<std::vector<uint8_t>>> ins(n), outs(n);
    for (int32_t r = 0; r < n; ++r)
        for (const Case &k : cases) {
            const size_t esize = hvd::dtype_size(k.dtype);
            size_t total = 0;
            for (size_t x : k.rows)
                total += x * kRowElems;
            std::vector<uint8_t> in(k.rows[r] * kRowElems * esize);
            for (size_t i = 0; i < k.rows[r] * kRowElems; ++i)
                store(in.data(), i, k.dtype, value(r, i, k.dtype));
            outs[r].emplace_back(total * esize, uint8_t{0xA5});
            ins[r].push_back(std::move(in));
        }
    std::vector<std::string> chosen(n);
    assert_all_ok(run_ranks(c.world, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        comm.hierarchy = &c.hierarchies[r];
        const Case &cs = cases[k];
        const size_t esize = hvd::dtype_size(cs.dtype);
        std::vector<size_t> bytes(n);
        size_t at = 0, total = 0;
        for (int32_t m = 0; m < n; ++m) {
            bytes[m] = cs.rows[m] * kRowElems * esize;
            if (m < r) at += bytes[m];
            total += bytes[m];
        }
        const std::string name =
            chosen_name(hvd::collectives::allgatherv_algorithms(), comm, total);
        if (chosen[r].empty() || name != "hierarchical allgatherv") chosen[r] = name;  // every call
        uint8_t *out = outs[r][k].data();
        const uint8_t *in = ins[r][k].data();
        if (cs.in_place) {
            if (bytes[r] > 0) std::memcpy(out + at, in, bytes[r]);
            in = out + at;
        }
        return hvd::collectives::allgatherv(comm, in, out, bytes);
    }));
    for (int32_t r = 0; r < n; ++r)
        assert_string_equal(chosen[r].c_str(), "hierarchical allgatherv");
    for (size_t k = 0; k < cases.size(); ++k) {
        const Case &cs = cases[k];
        for (int32_t r = 0; r < n; ++r) {
            size_t at = 0;
            for (int32_t from = 0; from < n; ++from)
                for (size_t i = 0; i < cs.rows[from] * kRowElems; ++i, ++at) {
                    double got = load(outs[r][k].data(), at, cs.dtype);
                    double want = value(from, i, cs.dtype);
                    if (got != want)
                        fail_msg(
                            "hosts %s%s: %s case %zu%s: rank %d element %zu (rank %d's %zu) "
                            "is %g, want %g",
                            layout_name(layout.host_of, layout.places).c_str(),
                            single_copy_from > 0 ? " (single copy)" : "", hvd::dtype_name(cs.dtype),
                            k, cs.in_place ? " in place" : "", r, at, from, i, got, want);
                }
        }
    }
}

void test_table_choice_by_size(void **) {
    hvd::collectives::Hierarchy h;
    h.allgather_min_bytes = 1 << 20;
    h.allgather_max_bytes = 4 << 20;
    expect_choices(hvd::collectives::allgatherv_algorithms(), h,
                   {{8, "ring allgatherv"},
                    {1 << 20, "hierarchical allgatherv"},
                    {4 << 20, "hierarchical allgatherv"},
                    {(4 << 20) + 1, "ring allgatherv"}});
    h.allgather_min_bytes = hvd::collectives::kHierarchyOff;
    expect_choices(hvd::collectives::allgatherv_algorithms(), h,
                   {{8, "ring allgatherv"}, {size_t{1} << 30, "ring allgatherv"}});
}

}  // namespace

int main() {
    return rank_threads::run_host_layout_tests(test_table_choice_by_size, check_cases);
}
