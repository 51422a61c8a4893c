// SPDX-License-Identifier: Apache-2.0
// alltoallv, reduce-scatter and Adasum over real UCX transports (built as
// test_collectives_more_over_loopback: over the in-process loopback transport): N ranks as N
// threads in one process, each with its own transport, Comm and scratch buffer. Threads only
// run collectives and keep their results; every assertion runs on the main thread after they
// are joined (cmocka's asserts longjmp, which only the main thread may do). References are
// computed here, independently of the library.
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

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/shm/shm_sync.h"
#include "common/dtype.h"
#include "common/half.h"
#include "rank_threads.h"
#include "transport/ucx/ucx_transport.h"

namespace {

using hvd::collectives::Comm;
using hvd::collectives::ScratchBuffer;
using namespace rank_threads;

constexpr int32_t kMaxRanks = 4;     // every case runs on 1..kMaxRanks ranks
constexpr int32_t kAdasumLarge = 8;  // Adasum also on 8 (three levels)

// ---------------------------------------------------------------- ranks as threads

std::unique_ptr<World> g_worlds[kAdasumLarge + 1];  // index = size

int group_setup(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n)
        g_worlds[n] = std::make_unique<World>(n);
    g_worlds[kAdasumLarge] = std::make_unique<World>(kAdasumLarge);
    return 0;
}

int group_teardown(void **) {
    for (auto &w : g_worlds)
        w.reset();
    return 0;
}

// ---------------------------------------------------------------- typed values

// ---------------------------------------------------------------- alltoallv

// The byte member `from` sends member `to` at position j of its block.
uint8_t a2a_byte(int32_t from, int32_t to, size_t j) {
    return static_cast<uint8_t>(from * 37 + to * 11 + j * 3 + 1);
}

// sizes[i][j]: bytes member i sends member j. Checks every member's output block by block and
// that nothing is written past its end.
void check_alltoallv(const std::vector<std::vector<size_t>> &sizes) {
    int32_t n = static_cast<int32_t>(sizes.size());
    World &w = *g_worlds[n];
    std::vector<std::vector<size_t>> recv_sizes(n, std::vector<size_t>(n));
    std::vector<std::vector<uint8_t>> in(n), out(n);
    for (int32_t i = 0; i < n; ++i) {
        for (int32_t j = 0; j < n; ++j) {
            recv_sizes[j][i] = sizes[i][j];
            for (size_t k = 0; k < sizes[i][j]; ++k)
                in[i].push_back(a2a_byte(i, j, k));
        }
    }
    for (int32_t j = 0; j < n; ++j) {
        size_t total = 0;
        for (size_t b : recv_sizes[j])
            total += b;
        out[j].assign(total + 1, 0xee);
    }
    assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
        return hvd::collectives::alltoallv(comm, in[r].data(), sizes[r], out[r].data(),
                                           recv_sizes[r]);
    }));
    for (int32_t j = 0; j < n; ++j) {
        size_t pos = 0;
        for (int32_t i = 0; i < n; ++i)
            for (size_t k = 0; k < sizes[i][j]; ++k, ++pos)
                if (out[j][pos] != a2a_byte(i, j, k))
                    fail_msg("n=%d member %d: byte %zu of the block from %d wrong", n, j, k, i);
        assert_int_equal(out[j][pos], 0xee);
    }
}

void test_alltoallv_uneven_and_empty_blocks(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        std::vector<std::vector<size_t>> uneven(n, std::vector<size_t>(n)), zeros = uneven,
                                                                            large = uneven;
        for (int32_t i = 0; i < n; ++i)
            for (int32_t j = 0; j < n; ++j) {
                uneven[i][j] = static_cast<size_t>((i * 3 + j * 5) % 4) * 37;  // some 0
                large[i][j] = (i + j) % 2 == 0 ? 300000 : 1;  // rendezvous-sized blocks
            }
        check_alltoallv(uneven);
        check_alltoallv(zeros);
        check_alltoallv(large);
    }
}

// ---------------------------------------------------------------- reducescatter

constexpr int32_t kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};

struct ScatterCase {
    int32_t dtype;
    int32_t op;
    std::vector<size_t> counts;  // one per member
};

// kShm and kShmInPlace: the shared-memory algorithm over the world's group (4 KiB slots:
// pieces of a few hundred bytes, many rounds).
enum class Scatter { kDispatch, kTinyChunks, kInPlace, kShm, kShmInPlace };

bool in_place(Scatter how) {
    return how == Scatter::kInPlace || how == Scatter::kShmInPlace;
}

// Runs every case on a world of n ranks; member r's output must be the reduction of elements
// [offset_r, offset_r + counts[r]). Out of place, a sentinel element after the output must
// survive.
void check_reducescatter(int32_t n, Scatter how, const std::vector<ScatterCase> &cases) {
    World &w = *g_worlds[n];
    // in[rank][case] (count elements), out[rank][case] (counts[rank] + 1 elements)
    std::vector<std::vector<std::vector<uint8_t>>> in(n), out(n);
    std::vector<std::vector<size_t>> offset(cases.size(), std::vector<size_t>(n + 1, 0));
    for (size_t k = 0; k < cases.size(); ++k)
        for (int32_t r = 0; r < n; ++r)
            offset[k][r + 1] = offset[k][r] + cases[k].counts[r];
    for (int32_t r = 0; r < n; ++r) {
        for (size_t k = 0; k < cases.size(); ++k) {
            const ScatterCase &c = cases[k];
            size_t esize = hvd::dtype_size(c.dtype);
            std::vector<uint8_t> b(offset[k][n] * esize + 1);
            for (size_t i = 0; i < offset[k][n]; ++i)
                store(b.data(), i, c.dtype, input_value(r, i, c.dtype, c.op));
            in[r].push_back(std::move(b));
            std::vector<uint8_t> o((c.counts[r] + 1) * esize);
            store(o.data(), c.counts[r], c.dtype, 1);  // sentinel
            out[r].push_back(std::move(o));
        }
    }
    assert_all_ok(run_ranks(w, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        namespace c = hvd::collectives;
        const ScatterCase &sc = cases[k];
        switch (how) {
            case Scatter::kDispatch:
                return c::reducescatter(comm, in[r][k].data(), out[r][k].data(), sc.counts,
                                        sc.dtype, sc.op);
            case Scatter::kTinyChunks:  // 3..24 elements per chunk: the window wraps often
                return c::reducescatter_ring(comm, in[r][k].data(), out[r][k].data(), sc.counts,
                                             sc.dtype, sc.op, 24);
            case Scatter::kInPlace: {
                uint8_t *own = in[r][k].data() + offset[k][r] * hvd::dtype_size(sc.dtype);
                return c::reducescatter_ring(comm, in[r][k].data(), own, sc.counts, sc.dtype, sc.op,
                                             40);
            }
            case Scatter::kShm:
            case Scatter::kShmInPlace: {
                comm.shm = w.shm[r].get();
                uint8_t *own = how == Scatter::kShm
                                   ? out[r][k].data()
                                   : in[r][k].data() + offset[k][r] * hvd::dtype_size(sc.dtype);
                return c::reducescatter_shm(comm, in[r][k].data(), own, sc.counts, sc.dtype, sc.op);
            }
        }
        return HVD_ERR_INTERNAL;
    }));
    for (size_t k = 0; k < cases.size(); ++k) {
        const ScatterCase &c = cases[k];
        for (int32_t r = 0; r < n; ++r) {
            const uint8_t *got_buf = in_place(how)
                                         ? in[r][k].data() + offset[k][r] * hvd::dtype_size(c.dtype)
                                         : out[r][k].data();
            for (size_t j = 0; j < c.counts[r]; ++j) {
                double got = load(got_buf, j, c.dtype);
                double want =
                    static_cast<double>(expected_value(n, offset[k][r] + j, c.dtype, c.op));
                if (got != want)
                    fail_msg("n=%d how=%d %s %s member %d element %zu of %zu: got %g, want %g", n,
                             static_cast<int>(how), hvd::dtype_name(c.dtype),
                             hvd::reduce_op_name(c.op), r, j, c.counts[r], got, want);
            }
            if (!in_place(how)) assert_true(load(out[r][k].data(), c.counts[r], c.dtype) == 1.0);
        }
    }
}

// Uneven counts with zeros, for n members: a rotation of {5, 0, 13, 1} scaled by `scale`.
std::vector<size_t> uneven_counts(int32_t n, size_t scale, int32_t rotate) {
    static const size_t kBase[kMaxRanks] = {5, 0, 13, 1};
    std::vector<size_t> counts(n);
    for (int32_t r = 0; r < n; ++r)
        counts[r] = kBase[(r + rotate) % kMaxRanks] * scale;
    return counts;
}

void test_reducescatter_every_dtype_and_op(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        std::vector<ScatterCase> cases;
        for (int32_t dtype = 0; dtype < hvd::kNumDtypes; ++dtype) {
            for (int32_t op : kOps) {
                cases.push_back({dtype, op, uneven_counts(n, 1, 0)});
                cases.push_back({dtype, op, uneven_counts(n, 37, 1)});
                cases.push_back({dtype, op, std::vector<size_t>(n, 0)});
            }
        }
        for (Scatter how : {Scatter::kDispatch, Scatter::kTinyChunks, Scatter::kInPlace,
                            Scatter::kShm, Scatter::kShmInPlace})
            check_reducescatter(n, how, cases);
    }
}

// Blocks of several default-sized chunks (256 KiB), one of them empty.
void test_reducescatter_large(void **) {
    for (int32_t n = 2; n <= kMaxRanks; ++n) {
        std::vector<size_t> counts(n, 100003);
        counts[1] = 0;
        counts[0] = 250007;
        std::vector<ScatterCase> cases = {{HVD_DTYPE_FLOAT32, HVD_OP_SUM, counts},
                                          {HVD_DTYPE_INT64, HVD_OP_MAX, counts},
                                          {HVD_DTYPE_BFLOAT16, HVD_OP_PRODUCT, counts}};
        for (Scatter how : {Scatter::kDispatch, Scatter::kShm, Scatter::kShmInPlace})
            check_reducescatter(n, how, cases);
    }
}

// ---------------------------------------------------------------- adasum

constexpr int32_t kAdasumDtypes[] = {HVD_DTYPE_FLOAT16, HVD_DTYPE_BFLOAT16, HVD_DTYPE_FLOAT32,
                                     HVD_DTYPE_FLOAT64};

using Vec = std::vector<double>;

// Adasum of members [lo, hi) in float64, straight from the paper's recursive definition:
// whole vectors, no halving, no rounding between levels. Horovod's rule for (near) zero
// vectors: a squared norm below 1e-8 gives the coefficient 1.
Vec adasum_reference(const std::vector<Vec> &v, size_t lo, size_t hi) {
    if (hi - lo == 1) return v[lo];
    size_t mid = (lo + hi) / 2;
    Vec a = adasum_reference(v, lo, mid), b = adasum_reference(v, mid, hi);
    double dot = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        dot += a[i] * b[i];
        aa += a[i] * a[i];
        bb += b[i] * b[i];
    }
    double ca = aa < 1e-8 ? 1.0 : 1.0 - dot / (2 * aa);
    double cb = bb < 1e-8 ? 1.0 : 1.0 - dot / (2 * bb);
    Vec out(a.size());
    for (size_t i = 0; i < a.size(); ++i)
        out[i] = ca * a[i] + cb * b[i];
    return out;
}

enum class AdasumInput { kRandom, kParallel, kZeroFirst };

// Member r's input as double values (exactly representable in dtype).
std::vector<Vec> adasum_inputs(int32_t n, int32_t dtype, size_t count, AdasumInput kind) {
    std::mt19937 rng(77 + n + static_cast<int>(count));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<Vec> v(n, Vec(count));
    std::vector<uint8_t> cell(8);
    for (size_t i = 0; i < count; ++i) {
        double base = dist(rng);
        for (int32_t r = 0; r < n; ++r) {
            double x = kind == AdasumInput::kParallel ? base * (r + 1) : dist(rng);
            if (kind == AdasumInput::kZeroFirst && r == 0) x = 0;
            store(cell.data(), 0, dtype, x);
            v[r][i] = load(cell.data(), 0, dtype);  // the value as stored (rounded)
        }
    }
    return v;
}

double adasum_tolerance(int32_t dtype) {
    switch (dtype) {
        case HVD_DTYPE_FLOAT64:
            return 1e-12;
        case HVD_DTYPE_FLOAT32:
            return 1e-5;
        case HVD_DTYPE_FLOAT16:
            return 1e-2;  // rounded to 11 bits at every level
        default:
            return 4e-2;  // bfloat16: 8 bits
    }
}

void check_adasum(int32_t n, int32_t dtype, size_t count, AdasumInput kind) {
    World &w = *g_worlds[n];
    size_t esize = hvd::dtype_size(dtype);
    std::vector<Vec> v = adasum_inputs(n, dtype, count, kind);
    std::vector<std::vector<uint8_t>> bufs(n, std::vector<uint8_t>(count * esize + esize));
    for (int32_t r = 0; r < n; ++r)
        for (size_t i = 0; i <= count; ++i)
            store(bufs[r].data(), i, dtype, i < count ? v[r][i] : 3.0);  // 3.0: sentinel
    assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
        return hvd::collectives::adasum(comm, bufs[r].data(), count, dtype);
    }));
    for (int32_t r = 1; r < n; ++r)
        assert_memory_equal(bufs[0].data(), bufs[r].data(), count * esize);
    Vec want = adasum_reference(v, 0, static_cast<size_t>(n));
    double scale = 1e-3;
    for (double x : want)
        scale = std::max(scale, std::fabs(x));
    double tol = adasum_tolerance(dtype) * scale;
    for (size_t i = 0; i < count; ++i) {
        double got = load(bufs[0].data(), i, dtype);
        if (!(std::fabs(got - want[i]) <= tol))
            fail_msg("n=%d %s count=%zu input=%d element %zu: got %.9g, want %.9g", n,
                     hvd::dtype_name(dtype), count, static_cast<int>(kind), i, got, want[i]);
    }
    for (int32_t r = 0; r < n; ++r)
        assert_true(load(bufs[r].data(), count, dtype) == 3.0);
}

void test_adasum_against_reference(void **) {
    for (int32_t n : {1, 2, 4, kAdasumLarge})
        for (int32_t dtype : kAdasumDtypes)
            for (size_t count : {0, 1, 3, 7, 1000})
                for (AdasumInput kind :
                     {AdasumInput::kRandom, AdasumInput::kParallel, AdasumInput::kZeroFirst})
                    check_adasum(n, dtype, count, kind);
    for (int32_t n : {2, 4, kAdasumLarge})
        check_adasum(n, HVD_DTYPE_FLOAT32, 100003, AdasumInput::kRandom);
}

// Known values, not just the reference: parallel inputs are averaged (a, 2a -> 1.5a), a zero
// vector passes the other through, orthogonal ones add.
void test_adasum_known_pairs(void **) {
    World &w = *g_worlds[2];
    std::vector<std::vector<double>> bufs = {{1, 2, 0, 4}, {2, 4, 0, 8},    // parallel
                                             {0, 0, 0, 0}, {1, -2, 3, 5},   // zero
                                             {1, 0, 2, 0}, {0, 3, 0, -1}};  // orthogonal
    assert_all_ok(run_ranks(w, 3, [&](int32_t r, size_t k, Comm &comm) {
        return hvd::collectives::adasum(comm, bufs[2 * k + r].data(), 4, HVD_DTYPE_FLOAT64);
    }));
    const std::vector<std::vector<double>> want = {{1.5, 3, 0, 6}, {1, -2, 3, 5}, {1, 3, 2, -1}};
    for (size_t k = 0; k < 3; ++k)
        for (int32_t r = 0; r < 2; ++r)
            for (size_t i = 0; i < 4; ++i)
                assert_true(bufs[2 * k + r][i] == want[k][i]);
}

// Every rank of a group of 3 refuses at once, without talking to its peers; integer dtypes are
// refused on any group.
void test_adasum_unsupported(void **) {
    std::vector<float> x(10, 1.0f);
    std::vector<int32_t> ints(10, 1);
    std::vector<std::vector<float>> bufs(3, x);
    std::vector<hvd_status_t> st = run_ranks(*g_worlds[3], 1, [&](int32_t r, size_t, Comm &comm) {
        return hvd::collectives::adasum(comm, bufs[r].data(), 10, HVD_DTYPE_FLOAT32);
    });
    for (hvd_status_t s : st)
        assert_int_equal(s, HVD_ERR_UNSUPPORTED);
    Comm comm = make_comm(*g_worlds[2], 0, g_next_seq++);
    assert_int_equal(hvd::collectives::adasum(comm, ints.data(), 10, HVD_DTYPE_INT32),
                     HVD_ERR_UNSUPPORTED);
    assert_int_equal(hvd::collectives::adasum(comm, nullptr, 10, HVD_DTYPE_FLOAT32),
                     HVD_ERR_INVALID_ARG);
}

// ---------------------------------------------------------------- failures

// Bad arguments are refused before any message is posted (a peer-less call returns at once).
void test_invalid_arguments(void **) {
    namespace c = hvd::collectives;
    Comm comm = make_comm(*g_worlds[2], 0, g_next_seq++, /*deadline_ms=*/100000);
    float x[4] = {0, 0, 0, 0}, y[4];
    assert_int_equal(c::alltoallv(comm, x, {4}, y, {4}), HVD_ERR_INVALID_ARG);
    assert_int_equal(c::alltoallv(comm, x, {4, 4}, y, {8, 4}), HVD_ERR_INVALID_ARG);
    assert_int_equal(c::alltoallv(comm, nullptr, {4, 4}, y, {4, 4}), HVD_ERR_INVALID_ARG);
    assert_int_equal(c::reducescatter(comm, x, y, {2, 2}, HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE),
                     HVD_ERR_UNSUPPORTED);
    assert_int_equal(c::reducescatter(comm, x, y, {4}, HVD_DTYPE_FLOAT32, HVD_OP_SUM),
                     HVD_ERR_INVALID_ARG);
    assert_int_equal(c::reducescatter(comm, x, nullptr, {2, 2}, HVD_DTYPE_FLOAT32, HVD_OP_SUM),
                     HVD_ERR_INVALID_ARG);
}

// Only rank 0 of a fresh pair calls: each collective gives up at its deadline instead of
// hanging (a fresh pair each time, since a failure aborts the transport).
void test_missing_peer_times_out(void **) {
    namespace c = hvd::collectives;
    std::vector<float> in(1000, 1.0f), out(1000);
    const std::function<hvd_status_t(Comm &)> calls[] = {
        [&](Comm &comm) {
            return c::alltoallv(comm, in.data(), {400, 400}, out.data(), {400, 400});
        },
        [&](Comm &comm) {
            return c::reducescatter(comm, in.data(), out.data(), {500, 500}, HVD_DTYPE_FLOAT32,
                                    HVD_OP_SUM);
        },
        [&](Comm &comm) { return c::adasum(comm, in.data(), 1000, HVD_DTYPE_FLOAT32); },
    };
    for (const auto &call : calls) {
        World w(2);
        Comm comm = make_comm(w, 0, g_next_seq++, /*deadline_ms=*/200);
        auto start = std::chrono::steady_clock::now();
        assert_int_equal(call(comm), HVD_ERR_TIMED_OUT);
        auto waited = std::chrono::steady_clock::now() - start;
        assert_true(waited >= std::chrono::milliseconds(150));
        assert_true(waited < std::chrono::seconds(10));
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_alltoallv_uneven_and_empty_blocks),
        cmocka_unit_test(test_reducescatter_every_dtype_and_op),
        cmocka_unit_test(test_reducescatter_large),
        cmocka_unit_test(test_adasum_against_reference),
        cmocka_unit_test(test_adasum_known_pairs),
        cmocka_unit_test(test_adasum_unsupported),
        cmocka_unit_test(test_missing_peer_times_out),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
