// SPDX-License-Identifier: Apache-2.0
// The shared-memory group on its own: segment checks, counters and slots, and the waits of the
// shared-memory collectives when a member is missing, late or the context aborts. Ranks are
// threads mapping the same segment, as processes of one host would.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/shm/shm_sync.h"
#include "common/error.h"
#include "rank_threads.h"
#include "shm/shm_group.h"

namespace {

using hvd::shm::Counter;
using hvd::shm::Group;
using namespace rank_threads;

// Runs f, which must throw hvd::Error; returns its status (HVD_OK if it did not throw).
template <typename F>
hvd_status_t thrown_status(F &&f) {
    try {
        f();
    } catch (const hvd::Error &e) {
        return e.status();
    }
    return HVD_OK;
}

hvd::shm::Settings with_slot(size_t slot_bytes) {
    hvd::shm::Settings s;
    s.slot_bytes = slot_bytes;
    return s;
}

void test_open_checks_the_segment(void **) {
    auto g = Group::create(3, 0, with_slot(8192));
    assert_int_equal(g->size(), 3);
    assert_int_equal(g->slot_bytes(), 8192);
    const std::string name = g->name();
    const uint64_t nonce = g->nonce();
    assert_int_equal(thrown_status([&] { Group::open(name, nonce ^ 1, 3, 1); }), HVD_ERR_TRANSPORT);
    assert_int_equal(thrown_status([&] { Group::open(name, nonce, 2, 1); }), HVD_ERR_TRANSPORT);
    assert_int_equal(thrown_status([&] { Group::open(name, nonce, 3, 3); }), HVD_ERR_INVALID_ARG);
    auto other = Group::open(name, nonce, 3, 2);
    assert_int_equal(other->slot_bytes(), 8192);
    g->unlink();  // mapped members keep the memory; the name is gone
    assert_int_equal(thrown_status([&] { Group::open(name, nonce, 3, 1); }), HVD_ERR_TRANSPORT);
    assert_int_equal(thrown_status([&] { Group::create(0, 0, with_slot(4096)); }),
                     HVD_ERR_INVALID_ARG);
    assert_int_equal(thrown_status([&] { Group::create(2, 0, with_slot(1000)); }),
                     HVD_ERR_INVALID_ARG);
}

// The creator's tunables travel in the header: a member's own environment cannot make it pick
// another algorithm than the others.
void test_settings_come_from_the_creator(void **) {
    hvd::shm::Settings mine = with_slot(8192);
    mine.one_shot_max_bytes = 123;
    mine.single_copy_min_bytes = 4567;
    mine.single_copy_max_bytes = 8910;
    auto a = Group::create(2, 0, mine);
    auto b = Group::open(a->name(), a->nonce(), 2, 1);
    a->unlink();
    assert_int_equal(b->slot_bytes(), 8192);
    assert_int_equal(b->one_shot_max_bytes(), 123);
    assert_false(b->single_copy(5000));  // off until enabled
    b->enable_single_copy(true);
    assert_true(b->single_copy(4567));
    assert_true(b->single_copy(8910));
    assert_false(b->single_copy(4566));
    assert_false(b->single_copy(8911));
}

// Members in different collectives (here: different seq) must not read each other's data as
// their own: both fail with HVD_ERR_INTERNAL instead.
void test_members_out_of_step_fail(void **) {
    World w(2);
    std::vector<std::vector<float>> bufs(2, std::vector<float>(3000, 1.0f));
    std::vector<hvd_status_t> status(2, HVD_OK);
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            Comm comm = make_comm(w, r, 1000 + static_cast<uint32_t>(r), 5000);
            comm.shm = w.shm[r].get();
            status[r] = hvd::collectives::allreduce(comm, bufs[r].data(), bufs[r].size(),
                                                    HVD_DTYPE_FLOAT32, HVD_OP_SUM);
        });
    for (auto &t : threads)
        t.join();
    assert_int_equal(status[0], HVD_ERR_INTERNAL);
    assert_int_equal(status[1], HVD_ERR_INTERNAL);
}

// Both mappings see the same bytes; halves alternate by round; a post is seen by a wait.
void test_slots_and_counters_are_shared(void **) {
    auto a = Group::create(2, 0, with_slot(4096));
    auto b = Group::open(a->name(), a->nonce(), 2, 1);
    a->unlink();
    assert_ptr_not_equal(a->slot(1, 1), a->slot(1, 2));
    assert_ptr_equal(a->slot(1, 1), a->slot(1, 3));
    assert_int_equal(reinterpret_cast<uintptr_t>(a->slot(0, 1)) % 4096, 0);
    std::memcpy(b->slot(1, 1), "hello", 6);
    assert_string_equal(a->slot(1, 1), "hello");
    hvd::Deadline soon = hvd::Deadline::after_ms(50);
    assert_int_equal(a->wait(1, Counter::kReady, 1, soon, nullptr), HVD_ERR_TIMED_OUT);
    b->post(Counter::kReady, 1);
    assert_int_equal(a->wait(1, Counter::kReady, 1, hvd::Deadline::after_ms(50), nullptr), HVD_OK);
    // Counters are independent, and a later round covers earlier ones.
    assert_int_equal(a->wait(1, Counter::kDone, 1, hvd::Deadline::after_ms(10), nullptr),
                     HVD_ERR_TIMED_OUT);
    b->post(Counter::kDone, 5);
    assert_int_equal(a->wait(1, Counter::kDone, 4, hvd::Deadline::after_ms(10), nullptr), HVD_OK);
}

Comm shm_comm(World &w, int32_t rank, int64_t deadline_ms) {
    Comm c = make_comm(w, rank, g_next_seq++, deadline_ms);
    c.shm = w.shm[rank].get();
    return c;
}

// Only rank 0 calls: it gives up at its deadline, naming no success.
void test_missing_member_times_out(void **) {
    World w(2);
    std::vector<float> buf(100000, 1.0f);
    Comm comm = shm_comm(w, 0, 200);
    auto start = std::chrono::steady_clock::now();
    assert_int_equal(hvd::collectives::allreduce_shm(comm, buf.data(), buf.size(),
                                                     HVD_DTYPE_FLOAT32, HVD_OP_SUM),
                     HVD_ERR_TIMED_OUT);
    auto waited = std::chrono::steady_clock::now() - start;
    assert_true(waited >= std::chrono::milliseconds(150));
    assert_true(waited < std::chrono::seconds(10));
}

// Another thread raises the context's abort flag: a member waiting for the root's chunk
// returns with the flag's status.
void test_abort_flag_ends_the_wait(void **) {
    World w(3);
    std::atomic<int32_t> abort_flag{0};
    std::vector<uint8_t> buf(100000, 7);
    Comm comm = shm_comm(w, 1, kDeadlineMs);
    comm.abort_status = &abort_flag;
    std::thread raiser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        abort_flag.store(HVD_ERR_PEER_FAILED);
    });
    hvd_status_t st = hvd::collectives::broadcast_shm(comm, buf.data(), buf.size(), 0);
    raiser.join();
    assert_int_equal(st, HVD_ERR_PEER_FAILED);
}

// With no spinning at all (an oversubscribed host) every wait sleeps on the futex and is woken
// by the poster; a member arriving late each time still gets exact results.
void test_sleeping_members_are_woken(void **) {
    World w(3);
    for (auto &g : w.shm)
        g->set_spin_policy(hvd::transport::SpinPolicy{std::chrono::microseconds(0), false});
    const size_t kCount = 5000;  // several chunks of the test slot size
    std::vector<std::vector<int32_t>> bufs(3, std::vector<int32_t>(kCount));
    std::vector<hvd_status_t> status = run_ranks(w, 20, [&](int32_t r, size_t call, Comm &comm) {
        comm.shm = w.shm[r].get();
        if (r == static_cast<int32_t>(call % 3))
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        for (size_t i = 0; i < kCount; ++i)
            bufs[r][i] = static_cast<int32_t>(i + call) * (r + 1);
        hvd_status_t s =
            hvd::collectives::allreduce(comm, bufs[r].data(), kCount, HVD_DTYPE_INT32, HVD_OP_SUM);
        for (size_t i = 0; i < kCount && s == HVD_OK; ++i)
            if (bufs[r][i] != static_cast<int32_t>(i + call) * 6) s = HVD_ERR_INTERNAL;
        return s;
    });
    assert_all_ok(status);
}

// Single copy (every block read straight from its owner's memory): broadcast from every root
// and ragged allgathers, in place and not, on 1..4 members; every byte checked.
void test_single_copy_moves_every_byte(void **) {
    for (int32_t n = 1; n <= 4; ++n) {
        World w(n, /*single_copy_from=*/1);
        for (auto &g : w.shm) {
            assert_true(g->probe_single_copy());
            g->enable_single_copy(true);
        }
        std::vector<size_t> bytes(n);
        for (int32_t r = 0; r < n; ++r)
            bytes[r] = r == 1 ? 0 : 100003 * static_cast<size_t>(r + 1);  // one empty block
        size_t total = 0;
        std::vector<size_t> offset(n);
        for (int32_t r = 0; r < n; ++r) {
            offset[r] = total;
            total += bytes[r];
        }
        auto byte_of = [](int32_t r, size_t j) { return static_cast<uint8_t>(r * 29 + j % 251); };
        std::vector<std::vector<uint8_t>> in(n), out(n), bc(n);
        for (int32_t r = 0; r < n; ++r) {
            in[r].resize(bytes[r] + 1);
            for (size_t j = 0; j < bytes[r]; ++j)
                in[r][j] = byte_of(r, j);
            out[r].assign(total, 0xee);
        }
        assert_all_ok(run_ranks(w, 2 + n, [&](int32_t r, size_t call, Comm &comm) {
            comm.shm = w.shm[r].get();
            if (call == 0)
                return hvd::collectives::allgatherv(comm, in[r].data(), out[r].data(), bytes);
            if (call == 1) {  // in place: the block is already at its offset of out
                for (int32_t b = 0; b < n; ++b)  // first, call 0's result
                    for (size_t j = 0; j < bytes[b]; ++j)
                        if (out[r][offset[b] + j] != byte_of(b, j)) return HVD_ERR_INTERNAL;
                for (size_t j = 0; j < bytes[r]; ++j)
                    out[r][offset[r] + j] = byte_of(r, j) ^ 0x5a;
                return hvd::collectives::allgatherv(comm, out[r].data() + offset[r], out[r].data(),
                                                    bytes);
            }
            int32_t root = static_cast<int32_t>(call - 2);
            bc[r].assign(300007, static_cast<uint8_t>(r));
            if (r == root)
                for (size_t j = 0; j < bc[r].size(); ++j)
                    bc[r][j] = byte_of(root, j);
            hvd_status_t s = hvd::collectives::broadcast(comm, bc[r].data(), bc[r].size(), root);
            for (size_t j = 0; j < bc[r].size() && s == HVD_OK; ++j)
                if (bc[r][j] != byte_of(root, j)) s = HVD_ERR_INTERNAL;
            return s;
        }));
        for (int32_t r = 0; r < n; ++r)
            for (int32_t b = 0; b < n; ++b)
                for (size_t j = 0; j < bytes[b]; ++j)
                    if (out[r][offset[b] + j] != (byte_of(b, j) ^ 0x5a))
                        fail_msg("n=%d rank %d: block %d byte %zu wrong", n, r, b, j);
    }
}

// A fused allreduce over pieces (kElems doubles each): ragged tensors (one empty), some in place
// and some not, that cross the chunks (slot_bytes each) and shares anywhere; every output
// checked against the sum computed here, inputs of out-of-place pieces untouched.
void check_pieces(const std::vector<size_t> &kElems, size_t slot_bytes = kTestSlotBytes) {
    const size_t kPieces = kElems.size();
    for (int32_t n = 1; n <= 4; ++n) {
        World w(n, 0, slot_bytes);
        // in[r][p], out[r][p]: pieces 1 and 4 are out of place
        std::vector<std::vector<std::vector<double>>> in(n), out(n);
        auto value = [](int32_t r, size_t p, size_t i) { return double(r + 1) * (p + 1) + i; };
        for (int32_t r = 0; r < n; ++r)
            for (size_t p = 0; p < kPieces; ++p) {
                in[r].emplace_back(kElems[p]);
                for (size_t i = 0; i < kElems[p]; ++i)
                    in[r][p][i] = value(r, p, i);
                out[r].emplace_back(kElems[p], -1.0);
            }
        assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
            comm.shm = w.shm[r].get();
            std::vector<hvd::collectives::Piece> pieces;
            for (size_t p = 0; p < kPieces; ++p) {
                bool in_place = p != 1 && p != 4;
                void *o = in_place ? in[r][p].data() : out[r][p].data();
                pieces.push_back({in[r][p].data(), o, kElems[p] * sizeof(double)});
            }
            return hvd::collectives::allreduce_shm_pieces(comm, pieces.data(), pieces.size(),
                                                          HVD_DTYPE_FLOAT64, HVD_OP_SUM, 1.0);
        }));
        for (int32_t r = 0; r < n; ++r)
            for (size_t p = 0; p < kPieces; ++p) {
                bool in_place = p != 1 && p != 4;
                const std::vector<double> &got = in_place ? in[r][p] : out[r][p];
                for (size_t i = 0; i < kElems[p]; ++i) {
                    double want = 0;
                    for (int32_t q = 0; q < n; ++q)
                        want += value(q, p, i);
                    if (got[i] != want)
                        fail_msg("n=%d rank %d piece %zu element %zu: got %g, want %g", n, r, p, i,
                                 got[i], want);
                    if (!in_place && in[r][p][i] != value(r, p, i))
                        fail_msg("n=%d rank %d piece %zu: input changed", n, r, p);
                }
            }
    }
}

void test_pieces_reduce_as_one_buffer(void **) {
    check_pieces({1, 1500, 0, 37, 3000, 999});  // chunked: many 4 KiB chunks
    check_pieces({1, 200, 0, 37, 60, 99});      // 3176 bytes: one shot
    // 1 MiB chunks: shares of 256-512 KiB (one-pass stores, streams) and runs of short pieces
    // (their copies interleaved four at a time).
    check_pieces({1, 150000, 0, 37, 70000, 5000, 999, 300, 8, 4100, 12, 90000}, 1 << 20);
    World w(2);
    double x[3] = {1, 2, 3};
    hvd::collectives::Piece torn{x, x, 10};  // not whole float64 elements
    Comm comm = shm_comm(w, 0, 1000);
    assert_int_equal(
        hvd::collectives::allreduce_shm_pieces(comm, &torn, 1, HVD_DTYPE_FLOAT64, HVD_OP_SUM, 1.0),
        HVD_ERR_INVALID_ARG);
}

// share_of splits in whole cache lines and covers every element exactly once.
// Large float32 allreduces through 1 MiB slots (shares of 256-512 KiB: the streamed kernels and
// the one-pass store of a share), on 2, 3 and 4 members, sum, min and max, in place: every
// member ends with the same bits, and those are the member-order reduction computed here.
// The data makes the order visible: sums of values 1e8 apart in magnitude round differently
// in another order, and min / max see -0 and +0.
void test_large_allreduce_matches_member_order(void **) {
    const size_t count = 600001;
    for (int32_t n = 2; n <= 4; ++n) {
        World w(n, 0, 1 << 20);
        for (int32_t op : {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX}) {
            std::vector<std::vector<float>> buf(n, std::vector<float>(count));
            std::vector<float> want(count);
            for (size_t i = 0; i < count; ++i) {
                for (int32_t r = 0; r < n; ++r) {
                    float v = (r % 2 == 0 ? 1e8f : -1e8f) * static_cast<float>(i % 3) +
                              static_cast<float>((i * 7 + r) % 11) * 0.37f;
                    if (i % 5 == 0) v = (r % 2 == 0) ? 0.0f : -0.0f;
                    buf[r][i] = v;
                }
                float acc = buf[0][i];
                for (int32_t r = 1; r < n; ++r) {
                    float x = buf[r][i];
                    acc = op == HVD_OP_SUM   ? acc + x
                          : op == HVD_OP_MIN ? (x < acc ? x : acc)
                                             : (x > acc ? x : acc);
                }
                want[i] = acc;
            }
            assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
                comm.shm = w.shm[r].get();
                return hvd::collectives::allreduce_shm(comm, buf[r].data(), count,
                                                       HVD_DTYPE_FLOAT32, op);
            }));
            for (int32_t r = 1; r < n; ++r)
                assert_memory_equal(buf[0].data(), buf[r].data(), count * sizeof(float));
            if (op == HVD_OP_SUM)  // min / max of -0 and +0 may return either zero
                assert_memory_equal(buf[0].data(), want.data(), count * sizeof(float));
            for (size_t i = 0; i < count; ++i)
                if (!(buf[0][i] == want[i]))
                    fail_msg("n=%d op %d element %zu: got %g, want %g", n, op, i, buf[0][i],
                             want[i]);
        }
    }
}

void test_shares_cover_the_chunk(void **) {
    for (size_t esz : {1, 2, 4, 8})
        for (int32_t n = 1; n <= 5; ++n)
            for (size_t total : {0, 1, 15, 16, 17, 1000, 4096}) {
                size_t next = 0;
                for (int32_t m = 0; m < n; ++m) {
                    hvd::collectives::Share s = hvd::collectives::share_of(total, esz, n, m);
                    if (s.count == 0) continue;
                    assert_int_equal(s.first, next);
                    assert_int_equal((s.first * esz) % 64, 0);
                    next += s.count;
                }
                assert_int_equal(next, total);
            }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_checks_the_segment),
        cmocka_unit_test(test_settings_come_from_the_creator),
        cmocka_unit_test(test_slots_and_counters_are_shared),
        cmocka_unit_test(test_members_out_of_step_fail),
        cmocka_unit_test(test_missing_member_times_out),
        cmocka_unit_test(test_abort_flag_ends_the_wait),
        cmocka_unit_test(test_sleeping_members_are_woken),
        cmocka_unit_test(test_single_copy_moves_every_byte),
        cmocka_unit_test(test_pieces_reduce_as_one_buffer),
        cmocka_unit_test(test_large_allreduce_matches_member_order),
        cmocka_unit_test(test_shares_cover_the_chunk),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
