// SPDX-License-Identifier: Apache-2.0
// The CPU collectives over real UCX transports (built as test_collectives_over_loopback: over
// the in-process loopback transport): N ranks as N threads in one process, each with its own
// transport, Comm and scratch buffer. Threads only run collectives and keep their
// results; every assertion runs on the main thread after they are joined (cmocka's asserts
// longjmp, which only the main thread may do).
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

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "common/dtype.h"
#include "common/half.h"
#include "rank_threads.h"
#include "transport/ucx/ucx_transport.h"

namespace {

using hvd::collectives::Comm;
using hvd::collectives::ScratchBuffer;
using namespace rank_threads;

constexpr int32_t kMaxRanks = 5;       // every case runs on 1..kMaxRanks ranks
constexpr int32_t kMaxLargeGroup = 8;  // a selection also on kMaxRanks+1..kMaxLargeGroup

// ---------------------------------------------------------------- ranks as threads

std::unique_ptr<World> g_worlds[kMaxLargeGroup + 1];  // index = size; built once for the group

int group_setup(void **) {
    for (int32_t n = 1; n <= kMaxLargeGroup; ++n)
        g_worlds[n] = std::make_unique<World>(n);
    return 0;
}

int group_teardown(void **) {
    for (auto &w : g_worlds)
        w.reset();
    return 0;
}

// ---------------------------------------------------------------- allreduce

enum class Algo { kDispatch, kRecursiveDoubling, kRing, kRingTinyChunks, kShm };
constexpr Algo kAlgos[] = {Algo::kDispatch, Algo::kRecursiveDoubling, Algo::kRing,
                           Algo::kRingTinyChunks, Algo::kShm};
constexpr int32_t kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};

hvd_status_t run_allreduce(Algo algo, Comm &comm, void *buf, size_t count, int32_t dtype,
                           int32_t op) {
    namespace c = hvd::collectives;
    switch (algo) {
        case Algo::kDispatch:
            return c::allreduce(comm, buf, count, dtype, op);
        case Algo::kRecursiveDoubling:
            return c::allreduce_recursive_doubling(comm, buf, count, dtype, op);
        case Algo::kRing:
            return c::allreduce_ring(comm, buf, count, dtype, op);
        // 24 bytes: 3..24 elements per chunk, so segments span many chunks and the receive
        // window wraps around many times even for small counts.
        case Algo::kRingTinyChunks:
            return c::allreduce_ring(comm, buf, count, dtype, op, 24);
        // Through the world's shared-memory group: the dispatcher picks it once comm.shm is set.
        case Algo::kShm:
            return c::allreduce(comm, buf, count, dtype, op);
    }
    return HVD_ERR_INTERNAL;
}

struct ReduceCase {
    int32_t dtype;
    int32_t op;
    size_t count;
};

// Runs every case with `algo` on a world of n ranks and checks each rank's output against
// expected_value.
void check_allreduce_cases(int32_t n, Algo algo, const std::vector<ReduceCase> &cases) {
    World &w = *g_worlds[n];
    // bufs[rank][case]
    std::vector<std::vector<std::vector<uint8_t>>> bufs(n);
    for (int32_t r = 0; r < n; ++r) {
        for (const ReduceCase &c : cases) {
            std::vector<uint8_t> b(c.count * hvd::dtype_size(c.dtype) + 1);
            for (size_t i = 0; i < c.count; ++i)
                store(b.data(), i, c.dtype, input_value(r, i, c.dtype, c.op));
            bufs[r].push_back(std::move(b));
        }
    }
    assert_all_ok(run_ranks(w, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        const ReduceCase &c = cases[k];
        if (algo == Algo::kShm) comm.shm = w.shm[r].get();
        return run_allreduce(algo, comm, bufs[r][k].data(), c.count, c.dtype, c.op);
    }));
    for (size_t k = 0; k < cases.size(); ++k) {
        const ReduceCase &c = cases[k];
        for (int32_t r = 0; r < n; ++r) {
            for (size_t i = 0; i < c.count; ++i) {
                double got = load(bufs[r][k].data(), i, c.dtype);
                double want = static_cast<double>(expected_value(n, i, c.dtype, c.op));
                if (got != want)
                    fail_msg("n=%d algo=%d %s %s count=%zu rank %d element %zu: got %g, want %g", n,
                             static_cast<int>(algo), hvd::dtype_name(c.dtype),
                             hvd::reduce_op_name(c.op), c.count, r, i, got, want);
            }
        }
    }
}

// Every dtype x op x small count, every algorithm, 1..5 ranks.
void test_allreduce_every_dtype_and_op(void **) {
    std::vector<ReduceCase> cases;
    for (int32_t dtype = 0; dtype < hvd::kNumDtypes; ++dtype)
        for (int32_t op : kOps)
            for (size_t count : {0, 1, 3, 1000})
                cases.push_back({dtype, op, count});
    for (int32_t n = 1; n <= kMaxRanks; ++n)
        for (Algo algo : kAlgos)
            check_allreduce_cases(n, algo, cases);
}

// 100003 elements (above the dispatch threshold, several ring chunks per segment for the
// 8-byte types, segments of unequal length) for a selection of dtypes.
void test_allreduce_large(void **) {
    const size_t kCount = 100003;
    std::vector<ReduceCase> cases = {
        {HVD_DTYPE_FLOAT32, HVD_OP_SUM, kCount},      {HVD_DTYPE_FLOAT64, HVD_OP_MIN, kCount},
        {HVD_DTYPE_INT64, HVD_OP_SUM, kCount},        {HVD_DTYPE_FLOAT16, HVD_OP_SUM, kCount},
        {HVD_DTYPE_BFLOAT16, HVD_OP_PRODUCT, kCount}, {HVD_DTYPE_UINT8, HVD_OP_MAX, kCount}};
    for (int32_t n = 2; n <= kMaxRanks; ++n)
        for (Algo algo : {Algo::kDispatch, Algo::kRecursiveDoubling, Algo::kRing, Algo::kShm})
            check_allreduce_cases(n, algo, cases);
}

// Random floats: the result depends on the reduction order, so every rank must have used
// the same one. Checks bitwise equality across ranks and closeness to a float64 reference.
void check_bitwise_identical(int32_t n, Algo algo, int32_t dtype, size_t count) {
    World &w = *g_worlds[n];
    size_t esize = hvd::dtype_size(dtype);
    std::vector<std::vector<uint8_t>> bufs(n, std::vector<uint8_t>(count * esize));
    std::vector<double> want(count, 0.0);
    std::mt19937 rng(1234 + n);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int32_t r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
            store(bufs[r].data(), i, dtype, dist(rng));
            want[i] += load(bufs[r].data(), i, dtype);  // the value as stored (rounded)
        }
    }
    assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
        if (algo == Algo::kShm) comm.shm = w.shm[r].get();
        return run_allreduce(algo, comm, bufs[r].data(), count, dtype, HVD_OP_SUM);
    }));
    double tol = dtype == HVD_DTYPE_FLOAT32 ? 1e-5 : 0.05;  // 16-bit floats round each step
    for (int32_t r = 1; r < n; ++r)
        assert_memory_equal(bufs[0].data(), bufs[r].data(), count * esize);
    for (size_t i = 0; i < count; ++i) {
        double got = load(bufs[0].data(), i, dtype);
        if (std::fabs(got - want[i]) > tol * n)
            fail_msg("n=%d %s element %zu: got %g, want about %g", n, hvd::dtype_name(dtype), i,
                     got, want[i]);
    }
}

void test_allreduce_bitwise_identical_on_every_rank(void **) {
    for (int32_t n = 2; n <= kMaxRanks; ++n) {
        for (Algo algo : kAlgos) {
            check_bitwise_identical(n, algo, HVD_DTYPE_FLOAT32, 1000);
            check_bitwise_identical(n, algo, HVD_DTYPE_FLOAT16, 1000);
            check_bitwise_identical(n, algo, HVD_DTYPE_BFLOAT16, 333);
        }
        for (Algo algo : {Algo::kRecursiveDoubling, Algo::kRing, Algo::kShm})
            check_bitwise_identical(n, algo, HVD_DTYPE_FLOAT32, 100003);
    }
}

// ---------------------------------------------------------------- allgatherv

uint8_t block_byte(int32_t rank, size_t j) {
    return static_cast<uint8_t>(rank * 31 + j * 7 + 1);
}

void check_allgatherv(int32_t n, const std::vector<size_t> &bytes, bool in_place,
                      bool shm = false) {
    World &w = *g_worlds[n];
    size_t total = 0;
    std::vector<size_t> offset(n);
    for (int32_t r = 0; r < n; ++r) {
        offset[r] = total;
        total += bytes[r];
    }
    std::vector<std::vector<uint8_t>> in(n), out(n, std::vector<uint8_t>(total + 1, 0xee));
    for (int32_t r = 0; r < n; ++r) {
        in[r].resize(bytes[r]);
        uint8_t *dst = in_place ? out[r].data() + offset[r] : in[r].data();
        for (size_t j = 0; j < bytes[r]; ++j)
            dst[j] = block_byte(r, j);
    }
    assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
        const void *src = in_place ? out[r].data() + offset[r] : in[r].data();
        if (shm) comm.shm = w.shm[r].get();
        return hvd::collectives::allgatherv(comm, src, out[r].data(), bytes);
    }));
    for (int32_t r = 0; r < n; ++r) {
        for (int32_t b = 0; b < n; ++b)
            for (size_t j = 0; j < bytes[b]; ++j)
                if (out[r][offset[b] + j] != block_byte(b, j))
                    fail_msg("n=%d rank %d: block %d byte %zu wrong", n, r, b, j);
        assert_int_equal(out[r][total], 0xee);  // nothing written past the end
    }
}

void test_allgatherv_ragged(void **) {
    const size_t kSizes[] = {13, 0, 1000, 1, 0};
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        std::vector<size_t> ragged(kSizes, kSizes + n), zeros(n, 0), one_large(n, 3);
        one_large[n / 2] = 300000;
        for (bool in_place : {false, true}) {
            for (bool shm : {false, true}) {
                check_allgatherv(n, ragged, in_place, shm);
                check_allgatherv(n, zeros, in_place, shm);
                check_allgatherv(n, one_large, in_place, shm);
            }
        }
    }
}

// ---------------------------------------------------------------- broadcast

enum class Bcast { kDispatch, kTree, kChain, kChainTinyChunks, kShm };

hvd_status_t run_broadcast(Bcast algo, Comm &comm, void *buf, size_t bytes, int32_t root) {
    namespace c = hvd::collectives;
    switch (algo) {
        case Bcast::kDispatch:
            return c::broadcast(comm, buf, bytes, root);
        case Bcast::kTree:
            return c::broadcast_binomial_tree(comm, buf, bytes, root);
        case Bcast::kChain:
            return c::broadcast_chain(comm, buf, bytes, root);
        case Bcast::kChainTinyChunks:
            return c::broadcast_chain(comm, buf, bytes, root, 1000);
        case Bcast::kShm:  // comm.shm is set: the dispatcher picks it
            return c::broadcast(comm, buf, bytes, root);
    }
    return HVD_ERR_INTERNAL;
}

// Broadcasts `bytes` bytes from every root in turn; checks every rank got the root's data.
void check_broadcast(int32_t n, Bcast algo, size_t bytes) {
    World &w = *g_worlds[n];
    // bufs[root][rank]: rank fills its buffer with its own pattern; the root's must win.
    std::vector<std::vector<std::vector<uint8_t>>> bufs(n);
    for (int32_t root = 0; root < n; ++root)
        for (int32_t r = 0; r < n; ++r) {
            std::vector<uint8_t> b(bytes + 1);
            for (size_t j = 0; j < b.size(); ++j)
                b[j] = block_byte(r, j);
            bufs[root].push_back(std::move(b));
        }
    assert_all_ok(run_ranks(w, n, [&](int32_t r, size_t root, Comm &comm) {
        if (algo == Bcast::kShm) comm.shm = w.shm[r].get();
        return run_broadcast(algo, comm, bufs[root][r].data(), bytes, static_cast<int32_t>(root));
    }));
    for (int32_t root = 0; root < n; ++root)
        for (int32_t r = 0; r < n; ++r) {
            for (size_t j = 0; j < bytes; ++j)
                if (bufs[root][r][j] != block_byte(root, j))
                    fail_msg("n=%d algo=%d root %d rank %d: byte %zu of %zu wrong", n,
                             static_cast<int>(algo), root, r, j, bytes);
            assert_int_equal(bufs[root][r][bytes], block_byte(r, bytes));  // untouched
        }
}

void test_broadcast_every_root(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        for (size_t bytes : {0, 1, 1000, 600000}) {
            check_broadcast(n, Bcast::kDispatch, bytes);
            check_broadcast(n, Bcast::kShm, bytes);
        }
        for (size_t bytes : {1, 10007}) {
            check_broadcast(n, Bcast::kTree, bytes);
            check_broadcast(n, Bcast::kChain, bytes);
            check_broadcast(n, Bcast::kChainTinyChunks, bytes);
        }
    }
}

// ---------------------------------------------------------------- larger groups

// 6 and 7 fold 2 and 3 extra members in recursive doubling; 8 is the next power of two.
void test_larger_groups(void **) {
    std::vector<ReduceCase> cases;
    for (int32_t op : kOps)
        for (size_t count : {1, 7, 1000})
            cases.push_back({HVD_DTYPE_INT32, op, count});
    // 24-byte ring chunks of 100003 elements would be ~10^5 messages: large count, default
    // chunks only.
    std::vector<ReduceCase> large = {{HVD_DTYPE_FLOAT32, HVD_OP_SUM, 100003}};
    for (int32_t n = kMaxRanks + 1; n <= kMaxLargeGroup; ++n) {
        for (Algo algo : kAlgos)
            check_allreduce_cases(n, algo, cases);
        check_allreduce_cases(n, Algo::kRing, large);
        check_allreduce_cases(n, Algo::kShm, large);
        check_bitwise_identical(n, Algo::kRecursiveDoubling, HVD_DTYPE_FLOAT32, 1000);
        check_bitwise_identical(n, Algo::kRing, HVD_DTYPE_FLOAT32, 1000);
        check_bitwise_identical(n, Algo::kShm, HVD_DTYPE_FLOAT32, 1000);
        std::vector<size_t> ragged(n);
        for (int32_t r = 0; r < n; ++r)
            ragged[r] = static_cast<size_t>(r % 3) * 101;
        check_allgatherv(n, ragged, /*in_place=*/false);
        check_allgatherv(n, ragged, /*in_place=*/false, /*shm=*/true);
        check_broadcast(n, Bcast::kTree, 1000);
        check_broadcast(n, Bcast::kShm, 10007);
        check_broadcast(n, Bcast::kChainTinyChunks, 10007);
    }
}

// ---------------------------------------------------------------- failures

// Only rank 0 of a fresh pair calls the collective: it must give up at its deadline, with
// every operation ended, instead of hanging.
void test_missing_peer_times_out(void **) {
    World w(2);
    std::vector<float> buf(1000, 1.0f);
    Comm comm = make_comm(w, 0, g_next_seq++, /*deadline_ms=*/200);
    auto start = std::chrono::steady_clock::now();
    assert_int_equal(hvd::collectives::allreduce_ring(comm, buf.data(), buf.size(),
                                                      HVD_DTYPE_FLOAT32, HVD_OP_SUM),
                     HVD_ERR_TIMED_OUT);
    auto waited = std::chrono::steady_clock::now() - start;
    assert_true(waited >= std::chrono::milliseconds(150));
    assert_true(waited < std::chrono::seconds(10));
}

// The context's abort flag, raised by another thread, ends a collective that waits on a
// missing peer with the flag's status.
void test_abort_flag_ends_wait(void **) {
    World w(3);
    std::atomic<int32_t> abort_flag{0};
    std::vector<uint8_t> buf(100000, 7);
    Comm comm = make_comm(w, 1, g_next_seq++);
    comm.abort_status = &abort_flag;
    std::thread raiser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        abort_flag.store(HVD_ERR_ABORTED);
    });
    hvd_status_t st = hvd::collectives::broadcast(comm, buf.data(), buf.size(), 0);
    raiser.join();
    assert_int_equal(st, HVD_ERR_ABORTED);
}

// Bad arguments are refused before any message is posted (a peer-less call returns at once).
void test_invalid_arguments(void **) {
    namespace c = hvd::collectives;
    World &w = *g_worlds[2];
    Comm comm = make_comm(w, 0, g_next_seq++, /*deadline_ms=*/100000);
    float x = 0;
    assert_int_equal(c::allreduce(comm, &x, 1, HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE),
                     HVD_ERR_UNSUPPORTED);
    assert_int_equal(c::allreduce(comm, &x, 1, 99, HVD_OP_SUM), HVD_ERR_UNSUPPORTED);
    assert_int_equal(c::allreduce_ring(comm, nullptr, 1, HVD_DTYPE_FLOAT32, HVD_OP_SUM),
                     HVD_ERR_INVALID_ARG);
    assert_int_equal(c::broadcast(comm, &x, sizeof x, 2), HVD_ERR_INVALID_ARG);
    assert_int_equal(c::allgatherv(comm, &x, &x, {4}), HVD_ERR_INVALID_ARG);
    Comm no_scratch = comm;
    no_scratch.scratch = nullptr;
    assert_int_equal(c::broadcast(no_scratch, &x, sizeof x, 0), HVD_ERR_INVALID_ARG);
}

// ---------------------------------------------------------------- scratch

void test_scratch_buffer_grows_and_aligns(void **) {
    ScratchBuffer s;
    void *a = s.get(100);
    assert_int_equal(reinterpret_cast<uintptr_t>(a) % 64, 0);
    std::memset(a, 1, 100);
    assert_ptr_equal(s.get(50), a);  // never shrinks, no reallocation
    void *b = s.get(1 << 20);
    assert_int_equal(reinterpret_cast<uintptr_t>(b) % 64, 0);
    std::memset(b, 2, 1 << 20);
    hvd::transport::Completion *cs = s.completions(3);
    cs[1].done = true;
    cs = s.completions(2);
    assert_false(cs[1].done);  // handed out reset
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scratch_buffer_grows_and_aligns),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_allreduce_every_dtype_and_op),
        cmocka_unit_test(test_allreduce_large),
        cmocka_unit_test(test_allreduce_bitwise_identical_on_every_rank),
        cmocka_unit_test(test_allgatherv_ragged),
        cmocka_unit_test(test_broadcast_every_root),
        cmocka_unit_test(test_larger_groups),
        cmocka_unit_test(test_missing_peer_times_out),
        cmocka_unit_test(test_abort_flag_ends_wait),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
