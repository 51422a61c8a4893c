// SPDX-License-Identifier: Apache-2.0
// The CPU collectives over the in-process loopback transport on 1..4 ranks as threads,
// checked against references computed here: every algorithm, dtype and op, a permuted
// subgroup, and failures that must end a collective promptly. Rank threads only record what
// they saw; every assertion runs on the main thread. Every wait is bounded.
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "common/dtype.h"
#include "common/error.h"
#include "rank_threads.h"
#include "transport/loopback/loopback_transport.h"

namespace {

using hvd::collectives::Comm;
using hvd::collectives::ScratchBuffer;
using hvd::transport::Channel;
using hvd::transport::Completion;
using hvd::transport::kTagFullMask;
using hvd::transport::kTagSeqMask;
using hvd::transport::kTagSourceMask;
using hvd::transport::LoopbackHub;
using hvd::transport::make_tag;
using hvd::transport::Transport;
using rank_threads::is_unsigned;
using rank_threads::load;
using rank_threads::store;
using Clock = std::chrono::steady_clock;

int64_t ms_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------- collectives over loopback

constexpr int32_t kMaxGroup = 4;  // every collective runs on 1..kMaxGroup ranks
constexpr int64_t kCollectiveDeadlineMs = 30000;

// The ranks of one hub, each with its transport and scratch buffer; rank r is member r.
struct LoopWorld {
    explicit LoopWorld(int32_t n) : hub(n), transports(hub.make_all()) {
        for (int32_t r = 0; r < n; ++r)
            scratch.push_back(std::make_unique<ScratchBuffer>());
    }
    int32_t size() const { return hub.size(); }

    LoopbackHub hub;
    std::vector<std::unique_ptr<Transport>> transports;
    std::vector<std::unique_ptr<ScratchBuffer>> scratch;
    uint32_t next_seq = 1;
};

using Body = std::function<hvd_status_t(int32_t rank, size_t call, Comm &comm)>;

// Runs `calls` collectives on one thread per rank: body(rank, call, comm) with a fresh seq per
// call, the same on every rank. A rank stops at its first failure. Returns each rank's first
// failed status (HVD_OK if none).
std::vector<hvd_status_t> run_collectives(LoopWorld &w, size_t calls, const Body &body,
                                          int64_t deadline_ms = kCollectiveDeadlineMs,
                                          const std::atomic<int32_t> *abort_status = nullptr) {
    uint32_t first_seq = w.next_seq;
    w.next_seq += static_cast<uint32_t>(calls);
    int32_t n = w.size();
    std::vector<hvd_status_t> status(n, HVD_OK);
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
            for (size_t call = 0; call < calls && status[r] == HVD_OK; ++call) {
                Comm comm;
                comm.transport = w.transports[r].get();
                for (int32_t m = 0; m < n; ++m)
                    comm.members.push_back(m);
                comm.my_index = r;
                comm.set_id = 3;
                comm.seq = first_seq + static_cast<uint32_t>(call);
                comm.deadline = hvd::Deadline::after_ms(deadline_ms);
                comm.abort_status = abort_status;
                comm.scratch = w.scratch[r].get();
                status[r] = body(r, call, comm);
            }
        });
    }
    for (auto &t : threads)
        t.join();
    return status;
}

void assert_all_ok(const std::vector<hvd_status_t> &status) {
    for (size_t r = 0; r < status.size(); ++r)
        if (status[r] != HVD_OK) fail_msg("rank %zu: status %d", r, static_cast<int>(status[r]));
}

constexpr int32_t kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};

// Member `member`'s element i: small integers, so every reduction over up to 4 members is
// exact in every dtype (sums within [-12, 12], products of {1, -1, 2}) whatever the order.
int64_t value_of(int32_t member, size_t i, int32_t dtype, int32_t op) {
    int64_t h = static_cast<int64_t>((i * 13 + static_cast<size_t>(member) * 7 + i / 5) % 997);
    if (dtype == HVD_DTYPE_BOOL) return h % 3 != 0;
    switch (op) {
        case HVD_OP_SUM:
            return is_unsigned(dtype) ? h % 4 : h % 7 - 3;
        case HVD_OP_PRODUCT: {
            static const int64_t kSigned[3] = {1, -1, 2};
            return is_unsigned(dtype) ? 1 + h % 2 : kSigned[h % 3];
        }
        default:
            return is_unsigned(dtype) ? h % 21 : h % 21 - 10;  // min, max
    }
}

// The reduction of value_of over members 0..n-1 (bool: sum and max are or, min and product
// are and).
int64_t reduced_value(int32_t n, size_t i, int32_t dtype, int32_t op) {
    int64_t acc = value_of(0, i, dtype, op);
    for (int32_t m = 1; m < n; ++m) {
        int64_t v = value_of(m, i, dtype, op);
        if (dtype == HVD_DTYPE_BOOL)
            acc = op == HVD_OP_SUM || op == HVD_OP_MAX ? (acc || v) : (acc && v);
        else if (op == HVD_OP_SUM)
            acc += v;
        else if (op == HVD_OP_PRODUCT)
            acc *= v;
        else if (op == HVD_OP_MIN)
            acc = v < acc ? v : acc;
        else
            acc = v > acc ? v : acc;
    }
    return acc;
}

std::vector<uint8_t> typed_input(int32_t member, size_t count, int32_t dtype, int32_t op) {
    std::vector<uint8_t> b((count + 1) * hvd::dtype_size(dtype));
    for (size_t i = 0; i < count; ++i)
        store(b.data(), i, dtype, static_cast<double>(value_of(member, i, dtype, op)));
    store(b.data(), count, dtype, 1);  // sentinel: must survive
    return b;
}

// ---- allreduce

enum class Allreduce { kDispatch, kRecursiveDoubling, kRing, kRingTinyChunks };

hvd_status_t run_allreduce(Allreduce algo, Comm &comm, void *buf, size_t count, int32_t dtype,
                           int32_t op) {
    namespace c = hvd::collectives;
    switch (algo) {
        case Allreduce::kDispatch:
            return c::allreduce(comm, buf, count, dtype, op);
        case Allreduce::kRecursiveDoubling:
            return c::allreduce_recursive_doubling(comm, buf, count, dtype, op);
        case Allreduce::kRing:
            return c::allreduce_ring(comm, buf, count, dtype, op);
        case Allreduce::kRingTinyChunks:  // 3..24 elements a chunk: many chunks per segment
            return c::allreduce_ring(comm, buf, count, dtype, op, 24);
    }
    return HVD_ERR_INTERNAL;
}

struct ReduceCase {
    int32_t dtype;
    int32_t op;
    size_t count;
};

void check_allreduce(int32_t n, Allreduce algo, const std::vector<ReduceCase> &cases) {
    LoopWorld w(n);
    std::vector<std::vector<std::vector<uint8_t>>> bufs(n);  // [rank][case]
    for (int32_t r = 0; r < n; ++r)
        for (const ReduceCase &c : cases)
            bufs[r].push_back(typed_input(r, c.count, c.dtype, c.op));
    assert_all_ok(run_collectives(w, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        const ReduceCase &c = cases[k];
        return run_allreduce(algo, comm, bufs[r][k].data(), c.count, c.dtype, c.op);
    }));
    for (size_t k = 0; k < cases.size(); ++k) {
        const ReduceCase &c = cases[k];
        for (int32_t r = 0; r < n; ++r) {
            for (size_t i = 0; i < c.count; ++i) {
                double got = load(bufs[r][k].data(), i, c.dtype);
                double want = static_cast<double>(reduced_value(n, i, c.dtype, c.op));
                if (got != want)
                    fail_msg("n=%d algo=%d %s %s count=%zu rank %d element %zu: got %g, want %g", n,
                             static_cast<int>(algo), hvd::dtype_name(c.dtype),
                             hvd::reduce_op_name(c.op), c.count, r, i, got, want);
            }
            assert_true(load(bufs[r][k].data(), c.count, c.dtype) == 1.0);
        }
    }
}

void test_allreduce_over_loopback(void **) {
    std::vector<ReduceCase> cases;
    for (int32_t dtype = 0; dtype < hvd::kNumDtypes; ++dtype)
        for (int32_t op : kOps)
            for (size_t count : {0, 1, 5, 1000})
                cases.push_back({dtype, op, count});
    const size_t kLarge = 100003;  // above the dispatch threshold, uneven ring segments
    std::vector<ReduceCase> large = {{HVD_DTYPE_FLOAT32, HVD_OP_SUM, kLarge},
                                     {HVD_DTYPE_INT64, HVD_OP_MAX, kLarge},
                                     {HVD_DTYPE_FLOAT16, HVD_OP_SUM, kLarge},
                                     {HVD_DTYPE_BFLOAT16, HVD_OP_PRODUCT, kLarge}};
    for (int32_t n = 1; n <= kMaxGroup; ++n)
        for (Allreduce algo : {Allreduce::kDispatch, Allreduce::kRecursiveDoubling,
                               Allreduce::kRing, Allreduce::kRingTinyChunks}) {
            check_allreduce(n, algo, cases);
            if (algo != Allreduce::kRingTinyChunks) check_allreduce(n, algo, large);
        }
}

// Random floats: the result depends on the order of the additions, so every rank must have
// used the same one (bitwise identical) and be close to a float64 reference.
void test_allreduce_random_floats_identical_on_every_rank(void **) {
    for (int32_t n = 2; n <= kMaxGroup; ++n)
        for (Allreduce algo : {Allreduce::kRecursiveDoubling, Allreduce::kRing}) {
            const size_t count = 4099;
            LoopWorld w(n);
            std::mt19937 rng(99 + n);
            std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
            std::vector<std::vector<float>> bufs(n, std::vector<float>(count));
            std::vector<double> want(count, 0.0);
            for (int32_t r = 0; r < n; ++r)
                for (size_t i = 0; i < count; ++i) {
                    bufs[r][i] = dist(rng);
                    want[i] += bufs[r][i];
                }
            assert_all_ok(run_collectives(w, 1, [&](int32_t r, size_t, Comm &comm) {
                return run_allreduce(algo, comm, bufs[r].data(), count, HVD_DTYPE_FLOAT32,
                                     HVD_OP_SUM);
            }));
            for (int32_t r = 1; r < n; ++r)
                assert_memory_equal(bufs[0].data(), bufs[r].data(), count * sizeof(float));
            for (size_t i = 0; i < count; ++i)
                if (std::fabs(bufs[0][i] - want[i]) > 1e-5 * n)
                    fail_msg("n=%d element %zu: got %g, want about %g", n, i, bufs[0][i], want[i]);
        }
}

// ---- allgatherv

uint8_t block_byte(int32_t member, size_t j) {
    return static_cast<uint8_t>(member * 29 + j * 5 + 3);
}

void check_allgatherv(int32_t n, const std::vector<size_t> &bytes, bool in_place) {
    LoopWorld w(n);
    std::vector<size_t> offset(n + 1, 0);
    for (int32_t r = 0; r < n; ++r)
        offset[r + 1] = offset[r] + bytes[r];
    std::vector<std::vector<uint8_t>> in(n), out(n, std::vector<uint8_t>(offset[n] + 1, 0xee));
    for (int32_t r = 0; r < n; ++r) {
        in[r].resize(bytes[r]);
        uint8_t *dst = in_place ? out[r].data() + offset[r] : in[r].data();
        for (size_t j = 0; j < bytes[r]; ++j)
            dst[j] = block_byte(r, j);
    }
    assert_all_ok(run_collectives(w, 1, [&](int32_t r, size_t, Comm &comm) {
        const void *src = in_place ? out[r].data() + offset[r] : in[r].data();
        return hvd::collectives::allgatherv(comm, src, out[r].data(), bytes);
    }));
    for (int32_t r = 0; r < n; ++r) {
        for (int32_t from = 0; from < n; ++from)
            for (size_t j = 0; j < bytes[from]; ++j)
                if (out[r][offset[from] + j] != block_byte(from, j))
                    fail_msg("n=%d rank %d: byte %zu of member %d's block wrong", n, r, j, from);
        assert_int_equal(out[r][offset[n]], 0xee);
    }
}

void test_allgatherv_over_loopback(void **) {
    for (int32_t n = 1; n <= kMaxGroup; ++n) {
        std::vector<size_t> ragged(n), zeros(n, 0), large(n);
        for (int32_t r = 0; r < n; ++r) {
            ragged[r] = static_cast<size_t>((r * 5 + 2) % 4) * 13;  // some 0
            large[r] = r % 2 == 0 ? 300001 : 7;
        }
        for (bool in_place : {false, true}) {
            check_allgatherv(n, ragged, in_place);
            check_allgatherv(n, zeros, in_place);
            check_allgatherv(n, large, in_place);
        }
    }
}

// ---- broadcast

enum class Bcast { kDispatch, kTree, kChain, kChainSmallChunks };

hvd_status_t run_broadcast(Bcast algo, Comm &comm, void *buf, size_t bytes, int32_t root) {
    namespace c = hvd::collectives;
    switch (algo) {
        case Bcast::kDispatch:
            return c::broadcast(comm, buf, bytes, root);
        case Bcast::kTree:
            return c::broadcast_binomial_tree(comm, buf, bytes, root);
        case Bcast::kChain:
            return c::broadcast_chain(comm, buf, bytes, root);
        case Bcast::kChainSmallChunks:
            return c::broadcast_chain(comm, buf, bytes, root, 333);
    }
    return HVD_ERR_INTERNAL;
}

// One call per root; every member ends with the root's bytes.
void check_broadcast(int32_t n, Bcast algo, size_t bytes) {
    LoopWorld w(n);
    auto byte_of = [](int32_t root, size_t j) { return static_cast<uint8_t>(root * 41 + j * 3); };
    std::vector<std::vector<std::vector<uint8_t>>> bufs(n);  // [root][rank]
    for (int32_t root = 0; root < n; ++root)
        for (int32_t r = 0; r < n; ++r) {
            std::vector<uint8_t> b(bytes + 1, 0x5a);
            if (r == root)
                for (size_t j = 0; j < bytes; ++j)
                    b[j] = byte_of(root, j);
            bufs[root].push_back(std::move(b));
        }
    assert_all_ok(
        run_collectives(w, static_cast<size_t>(n), [&](int32_t r, size_t root, Comm &comm) {
            return run_broadcast(algo, comm, bufs[root][r].data(), bytes,
                                 static_cast<int32_t>(root));
        }));
    for (int32_t root = 0; root < n; ++root)
        for (int32_t r = 0; r < n; ++r) {
            for (size_t j = 0; j < bytes; ++j)
                if (bufs[root][r][j] != byte_of(root, j))
                    fail_msg("n=%d algo=%d root %d bytes=%zu rank %d: byte %zu wrong", n,
                             static_cast<int>(algo), root, bytes, r, j);
            assert_int_equal(bufs[root][r][bytes], 0x5a);
        }
}

void test_broadcast_over_loopback(void **) {
    for (int32_t n = 1; n <= kMaxGroup; ++n)
        for (Bcast algo : {Bcast::kDispatch, Bcast::kTree, Bcast::kChain, Bcast::kChainSmallChunks})
            for (size_t bytes : {0, 1, 1000, 100001})
                check_broadcast(n, algo, bytes);
}

// ---- alltoallv

uint8_t a2a_byte(int32_t from, int32_t to, size_t j) {
    return static_cast<uint8_t>(from * 53 + to * 17 + j * 7 + 2);
}

// sizes[i][j]: bytes member i sends member j.
void check_alltoallv(const std::vector<std::vector<size_t>> &sizes) {
    int32_t n = static_cast<int32_t>(sizes.size());
    LoopWorld w(n);
    std::vector<std::vector<size_t>> recv_sizes(n, std::vector<size_t>(n));
    std::vector<std::vector<uint8_t>> in(n), out(n);
    for (int32_t i = 0; i < n; ++i)
        for (int32_t j = 0; j < n; ++j) {
            recv_sizes[j][i] = sizes[i][j];
            for (size_t k = 0; k < sizes[i][j]; ++k)
                in[i].push_back(a2a_byte(i, j, k));
        }
    for (int32_t j = 0; j < n; ++j) {
        size_t total = 0;
        for (size_t b : recv_sizes[j])
            total += b;
        out[j].assign(total + 1, 0xee);
    }
    assert_all_ok(run_collectives(w, 1, [&](int32_t r, size_t, Comm &comm) {
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

void test_alltoallv_over_loopback(void **) {
    for (int32_t n = 1; n <= kMaxGroup; ++n) {
        std::vector<std::vector<size_t>> uneven(n, std::vector<size_t>(n)), zeros = uneven,
                                                                            large = uneven;
        for (int32_t i = 0; i < n; ++i)
            for (int32_t j = 0; j < n; ++j) {
                uneven[i][j] = static_cast<size_t>((i * 3 + j * 5 + 1) % 4) * 19;  // some 0
                large[i][j] = (i + j) % 2 == 0 ? 200003 : 1;
            }
        check_alltoallv(uneven);
        check_alltoallv(zeros);
        check_alltoallv(large);
    }
}

// ---- reducescatter

enum class Scatter { kDispatch, kTinyChunks, kInPlace };

struct ScatterCase {
    int32_t dtype;
    int32_t op;
    std::vector<size_t> counts;  // one per member
};

void check_reducescatter(int32_t n, Scatter how, const std::vector<ScatterCase> &cases) {
    LoopWorld w(n);
    std::vector<std::vector<std::vector<uint8_t>>> in(n), out(n);  // [rank][case]
    std::vector<std::vector<size_t>> offset(cases.size(), std::vector<size_t>(n + 1, 0));
    for (size_t k = 0; k < cases.size(); ++k)
        for (int32_t r = 0; r < n; ++r)
            offset[k][r + 1] = offset[k][r] + cases[k].counts[r];
    for (int32_t r = 0; r < n; ++r)
        for (size_t k = 0; k < cases.size(); ++k) {
            const ScatterCase &c = cases[k];
            in[r].push_back(typed_input(r, offset[k][n], c.dtype, c.op));
            std::vector<uint8_t> o((c.counts[r] + 1) * hvd::dtype_size(c.dtype));
            store(o.data(), c.counts[r], c.dtype, 1);  // sentinel
            out[r].push_back(std::move(o));
        }
    auto result = [&](int32_t r, size_t k) {
        return how == Scatter::kInPlace
                   ? in[r][k].data() + offset[k][r] * hvd::dtype_size(cases[k].dtype)
                   : out[r][k].data();
    };
    assert_all_ok(run_collectives(w, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        namespace c = hvd::collectives;
        const ScatterCase &sc = cases[k];
        if (how == Scatter::kDispatch)
            return c::reducescatter(comm, in[r][k].data(), result(r, k), sc.counts, sc.dtype,
                                    sc.op);
        size_t chunk = how == Scatter::kTinyChunks ? 24 : 40;
        return c::reducescatter_ring(comm, in[r][k].data(), result(r, k), sc.counts, sc.dtype,
                                     sc.op, chunk);
    }));
    for (size_t k = 0; k < cases.size(); ++k) {
        const ScatterCase &c = cases[k];
        for (int32_t r = 0; r < n; ++r) {
            for (size_t j = 0; j < c.counts[r]; ++j) {
                double got = load(result(r, k), j, c.dtype);
                double want =
                    static_cast<double>(reduced_value(n, offset[k][r] + j, c.dtype, c.op));
                if (got != want)
                    fail_msg("n=%d how=%d %s %s member %d element %zu of %zu: got %g, want %g", n,
                             static_cast<int>(how), hvd::dtype_name(c.dtype),
                             hvd::reduce_op_name(c.op), r, j, c.counts[r], got, want);
            }
            if (how != Scatter::kInPlace)
                assert_true(load(out[r][k].data(), c.counts[r], c.dtype) == 1.0);
        }
    }
}

void test_reducescatter_over_loopback(void **) {
    for (int32_t n = 1; n <= kMaxGroup; ++n) {
        std::vector<size_t> uneven(n), even(n, 3), large(n);
        for (int32_t r = 0; r < n; ++r) {
            uneven[r] = static_cast<size_t>((r * 7 + 3) % 5) * 4;  // some 0
            large[r] = 20000 + static_cast<size_t>(r) * 1001;
        }
        std::vector<ScatterCase> cases;
        for (int32_t dtype = 0; dtype < hvd::kNumDtypes; ++dtype)
            for (int32_t op : kOps) {
                cases.push_back({dtype, op, uneven});
                cases.push_back({dtype, op, even});
            }
        for (Scatter how : {Scatter::kDispatch, Scatter::kTinyChunks, Scatter::kInPlace})
            check_reducescatter(n, how, cases);
        check_reducescatter(n, Scatter::kDispatch,
                            {{HVD_DTYPE_FLOAT32, HVD_OP_SUM, large},
                             {HVD_DTYPE_INT32, HVD_OP_MIN, large},
                             {HVD_DTYPE_BFLOAT16, HVD_OP_PRODUCT, large}});
    }
}

// ---- adasum

using Vec = std::vector<double>;

// Adasum of members [lo, hi) in float64 by the paper's recursive definition (whole vectors,
// lower half on the left); a squared norm below 1e-8 gives its vector the coefficient 1.
Vec adasum_of(const std::vector<Vec> &v, size_t lo, size_t hi) {
    if (hi - lo == 1) return v[lo];
    Vec a = adasum_of(v, lo, (lo + hi) / 2), b = adasum_of(v, (lo + hi) / 2, hi);
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += a[i] * b[i];
        aa += a[i] * a[i];
        bb += b[i] * b[i];
    }
    double ca = aa < 1e-8 ? 1.0 : 1.0 - ab / (2 * aa), cb = bb < 1e-8 ? 1.0 : 1.0 - ab / (2 * bb);
    Vec out(a.size());
    for (size_t i = 0; i < a.size(); ++i)
        out[i] = ca * a[i] + cb * b[i];
    return out;
}

void check_adasum(int32_t n, int32_t dtype, size_t count) {
    LoopWorld w(n);
    size_t esize = hvd::dtype_size(dtype);
    std::mt19937 rng(5 + n * 31 + static_cast<int>(count));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<Vec> v(n, Vec(count));
    std::vector<std::vector<uint8_t>> bufs(n, std::vector<uint8_t>((count + 1) * esize));
    for (int32_t r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
            store(bufs[r].data(), i, dtype, dist(rng));
            v[r][i] = load(bufs[r].data(), i, dtype);  // as stored (rounded)
        }
        store(bufs[r].data(), count, dtype, 3.0);  // sentinel
    }
    assert_all_ok(run_collectives(w, 1, [&](int32_t r, size_t, Comm &comm) {
        return hvd::collectives::adasum(comm, bufs[r].data(), count, dtype);
    }));
    for (int32_t r = 1; r < n; ++r)
        assert_memory_equal(bufs[0].data(), bufs[r].data(), count * esize);
    Vec want = adasum_of(v, 0, static_cast<size_t>(n));
    double scale = 1e-3;
    for (double x : want)
        scale = std::max(scale, std::fabs(x));
    double tol = (dtype == HVD_DTYPE_FLOAT64   ? 1e-12
                  : dtype == HVD_DTYPE_FLOAT32 ? 1e-5
                  : dtype == HVD_DTYPE_FLOAT16 ? 1e-2
                                               : 4e-2) *
                 scale;
    for (size_t i = 0; i < count; ++i) {
        double got = load(bufs[0].data(), i, dtype);
        if (!(std::fabs(got - want[i]) <= tol))
            fail_msg("n=%d %s count=%zu element %zu: got %.9g, want %.9g", n,
                     hvd::dtype_name(dtype), count, i, got, want[i]);
    }
    for (int32_t r = 0; r < n; ++r)
        assert_true(load(bufs[r].data(), count, dtype) == 3.0);
}

void test_adasum_over_loopback(void **) {
    for (int32_t n : {1, 2, 4})
        for (int32_t dtype :
             {HVD_DTYPE_FLOAT16, HVD_DTYPE_BFLOAT16, HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT64})
            for (size_t count : {0, 1, 7, 1000})
                check_adasum(n, dtype, count);
    // Not a power of two: refused on every member, without waiting for the others.
    LoopWorld w(3);
    std::vector<std::vector<float>> bufs(3, std::vector<float>(10, 1.0f));
    std::vector<hvd_status_t> st = run_collectives(
        w, 1,
        [&](int32_t r, size_t, Comm &comm) {
            return hvd::collectives::adasum(comm, bufs[r].data(), 10, HVD_DTYPE_FLOAT32);
        },
        2000);
    for (hvd_status_t s : st)
        assert_int_equal(s, HVD_ERR_UNSUPPORTED);
}

// ---- a group that is not the whole hub

// Members {3, 1, 0} of a 4-rank hub (rank 2 stays out): tags carry global ranks, indices
// are group positions.
void test_collectives_on_a_permuted_subgroup(void **) {
    LoopWorld w(4);
    const std::vector<int32_t> members = {3, 1, 0};
    const size_t count = 777;
    std::vector<std::vector<uint8_t>> sums(3), bcast(3, std::vector<uint8_t>(5000, 0));
    for (int32_t m = 0; m < 3; ++m)
        sums[m] = typed_input(m, count, HVD_DTYPE_INT32, HVD_OP_SUM);
    for (size_t j = 0; j < bcast[1].size(); ++j)
        bcast[1][j] = static_cast<uint8_t>(j * 11);
    std::vector<hvd_status_t> st(3, HVD_OK);
    std::vector<std::thread> threads;
    for (int32_t m = 0; m < 3; ++m)
        threads.emplace_back([&, m] {
            Comm comm;
            comm.transport = w.transports[members[m]].get();
            comm.members = members;
            comm.my_index = m;
            comm.set_id = 9;
            comm.scratch = w.scratch[members[m]].get();
            comm.deadline = hvd::Deadline::after_ms(kCollectiveDeadlineMs);
            namespace c = hvd::collectives;
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
            double want =
                3.0 * static_cast<double>(reduced_value(3, i, HVD_DTYPE_INT32, HVD_OP_SUM));
            if (load(sums[m].data(), i, HVD_DTYPE_INT32) != want)
                fail_msg("member %d element %zu wrong", m, i);
        }
        assert_memory_equal(bcast[m].data(), bcast[1].data(), bcast[1].size());
    }
}

// ---- failures end collectives promptly

// Ranks 0 and 1 run a collective that needs rank 2, which aborts instead: both fail with
// HVD_ERR_PEER_FAILED long before their deadline.
void test_collective_fails_when_a_member_aborts(void **) {
    for (int which = 0; which < 4; ++which) {
        LoopWorld w(3);
        std::vector<std::vector<float>> bufs(3, std::vector<float>(3000, 1.0f));
        std::vector<std::vector<size_t>> a2a(3, std::vector<size_t>(3, 400));
        std::vector<std::vector<float>> outs(3, std::vector<float>(300));
        auto t0 = Clock::now();
        std::vector<hvd_status_t> st = run_collectives(
            w, 1,
            [&](int32_t r, size_t, Comm &comm) {
                namespace c = hvd::collectives;
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
            },
            20000);
        int64_t took = ms_since(t0);
        if (st[0] != HVD_ERR_PEER_FAILED || st[1] != HVD_ERR_PEER_FAILED)
            fail_msg("collective %d: statuses %d %d", which, static_cast<int>(st[0]),
                     static_cast<int>(st[1]));
        assert_true(took < 10000);
    }
}

// The context's abort flag, raised by another thread, ends a collective waiting on a member
// that never comes.
void test_collective_ends_on_abort_flag(void **) {
    LoopWorld w(2);
    std::atomic<int32_t> abort_flag{0};
    std::vector<float> buf(100, 1.0f);
    std::thread raiser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        abort_flag.store(HVD_ERR_ABORTED);
    });
    auto t0 = Clock::now();
    std::vector<hvd_status_t> st = run_collectives(
        w, 1,
        [&](int32_t r, size_t, Comm &comm) {
            if (r == 1) return HVD_OK;  // never joins
            return hvd::collectives::allreduce(comm, buf.data(), 100, HVD_DTYPE_FLOAT32,
                                               HVD_OP_SUM);
        },
        20000, &abort_flag);
    raiser.join();
    assert_int_equal(st[0], HVD_ERR_ABORTED);
    assert_true(ms_since(t0) < 10000);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_over_loopback),
        cmocka_unit_test(test_allreduce_random_floats_identical_on_every_rank),
        cmocka_unit_test(test_allgatherv_over_loopback),
        cmocka_unit_test(test_broadcast_over_loopback),
        cmocka_unit_test(test_alltoallv_over_loopback),
        cmocka_unit_test(test_reducescatter_over_loopback),
        cmocka_unit_test(test_adasum_over_loopback),
        cmocka_unit_test(test_collectives_on_a_permuted_subgroup),
        cmocka_unit_test(test_collective_fails_when_a_member_aborts),
        cmocka_unit_test(test_collective_ends_on_abort_flag),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
