// SPDX-License-Identifier: Apache-2.0
// The shared-memory allreduce at the sizes where its chunking changes: one shot (up to a slot),
// the paired chunks (above one slot, up to two: one chunk in each slot half, one hand-off) and
// the pipelined chunks (above two slots). Every dtype, 2 and 3 ranks as threads of one group,
// in place and out of place; every element checked against values computed without libhvd.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <cstring>
#include <vector>

#include "collectives/shm/shm_sync.h"
#include "common/dtype.h"
#include "host_cluster.h"
#include "rank_threads.h"

namespace {

using namespace rank_threads;

// Element counts around the chunking's boundaries for a slot of `slot` elements.
std::vector<size_t> boundary_counts(size_t slot) {
    return {slot - 1, slot, slot + 1, 2 * slot - 1, 2 * slot, 2 * slot + 1, 2 * slot + 3};
}

// Rank r's allreduce of `count` elements (in place, or from a separate input when !in_place)
// with every output element compared against expected_value; all ranks' outputs also agree
// bit for bit.
void check_sizes(int32_t n, int32_t op, bool in_place) {
    World w(n);
    for (int32_t dtype : kAllDtypes) {
        const size_t esz = hvd::dtype_size(dtype);
        for (size_t count : boundary_counts(kTestSlotBytes / esz)) {
            RankBuffers b = rank_buffers(n, count, dtype, op);
            std::vector<std::vector<unsigned char>> &in = b.in, &out = b.out;
            if (in_place) out = in;
            assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
                comm.shm = w.shm[r].get();
                if (in_place)
                    return hvd::collectives::allreduce_shm(comm, out[r].data(), count, dtype, op);
                hvd::collectives::Piece p{in[r].data(), out[r].data(), count * esz};
                return hvd::collectives::allreduce_shm_pieces(comm, &p, 1, dtype, op, 1.0);
            }));
            for (size_t i = 0; i < count; ++i) {
                double got = load(out[0].data(), i, dtype);
                double want = static_cast<double>(expected_value(n, i, dtype, op));
                if (got != want)
                    fail_msg("n=%d dtype %d op %d count %zu%s: element %zu is %g, want %g", n,
                             dtype, op, count, in_place ? "" : " (out of place)", i, got, want);
            }
            for (int32_t r = 1; r < n; ++r)
                assert_memory_equal(out[0].data(), out[r].data(), count * esz);
        }
    }
}

void test_two_ranks_in_place(void **) {
    check_sizes(2, HVD_OP_SUM, true);
}
void test_two_ranks_out_of_place(void **) {
    check_sizes(2, HVD_OP_MIN, false);
}
void test_three_ranks_in_place(void **) {
    check_sizes(3, HVD_OP_MAX, true);
}
void test_three_ranks_out_of_place(void **) {
    check_sizes(3, HVD_OP_SUM, false);
}

// Paired and pipelined allreduces back to back, with sizes alternating so that consecutive
// calls start on either slot half: a member must not stage into a half another still reads.
void test_paired_after_other_sizes(void **) {
    const int32_t n = 3;
    World w(n);
    const size_t slot = kTestSlotBytes / sizeof(int32_t);
    const size_t counts[] = {slot + 5, 3 * slot + 1, 2 * slot, 7, slot + 16, 2 * slot - 3};
    const size_t kCalls = 4 * (sizeof counts / sizeof counts[0]);
    std::vector<std::vector<int32_t>> bufs(n);
    assert_all_ok(run_ranks(w, kCalls, [&](int32_t r, size_t call, Comm &comm) {
        comm.shm = w.shm[r].get();
        const size_t count = counts[call % (sizeof counts / sizeof counts[0])];
        bufs[r].resize(count);
        for (size_t i = 0; i < count; ++i)
            bufs[r][i] = static_cast<int32_t>(i * 3 + call) * (r + 1);
        hvd_status_t s = hvd::collectives::allreduce_shm(comm, bufs[r].data(), count,
                                                         HVD_DTYPE_INT32, HVD_OP_SUM);
        for (size_t i = 0; i < count && s == HVD_OK; ++i)
            if (bufs[r][i] != static_cast<int32_t>(i * 3 + call) * 6) s = HVD_ERR_INTERNAL;
        return s;
    }));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_ranks_in_place),
        cmocka_unit_test(test_two_ranks_out_of_place),
        cmocka_unit_test(test_three_ranks_in_place),
        cmocka_unit_test(test_three_ranks_out_of_place),
        cmocka_unit_test(test_paired_after_other_sizes),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
