// SPDX-License-Identifier: Apache-2.0
// Runner over the loopback transport, on 1..4 ranks as threads: negotiation and runs driven
// as Engine::run_pass drives them, results checked against references computed here:
// allreduces (sum, average with a postscale, min, max) of several dtypes, from the
// coordinator and from the response cache; a fused run; allgather and broadcast; a barrier
// that waits for the last rank; a joined rank's zeros and the join's last rank; ops of a
// process set created at run time; a response with no request on this rank. Assertions run
// on the main thread once the rank threads are done.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "assert_contains.h"
#include "common/dtype.h"
#include "engine_ranks.h"
#include "rank_threads.h"

namespace {

using engine_ranks::assert_no_errors;
using engine_ranks::Kind;
using engine_ranks::make_op;
using engine_ranks::OpType;
using engine_ranks::Rank;
using engine_ranks::ranks_in;
using engine_ranks::RequestPtr;
using engine_ranks::Response;
using engine_ranks::run_phase;
using engine_ranks::Shape;
using engine_ranks::World;
using rank_threads::load;
using rank_threads::store;

constexpr int32_t kMaxRanks = 4;
constexpr size_t kCount = 13;

// Rank r's element i: small integers, exact in every dtype used here, whatever the order.
double value_of(int32_t r, size_t i) {
    return static_cast<double>((i * 3 + static_cast<size_t>(r) * 5) % 7) - 3.0;
}

// An input and an output tensor of `count` elements, the input filled with value_of(rank).
struct Buffers {
    Buffers(int32_t rank, int32_t dtype, size_t count)
        : in(count * hvd::dtype_size(dtype)), out(count * hvd::dtype_size(dtype)) {
        for (size_t i = 0; i < count; ++i)
            store(in.data(), i, dtype, value_of(rank, i));
    }
    std::vector<uint8_t> in, out;
};

struct Reduction {
    std::string name;
    int32_t dtype;
    int32_t op;
    double postscale;
};

const std::vector<Reduction> &reductions() {
    static const std::vector<Reduction> all = {
        {"sum.f32", HVD_DTYPE_FLOAT32, HVD_OP_SUM, 1.0},
        {"sum.f64", HVD_DTYPE_FLOAT64, HVD_OP_SUM, 1.0},
        {"sum.f16", HVD_DTYPE_FLOAT16, HVD_OP_SUM, 1.0},
        {"sum.i32", HVD_DTYPE_INT32, HVD_OP_SUM, 1.0},
        {"sum.i64", HVD_DTYPE_INT64, HVD_OP_SUM, 1.0},
        {"sum.i8", HVD_DTYPE_INT8, HVD_OP_SUM, 1.0},
        {"avg.f32", HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE, 2.0},
        {"avg.f64", HVD_DTYPE_FLOAT64, HVD_OP_AVERAGE, 0.5},
        {"min.f32", HVD_DTYPE_FLOAT32, HVD_OP_MIN, 1.0},
        {"min.i32", HVD_DTYPE_INT32, HVD_OP_MIN, 1.0},
        {"max.f16", HVD_DTYPE_FLOAT16, HVD_OP_MAX, 1.0},
        {"max.i64", HVD_DTYPE_INT64, HVD_OP_MAX, 1.0},
    };
    return all;
}

// The reduction of value_of over ranks in `members` at element i.
double reference(const Reduction &c, const std::vector<int32_t> &members, size_t i) {
    double acc = value_of(members[0], i);
    for (size_t k = 1; k < members.size(); ++k) {
        double v = value_of(members[k], i);
        acc = c.op == HVD_OP_MIN   ? std::min(acc, v)
              : c.op == HVD_OP_MAX ? std::max(acc, v)
                                   : acc + v;
    }
    if (c.op == HVD_OP_AVERAGE) acc /= static_cast<double>(members.size());
    return acc * c.postscale;
}

// An allreduce request of c over b, in set `set`.
RequestPtr reduce_request(const Reduction &c, Buffers &b, size_t count, uint16_t set = 0) {
    RequestPtr req = make_op(OpType::kAllreduce, c.name, c.dtype,
                             Shape{static_cast<int64_t>(count)}, b.in.data(), b.out.data(), set);
    req->meta.reduce_op = c.op;
    req->meta.postscale = c.postscale;
    return req;
}

// Fails unless rank r's output of c matches the reference over `members`.
void check_reduction(const Reduction &c, int32_t r, const Buffers &b, size_t count,
                     const std::vector<int32_t> &members) {
    for (size_t i = 0; i < count; ++i) {
        double want = reference(c, members, i);
        double got = load(b.out.data(), i, c.dtype);
        if (std::fabs(got - want) > 1e-6 * (1.0 + std::fabs(want)))
            fail_msg("rank %d: %s element %zu is %g, expected %g", r, c.name.c_str(), i, got, want);
    }
}

// Fails unless rank r's request `name` finished with HVD_OK.
void assert_ok(Rank &r, const std::string &name) {
    RequestPtr req = r.made.at(name);
    if (req->status() != HVD_OK)
        fail_msg("rank %d: '%s' status %d: %s", r.rank, name.c_str(), req->status(),
                 req->message().c_str());
}

// Every reduction as a lone op (fusion threshold 0), enqueued in each rank's own order, for
// three steps: with the cache negotiator the later ones run from the response cache.
void test_allreduces_of_several_dtypes(void **) {
    for (Kind kind : {Kind::kCoordinator, Kind::kCache}) {
        for (int32_t n = 1; n <= kMaxRanks; ++n) {
            World w(n, kind, /*with_runner=*/true);
            w[0].config.fusion_threshold_bytes = 0;
            for (int step = 0; step < 3; ++step) {
                std::vector<std::map<std::string, Buffers>> bufs(n);
                for (int32_t r = 0; r < n; ++r)
                    for (const Reduction &c : reductions())
                        bufs[r].emplace(c.name, Buffers(r, c.dtype, kCount));
                bool ok = run_phase(
                    w,
                    [&](Rank &me) {
                        std::vector<RequestPtr> ops;
                        for (const Reduction &c : reductions())
                            ops.push_back(reduce_request(c, bufs[me.rank].at(c.name), kCount));
                        std::mt19937 rng(static_cast<uint32_t>(me.rank * 17 + step));
                        std::shuffle(ops.begin(), ops.end(), rng);
                        me.enqueue(ops);
                    },
                    [](const Rank &me) { return me.settled(); });
                assert_no_errors(w);
                assert_true(ok);
                for (int32_t r = 0; r < n; ++r) {
                    for (const Reduction &c : reductions()) {
                        assert_ok(w[r], c.name);
                        check_reduction(c, r, bufs[r].at(c.name), kCount, ranks_in(0, n));
                    }
                    assert_int_equal(w[r].runner->fused_collectives(), 0);
                }
            }
            if (kind == Kind::kCache)
                for (int32_t r = 0; r < n; ++r)
                    assert_int_equal(w[r].negotiator->cache_hits(), 2 * reductions().size());
        }
    }
}

// Five float32 sums of different lengths, reported together: one fused collective.
void test_fused_allreduces(void **) {
    const size_t lengths[] = {3, 7, 11, 1, 20};
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCoordinator, true);
        std::vector<std::vector<Buffers>> bufs(n);
        std::vector<Reduction> cases;
        for (size_t k = 0; k < 5; ++k)
            cases.push_back({"fused." + std::to_string(k), HVD_DTYPE_FLOAT32, HVD_OP_SUM, 1.0});
        for (int32_t r = 0; r < n; ++r)
            for (size_t len : lengths)
                bufs[r].emplace_back(r, HVD_DTYPE_FLOAT32, len);
        bool ok = run_phase(
            w,
            [&](Rank &me) {
                std::vector<RequestPtr> ops;
                for (size_t k = 0; k < 5; ++k)
                    ops.push_back(reduce_request(cases[k], bufs[me.rank][k], lengths[k]));
                std::rotate(ops.begin(), ops.begin() + me.rank, ops.end());
                me.enqueue(ops);
            },
            [](const Rank &me) { return me.settled(); });
        assert_no_errors(w);
        assert_true(ok);
        for (int32_t r = 0; r < n; ++r) {
            for (size_t k = 0; k < 5; ++k) {
                assert_ok(w[r], cases[k].name);
                check_reduction(cases[k], r, bufs[r][k], lengths[k], ranks_in(0, n));
            }
            assert_int_equal(w[r].runner->fused_collectives(), 1);
            assert_int_equal(w[r].runner->fused_tensors(), 5);
        }
    }
}

// Allgather of [r + 1, 3] rows from each rank into a library-owned output; broadcast from the
// last rank.
void test_allgather_and_broadcast(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCoordinator, true);
        std::vector<std::vector<float>> gather_in(n);
        std::vector<std::vector<double>> bcast_in(n), bcast_out(n, std::vector<double>(9, -7.0));
        for (int32_t r = 0; r < n; ++r) {
            for (int32_t j = 0; j < (r + 1) * 3; ++j)
                gather_in[r].push_back(static_cast<float>(r * 100 + j));
            for (int32_t i = 0; i < 9; ++i)
                bcast_in[r].push_back(r == n - 1 ? 1000.0 + i : -1.0);
        }
        bool ok = run_phase(
            w,
            [&](Rank &me) {
                RequestPtr g = make_op(OpType::kAllgather, "gather", HVD_DTYPE_FLOAT32,
                                       {me.rank + 1, 3}, gather_in[me.rank].data());
                RequestPtr b = make_op(OpType::kBroadcast, "bcast", HVD_DTYPE_FLOAT64, {9},
                                       bcast_in[me.rank].data(), bcast_out[me.rank].data());
                b->meta.root = n - 1;
                if (me.rank % 2 == 0)
                    me.enqueue({g, b});
                else
                    me.enqueue({b, g});
            },
            [](const Rank &me) { return me.settled(); });
        assert_no_errors(w);
        assert_true(ok);
        const int64_t rows = n * (n + 1) / 2;
        for (int32_t r = 0; r < n; ++r) {
            assert_ok(w[r], "gather");
            assert_ok(w[r], "bcast");
            const engine_ranks::Request &g = *w[r].made.at("gather");
            assert_true(g.owned_shape == (Shape{rows, 3}));
            assert_int_equal(g.owned_data.size(), rows * 3 * sizeof(float));
            const float *got = reinterpret_cast<const float *>(g.owned_data.data());
            size_t at = 0;
            for (int32_t m = 0; m < n; ++m)
                for (float v : gather_in[m])
                    if (got[at++] != v) fail_msg("rank %d: gathered element %zu", r, at - 1);
            for (int32_t i = 0; i < 9; ++i)
                assert_true(bcast_out[r][i] == 1000.0 + i);
        }
    }
}

// Steps of an allreduce, an allgather whose rows change on the last rank from step 2 on, a
// broadcast and a barrier, under the cache negotiator: cached and negotiated responses mixed,
// every step's results right.
void test_cached_steps_of_mixed_ops(void **) {
    const Reduction sum = {"x", HVD_DTYPE_FLOAT32, HVD_OP_SUM, 1.0};
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache, true);
        for (int step = 0; step < 4; ++step) {
            auto rows_of = [&](int32_t r) { return r + 1 + (step >= 2 && r == n - 1 ? 2 : 0); };
            std::vector<Buffers> xs;
            std::vector<std::vector<int32_t>> gather_in(n);
            std::vector<std::vector<int32_t>> bcast(n, std::vector<int32_t>(5));
            for (int32_t r = 0; r < n; ++r) {
                xs.emplace_back(r, sum.dtype, kCount);
                for (int32_t j = 0; j < rows_of(r) * 2; ++j)
                    gather_in[r].push_back(r * 1000 + step * 100 + j);
                for (int32_t i = 0; i < 5; ++i)
                    bcast[r][i] = r == 0 ? step * 10 + i : -1;
            }
            bool ok = run_phase(
                w,
                [&](Rank &me) {
                    const int32_t r = me.rank;
                    std::vector<RequestPtr> ops = {reduce_request(sum, xs[r], kCount),
                                                   make_op(OpType::kAllgather, "g", HVD_DTYPE_INT32,
                                                           {rows_of(r), 2}, gather_in[r].data()),
                                                   make_op(OpType::kBroadcast, "b", HVD_DTYPE_INT32,
                                                           {5}, bcast[r].data(), bcast[r].data()),
                                                   make_op(OpType::kBarrier, "bar", 0, {})};
                    std::rotate(ops.begin(), ops.begin() + (r + step) % 4, ops.end());
                    me.enqueue(ops);
                },
                [](const Rank &me) { return me.settled(); });
            assert_no_errors(w);
            assert_true(ok);
            for (int32_t r = 0; r < n; ++r) {
                for (const char *name : {"x", "g", "b", "bar"})
                    assert_ok(w[r], name);
                check_reduction(sum, r, xs[r], kCount, ranks_in(0, n));
                const engine_ranks::Request &g = *w[r].made.at("g");
                std::vector<int32_t> want;
                for (int32_t m = 0; m < n; ++m)
                    want.insert(want.end(), gather_in[m].begin(), gather_in[m].end());
                assert_int_equal(g.owned_data.size(), want.size() * sizeof(int32_t));
                assert_memory_equal(g.owned_data.data(), want.data(), g.owned_data.size());
                for (int32_t i = 0; i < 5; ++i)
                    assert_int_equal(bcast[r][i], step * 10 + i);
            }
        }
        for (int32_t r = 0; r < n; ++r)
            assert_true(w[r].negotiator->cache_hits() > 0);
    }
}

// Ranks disagreeing on one allreduce's shape: that op fails with HVD_ERR_MISMATCH on every
// rank, the context goes on, and the ops around it run.
void test_mismatch_fails_the_op_not_the_context(void **) {
    const Reduction before = {"before", HVD_DTYPE_INT64, HVD_OP_SUM, 1.0};
    const Reduction after = {"after", HVD_DTYPE_FLOAT32, HVD_OP_MIN, 1.0};
    for (int32_t n = 2; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache, true);
        for (int step = 0; step < 2; ++step) {
            std::vector<Buffers> bs, as, bad;
            for (int32_t r = 0; r < n; ++r) {
                bs.emplace_back(r, before.dtype, kCount);
                as.emplace_back(r, after.dtype, kCount);
                bad.emplace_back(r, HVD_DTYPE_FLOAT32, kCount + 1);
            }
            bool ok = run_phase(
                w,
                [&](Rank &me) {
                    const size_t len = kCount + (me.rank == n - 1 ? 1 : 0);
                    RequestPtr odd = make_op(OpType::kAllreduce, "bad", HVD_DTYPE_FLOAT32,
                                             {static_cast<int64_t>(len)}, bad[me.rank].in.data(),
                                             bad[me.rank].out.data());
                    me.enqueue({reduce_request(before, bs[me.rank], kCount), odd,
                                reduce_request(after, as[me.rank], kCount)});
                },
                [](const Rank &me) { return me.settled(); });
            assert_no_errors(w);
            assert_true(ok);
            for (int32_t r = 0; r < n; ++r) {
                assert_false(w[r].abort.aborted());
                assert_int_equal(w[r].made.at("bad")->status(), HVD_ERR_MISMATCH);
                assert_contains(w[r].made.at("bad")->message(), "'bad'");
                assert_contains(w[r].made.at("bad")->message(), "shape");
                assert_ok(w[r], "before");
                assert_ok(w[r], "after");
                check_reduction(before, r, bs[r], kCount, ranks_in(0, n));
                check_reduction(after, r, as[r], kCount, ranks_in(0, n));
            }
        }
    }
}

// A barrier ends on no rank before the last rank enqueued it.
void test_barrier_waits_for_the_last_rank(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCoordinator, true);
        auto barrier = [](Rank &me) { me.enqueue({make_op(OpType::kBarrier, "b", 0, {})}); };
        bool ok = run_phase(
            w,
            [&](Rank &me) {
                if (me.rank != n - 1) barrier(me);
            },
            [](const Rank &) { return true; }, 100);
        assert_true(ok);
        assert_no_errors(w);
        for (int32_t r = 0; r + 1 < n; ++r)
            assert_int_equal(w[r].made.at("b")->status(), HVD_INPROGRESS);
        ok = run_phase(
            w,
            [&](Rank &me) {
                if (me.rank == n - 1) barrier(me);
            },
            [](const Rank &me) { return me.settled(); });
        assert_no_errors(w);
        assert_true(ok);
        for (int32_t r = 0; r < n; ++r)
            assert_ok(w[r], "b");
    }
}

// The last rank joins first: the others' allreduce gets zeros from it. Then the others join,
// rank n - 2 last: every rank's join returns n - 2.
void test_joined_rank_contributes_zeros(void **) {
    const Reduction sum = {"x", HVD_DTYPE_FLOAT32, HVD_OP_SUM, 1.0};
    const Reduction avg = {"y", HVD_DTYPE_FLOAT64, HVD_OP_AVERAGE, 1.0};
    for (Kind kind : {Kind::kCoordinator, Kind::kCache}) {
        for (int32_t n = 2; n <= kMaxRanks; ++n) {
            World w(n, kind, true);
            const int32_t joined = n - 1, last = n - 2;
            std::vector<Buffers> xs, ys;
            for (int32_t r = 0; r < n; ++r) {
                xs.emplace_back(r, sum.dtype, kCount);
                ys.emplace_back(r, avg.dtype, kCount);
            }
            auto join = [](Rank &me) { me.enqueue({make_op(OpType::kJoin, "join", 0, {})}); };
            bool ok = run_phase(
                w,
                [&](Rank &me) {
                    if (me.rank == joined)
                        join(me);
                    else
                        me.enqueue({reduce_request(sum, xs[me.rank], kCount),
                                    make_op(OpType::kBroadcast, "bc"),
                                    reduce_request(avg, ys[me.rank], kCount)});
                },
                [&](const Rank &me) { return me.rank == joined || me.settled(); });
            assert_no_errors(w);
            assert_true(ok);
            std::vector<int32_t> others = ranks_in(0, n - 1);
            for (int32_t r : others) {
                assert_ok(w[r], "x");
                assert_ok(w[r], "y");
                check_reduction(sum, r, xs[r], kCount, others);
                // Only allreduces run while a rank is joined.
                assert_int_equal(w[r].made.at("bc")->status(), HVD_ERR_INVALID_ARG);
                assert_contains(w[r].made.at("bc")->message(),
                                "rank " + std::to_string(joined) + " has joined");
                // Average over the whole set, the joined rank's zeros included.
                for (size_t i = 0; i < kCount; ++i) {
                    double want = reference(sum, others, i) / n;
                    if (std::fabs(load(ys[r].out.data(), i, avg.dtype) - want) > 1e-9)
                        fail_msg("rank %d: y element %zu", r, i);
                }
            }
            assert_int_equal(w[joined].made.at("join")->status(), HVD_INPROGRESS);
            // Each join's report reaches rank 0 before the next phase starts: rank `last`'s last.
            ok = run_phase(
                w,
                [&](Rank &me) {
                    if (me.rank != joined && me.rank != last) join(me);
                },
                [](const Rank &) { return true; });
            assert_true(ok);
            ok = run_phase(
                w,
                [&](Rank &me) {
                    if (me.rank == last) join(me);
                },
                [](const Rank &me) { return me.settled(); });
            assert_no_errors(w);
            assert_true(ok);
            for (int32_t r = 0; r < n; ++r) {
                assert_ok(w[r], "join");
                assert_int_equal(w[r].made.at("join")->value, last);
            }
            // Every rank takes part again once the join is over.
            for (int step = 0; step < 2; ++step) {
                std::vector<Buffers> again;
                for (int32_t r = 0; r < n; ++r)
                    again.emplace_back(r, sum.dtype, kCount);
                ok = run_phase(
                    w, [&](Rank &me) { me.enqueue({reduce_request(sum, again[me.rank], kCount)}); },
                    [](const Rank &me) { return me.settled(); });
                assert_no_errors(w);
                assert_true(ok);
                for (int32_t r = 0; r < n; ++r)
                    check_reduction(sum, r, again[r], kCount, ranks_in(0, n));
            }
        }
    }
}

// A process set of ranks 1..n-1 created through the runner, then an allreduce on it.
void test_process_set_created_at_run_time(void **) {
    const Reduction in_set = {"in.set", HVD_DTYPE_INT32, HVD_OP_SUM, 1.0};
    const Reduction global = {"global", HVD_DTYPE_FLOAT32, HVD_OP_MAX, 1.0};
    for (Kind kind : {Kind::kCoordinator, Kind::kCache}) {
        for (int32_t n = 2; n <= kMaxRanks; ++n) {
            World w(n, kind, true);
            const std::vector<int32_t> members = ranks_in(1, n);
            bool ok = run_phase(
                w,
                [&](Rank &me) {
                    RequestPtr create = make_op(OpType::kProcessSetCreate, "create", 0, {});
                    create->meta.splits = members;
                    me.enqueue({create});
                },
                [](const Rank &me) { return me.settled(); });
            assert_no_errors(w);
            assert_true(ok);
            const int64_t id = w[0].made.at("create")->value;
            const uint16_t set_id = static_cast<uint16_t>(id);
            for (int32_t r = 0; r < n; ++r) {
                assert_ok(w[r], "create");
                assert_int_equal(w[r].made.at("create")->value, id);
                auto set = w[r].sets.find(set_id);
                assert_non_null(set.get());
                assert_true(set->members == members);
                assert_int_equal(set->my_index, r - 1);
            }
            // Steps of an op on the set and one of the global set (cached from the second
            // step on), in each rank's own order.
            for (int step = 0; step < 3; ++step) {
                std::vector<Buffers> sets, globals;
                for (int32_t r = 0; r < n; ++r) {
                    sets.emplace_back(r, in_set.dtype, kCount);
                    globals.emplace_back(r, global.dtype, kCount);
                }
                ok = run_phase(
                    w,
                    [&](Rank &me) {
                        std::vector<RequestPtr> ops = {
                            reduce_request(global, globals[me.rank], kCount)};
                        if (me.rank != 0)
                            ops.push_back(reduce_request(in_set, sets[me.rank], kCount, set_id));
                        if ((me.rank + step) % 2 == 1) std::reverse(ops.begin(), ops.end());
                        me.enqueue(ops);
                    },
                    [](const Rank &me) { return me.settled(); });
                assert_no_errors(w);
                assert_true(ok);
                for (int32_t r = 0; r < n; ++r) {
                    assert_ok(w[r], "global");
                    check_reduction(global, r, globals[r], kCount, ranks_in(0, n));
                    if (r == 0) continue;
                    assert_ok(w[r], "in.set");
                    check_reduction(in_set, r, sets[r], kCount, members);
                }
            }
            // The set destroyed while the last rank has an op queued on it: that op fails,
            // naming the set; the set is gone everywhere.
            ok = run_phase(
                w,
                [&](Rank &me) {
                    if (me.rank == n - 1)
                        me.enqueue({make_op(OpType::kAllreduce, "doomed", HVD_DTYPE_FLOAT32, {4},
                                            nullptr, nullptr, set_id)});
                    RequestPtr destroy = make_op(OpType::kProcessSetDestroy, "destroy", 0, {});
                    destroy->meta.root = set_id;
                    me.enqueue({destroy});
                },
                [](const Rank &me) { return me.settled(); });
            assert_no_errors(w);
            assert_true(ok);
            for (int32_t r = 0; r < n; ++r) {
                assert_ok(w[r], "destroy");
                assert_null(w[r].sets.find(set_id).get());
            }
            RequestPtr doomed = w[n - 1].made.at("doomed");
            assert_int_equal(doomed->status(), HVD_ERR_INVALID_ARG);
            assert_contains(doomed->message(), "process set " + std::to_string(set_id));
            assert_contains(doomed->message(), "'doomed'");
            // Nothing of the set is left waiting at the coordinator (its stall inspector would
            // report the op, and a stall shutdown end the job for it).
            for (const auto &left : w[0].negotiator->coordinator()->waiting())
                fail_msg("%d ranks: '%s' of set %u still waits at the coordinator", n,
                         left.name.c_str(), left.set_id);
        }
    }
}

// A response this rank has no request for fails with HVD_ERR_INTERNAL naming the op; a fused
// run that arrived without its end fails its request the same way.
void test_response_without_request_is_an_error(void **) {
    World w(1, Kind::kCoordinator, true);
    Rank &me = w[0];
    hvd::util::Fifo<Response> queue;
    Response ghost;
    ghost.name = "ghost.op";
    ghost.type = OpType::kAllreduce;
    queue.push_back(ghost);
    try {
        me.runner->run(queue);
        fail_msg("a response without a request ran");
    } catch (const hvd::Error &e) {
        assert_int_equal(e.status(), HVD_ERR_INTERNAL);
        assert_contains(e.what(), "'ghost.op'");
    }

    Buffers b(0, HVD_DTYPE_FLOAT32, kCount);
    RequestPtr req = reduce_request({"head", HVD_DTYPE_FLOAT32, HVD_OP_SUM, 1.0}, b, kCount);
    me.enqueue({req});
    std::vector<RequestPtr> fresh;
    me.intake.take(&fresh);
    me.pending.add(req);
    Response head;
    head.name = "head";
    head.type = OpType::kAllreduce;
    head.dtype = HVD_DTYPE_FLOAT32;
    head.shape = Shape{static_cast<int64_t>(kCount)};
    head.fuse_next = true;
    head.request = req;
    queue.clear();
    queue.push_back(head);
    try {
        me.runner->run(queue);
        fail_msg("an incomplete fused run ran");
    } catch (const hvd::Error &e) {
        assert_int_equal(e.status(), HVD_ERR_INTERNAL);
        assert_contains(e.what(), "'head'");
    }
    assert_int_equal(req->status(), HVD_ERR_INTERNAL);
    assert_contains(req->message(), "incomplete");
    assert_true(me.pending.empty());
    assert_true(queue.empty());
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduces_of_several_dtypes),
        cmocka_unit_test(test_fused_allreduces),
        cmocka_unit_test(test_allgather_and_broadcast),
        cmocka_unit_test(test_cached_steps_of_mixed_ops),
        cmocka_unit_test(test_mismatch_fails_the_op_not_the_context),
        cmocka_unit_test(test_barrier_waits_for_the_last_rank),
        cmocka_unit_test(test_joined_rank_contributes_zeros),
        cmocka_unit_test(test_process_set_created_at_run_time),
        cmocka_unit_test(test_response_without_request_is_an_error),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
