// SPDX-License-Identifier: Apache-2.0
// The shared-memory allreduce with its results scaled as they are stored (Average's 1 / size
// and a postscale): every dtype, 1 to 4 ranks as threads of one group, in place and out of
// place, at sizes of the one-shot, paired and pipelined paths, and several tensors as the
// pieces of one call. Every element is checked against a reference computed here: the exact
// sum, then Horovod's scaling (integers through float64, truncated toward zero; float32 and the
// 16-bit floats in float32; float64 in float64; bool unchanged by a nonzero factor).
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <cmath>
#include <vector>

#include "collectives/shm/shm_sync.h"
#include "common/dtype.h"
#include "host_cluster.h"
#include "rank_threads.h"

namespace {

using namespace rank_threads;

// The value a scaled sum must have, as stored in dtype and loaded back as a double.
double reference(int32_t n, size_t i, int32_t dtype, double factor) {
    const int64_t sum = expected_value(n, i, dtype, HVD_OP_SUM);
    double want = 0;
    switch (dtype) {
        case HVD_DTYPE_BOOL:
            return static_cast<double>(sum);
        case HVD_DTYPE_FLOAT64:
            want = static_cast<double>(sum) * factor;
            break;
        case HVD_DTYPE_FLOAT32:
        case HVD_DTYPE_FLOAT16:
        case HVD_DTYPE_BFLOAT16:
            want = static_cast<double>(static_cast<float>(sum) * static_cast<float>(factor));
            break;
        default:  // integers
            want = std::trunc(static_cast<double>(sum) * factor);
    }
    unsigned char cell[8];
    store(cell, 0, dtype, want);  // rounds to the dtype as a stored result is rounded
    return load(cell, 0, dtype);
}

// Element counts around the chunking's boundaries for a slot of `slot` elements.
std::vector<size_t> boundary_counts(size_t slot) {
    return {5, slot - 1, slot, slot + 1, 2 * slot - 1, 2 * slot + 1, 3 * slot + 7};
}

// Every rank's allreduce of `count` elements cut into `n_pieces` tensors, in place or from a
// separate input, scaled by factor: fails on the first element that differs from the
// reference, and unless all ranks agree bit for bit.
void check(World &w, int32_t dtype, size_t count, size_t n_pieces, bool in_place, double factor) {
    const int32_t n = w.size();
    const size_t esz = hvd::dtype_size(dtype);
    RankBuffers b = rank_buffers(n, count, dtype, HVD_OP_SUM);
    std::vector<std::vector<unsigned char>> &in = b.in, &out = b.out;
    assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
        comm.shm = w.shm[r].get();
        std::vector<hvd::collectives::Piece> pieces;
        for (size_t p = 0, first = 0; p < n_pieces; ++p) {
            const size_t last = count * (p + 1) / n_pieces;
            unsigned char *o = (in_place ? in[r] : out[r]).data() + first * esz;
            pieces.push_back({in[r].data() + first * esz, o, (last - first) * esz});
            first = last;
        }
        return hvd::collectives::allreduce_shm_pieces(comm, pieces.data(), pieces.size(), dtype,
                                                      HVD_OP_SUM, factor);
    }));
    const std::vector<std::vector<unsigned char>> &res = in_place ? in : out;
    for (size_t i = 0; i < count; ++i) {
        const double got = load(res[0].data(), i, dtype);
        const double want = reference(n, i, dtype, factor);
        if (got != want)
            fail_msg("n=%d dtype %d count %zu pieces %zu%s factor %g: element %zu is %g, want %g",
                     n, dtype, count, n_pieces, in_place ? "" : " (out of place)", factor, i, got,
                     want);
    }
    for (int32_t r = 1; r < n; ++r)
        assert_memory_equal(res[0].data(), res[r].data(), count * esz);
}

void check_ranks(int32_t n) {
    World w(n);
    // Average, and Average with a postscale of 2.5: fractions that truncate and round.
    const double factors[] = {1.0 / n, 2.5 / n};
    for (int32_t dtype : kAllDtypes) {
        for (size_t count : boundary_counts(kTestSlotBytes / hvd::dtype_size(dtype))) {
            for (double factor : factors) {
                check(w, dtype, count, 1, true, factor);
                check(w, dtype, count, 1, false, factor);
            }
            check(w, dtype, count, 3, count % 2 == 0, factors[0]);
        }
    }
}

void test_one_rank(void **) {
    check_ranks(1);
}
void test_two_ranks(void **) {
    check_ranks(2);
}
void test_three_ranks(void **) {
    check_ranks(3);
}
void test_four_ranks(void **) {
    check_ranks(4);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_three_ranks),
        cmocka_unit_test(test_four_ranks),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
