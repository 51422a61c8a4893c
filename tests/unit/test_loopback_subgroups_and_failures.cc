// SPDX-License-Identifier: Apache-2.0
// Collectives over the in-process loopback transport in the cases its all-ranks suites
// (test_collectives*_over_loopback) do not reach: a group that is a permuted subset of the
// hub's ranks, and a member that aborts mid-collective, which must end the others' wait
// promptly with HVD_ERR_PEER_FAILED. Rank threads only record what they saw; every assertion
// runs on the main thread. Every wait is bounded.
#include <chrono>
#include <thread>
#include <vector>

#include "rank_threads.h"

namespace {

using namespace rank_threads;
using Clock = std::chrono::steady_clock;
namespace c = hvd::collectives;

int64_t ms_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// Member m's element i of the subgroup's sums: small integers, exact in int32.
int32_t element(int32_t m, size_t i) {
    return static_cast<int32_t>((i * 7 + static_cast<size_t>(m) * 5) % 11) - 5;
}

// Members {3, 1, 0} of a 4-rank hub (rank 2 stays out): tags carry global ranks, indices are
// group positions. Recursive doubling then the ring on the same buffers, then a chain
// broadcast from member 1.
void test_collectives_on_a_permuted_subgroup(void **) {
    World w(4, 0, kTestSlotBytes, Backend::kLoopback);
    const std::vector<int32_t> members = {3, 1, 0};
    const size_t count = 777;
    std::vector<std::vector<int32_t>> sums(3, std::vector<int32_t>(count));
    std::vector<std::vector<uint8_t>> bcast(3, std::vector<uint8_t>(5000, 0));
    for (int32_t m = 0; m < 3; ++m)
        for (size_t i = 0; i < count; ++i)
            sums[m][i] = element(m, i);
    for (size_t j = 0; j < bcast[1].size(); ++j)
        bcast[1][j] = static_cast<uint8_t>(j * 11);
    std::vector<hvd_status_t> st(3, HVD_OK);
    std::vector<std::thread> threads;
    for (int32_t m = 0; m < 3; ++m)
        threads.emplace_back([&, m] {
            Comm comm = make_comm(w, members[m], 1);
            comm.members = members;
            comm.my_index = m;
            comm.set_id = 9;
            for (uint32_t seq : {1u, 2u, 3u}) {
                comm.seq = seq;
                if (seq == 1)
                    st[m] = c::allreduce_recursive_doubling(comm, sums[m].data(), count,
                                                            HVD_DTYPE_INT32, HVD_OP_SUM);
                else if (seq == 2)
                    st[m] = c::allreduce_ring(comm, sums[m].data(), count, HVD_DTYPE_INT32,
                                              HVD_OP_SUM, 64);
                else
                    st[m] = c::broadcast_chain(comm, bcast[m].data(), bcast[m].size(), 1, 700);
                if (st[m] != HVD_OK) return;
            }
        });
    for (auto &t : threads)
        t.join();
    assert_all_ok(st);
    for (int32_t m = 0; m < 3; ++m) {
        for (size_t i = 0; i < count; ++i) {
            // Two sums in a row: the second adds three copies of the first.
            int32_t want = 3 * (element(0, i) + element(1, i) + element(2, i));
            if (sums[m][i] != want)
                fail_msg("member %d element %zu: %d, want %d", m, i, sums[m][i], want);
        }
        assert_memory_equal(bcast[m].data(), bcast[1].data(), bcast[1].size());
    }
}

// Ranks 0 and 1 run a collective that needs rank 2, which aborts its transport instead: both
// fail with HVD_ERR_PEER_FAILED long before their deadline.
void test_collective_fails_when_a_member_aborts(void **) {
    for (int which = 0; which < 4; ++which) {
        World w(3, 0, kTestSlotBytes, Backend::kLoopback);
        std::vector<std::vector<float>> bufs(3, std::vector<float>(3000, 1.0f));
        std::vector<std::vector<size_t>> a2a(3, std::vector<size_t>(3, 400));
        std::vector<std::vector<float>> outs(3, std::vector<float>(300));
        auto t0 = Clock::now();
        std::vector<hvd_status_t> st = run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
            if (r == 2) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                comm.transport->abort_all(HVD_ERR_ABORTED);
                return HVD_ERR_ABORTED;
            }
            float *b = bufs[r].data();
            switch (which) {
                case 0:
                    return c::allreduce_ring(comm, b, 3000, HVD_DTYPE_FLOAT32, HVD_OP_SUM);
                case 1:
                    return c::allreduce_recursive_doubling(comm, b, 3000, HVD_DTYPE_FLOAT32,
                                                           HVD_OP_SUM);
                case 2:
                    return c::broadcast_binomial_tree(comm, b, 12000, 2);
                default:
                    return c::alltoallv(comm, b, a2a[r], outs[r].data(), a2a[r]);
            }
        });
        int64_t took = ms_since(t0);
        if (st[0] != HVD_ERR_PEER_FAILED || st[1] != HVD_ERR_PEER_FAILED)
            fail_msg("collective %d: statuses %d %d", which, static_cast<int>(st[0]),
                     static_cast<int>(st[1]));
        assert_true(took < 10000);
    }
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_on_a_permuted_subgroup),
        cmocka_unit_test(test_collective_fails_when_a_member_aborts),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
