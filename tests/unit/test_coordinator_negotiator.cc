// SPDX-License-Identifier: Apache-2.0
// CoordinatorNegotiator over the loopback transport, on 1..4 ranks as threads: every rank
// gets the same responses in the same order, each with its own request, whatever order the
// ranks enqueued in; ops some ranks never reported are held (and named by the coordinator's
// waiting list); disagreements come back as errors to every rank; one batch's allreduces are
// chained for fusion up to the threshold; ops of a process set made at run time reach its
// members only. Assertions run on the main thread once the rank threads are done.
#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "assert_contains.h"
#include "engine_ranks.h"

namespace {

using engine_ranks::allreduce;
using engine_ranks::assert_agreed;
using engine_ranks::assert_no_errors;
using engine_ranks::Kind;
using engine_ranks::make_op;
using engine_ranks::OpType;
using engine_ranks::Rank;
using engine_ranks::RequestPtr;
using engine_ranks::run_phase;
using engine_ranks::Seen;
using engine_ranks::seen_at_least;
using engine_ranks::Shape;
using engine_ranks::World;

constexpr int32_t kMaxRanks = 4;

// Ops of several kinds and shapes; rank r enqueues them in its own shuffled order, in two
// enqueues with a pass and a short pause between.
std::vector<RequestPtr> mixed_ops(int32_t rank) {
    std::vector<RequestPtr> ops;
    for (int i = 0; i < 6; ++i)
        ops.push_back(allreduce("grad." + std::to_string(i), {i + 1, 2}));
    ops.push_back(make_op(OpType::kAllgather, "gather", HVD_DTYPE_INT32, {rank + 1, 3}));
    ops.push_back(make_op(OpType::kBroadcast, "bcast", HVD_DTYPE_FLOAT64, {5}));
    ops.push_back(make_op(OpType::kBarrier, "barrier", 0, {}));
    std::mt19937 rng(static_cast<uint32_t>(rank) * 7919u + 1u);
    std::shuffle(ops.begin(), ops.end(), rng);
    return ops;
}

void test_same_order_from_different_enqueue_orders(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCoordinator);
        const size_t count = mixed_ops(0).size();
        bool ok = run_phase(
            w,
            [](Rank &me) {
                std::vector<RequestPtr> ops = mixed_ops(me.rank);
                size_t half = ops.size() / 2 + static_cast<size_t>(me.rank % 2);
                me.enqueue({ops.begin(), ops.begin() + static_cast<long>(half)});
                me.pass();
                std::this_thread::sleep_for(std::chrono::milliseconds(me.rank));
                me.enqueue({ops.begin() + static_cast<long>(half), ops.end()});
            },
            seen_at_least(count), 20);
        assert_true(ok);
        assert_agreed(w, 0, count);
        std::vector<std::string> names = w[0].names();
        std::set<std::string> distinct(names.begin(), names.end());
        assert_int_equal(distinct.size(), count);
        for (int32_t r = 0; r < n; ++r) {
            assert_true(w[r].settled());
            assert_int_equal(w[r].negotiator->negotiated(), count);
            assert_int_equal(w[r].negotiator->cache_hits(), 0);
            assert_true((w[r].negotiator->coordinator() != nullptr) == (r == 0));
            // The allgather's response carries every member's first dimension.
            for (const Seen &s : w[r].seen)
                if (s.resp.name == "gather") {
                    assert_int_equal(s.resp.first_dims.size(), n);
                    for (int32_t m = 0; m < n; ++m)
                        assert_int_equal(s.resp.first_dims[m], m + 1);
                }
        }
    }
}

// An op the last rank never enqueues is not emitted; rank 0's coordinator names that rank.
void test_op_missing_on_some_ranks_is_not_emitted(void **) {
    for (int32_t n = 2; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCoordinator);
        bool ok = run_phase(
            w,
            [n](Rank &me) {
                std::vector<RequestPtr> ops = {allreduce("a"), allreduce("b")};
                if (me.rank != n - 1) ops.insert(ops.begin() + 1, allreduce("partial"));
                me.enqueue(ops);
            },
            seen_at_least(2), 100);
        assert_true(ok);
        assert_agreed(w, 0, 2);
        for (int32_t r = 0; r < n; ++r) {
            std::vector<std::string> want = {"a", "b"};
            assert_true(w[r].names() == want);
            if (r != n - 1) assert_int_equal(w[r].made["partial"]->status(), HVD_INPROGRESS);
        }
        auto waiting = w[0].negotiator->coordinator()->waiting();
        assert_int_equal(waiting.size(), 1);
        assert_string_equal(waiting[0].name.c_str(), "partial");
        assert_int_equal(waiting[0].set_id, 0);
        assert_int_equal(waiting[0].missing_ranks.size(), 1);
        assert_int_equal(waiting[0].missing_ranks[0], n - 1);

        // The missing rank catches up: the op is emitted to everyone after all.
        ok = run_phase(
            w,
            [n](Rank &me) {
                if (me.rank == n - 1) me.enqueue({allreduce("partial")});
            },
            seen_at_least(3));
        assert_true(ok);
        assert_agreed(w, 2, 1);
        assert_true(w[0].negotiator->coordinator()->waiting().empty());
    }
}

// Ranks that disagree on an op's shape, dtype, kind or reduction: every rank gets that op as
// an error naming the difference, and its request fails with it.
void test_disagreement_is_an_error_for_every_rank(void **) {
    struct Case {
        const char *name;
        const char *what;  // in the message
    };
    const Case cases[] = {{"by_shape", "shape [5]"},
                          {"by_dtype", "dtype"},
                          {"by_kind", "operation"},
                          {"by_reduce", "reduce op"}};
    for (int32_t n = 2; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCoordinator);
        bool ok = run_phase(
            w,
            [n](Rank &me) {
                const bool odd = me.rank == n - 1;
                RequestPtr shape = allreduce("by_shape", odd ? Shape{5} : Shape{4});
                RequestPtr dtype =
                    allreduce("by_dtype", {4}, odd ? HVD_DTYPE_FLOAT64 : HVD_DTYPE_FLOAT32);
                RequestPtr kind =
                    odd ? make_op(OpType::kBroadcast, "by_kind") : allreduce("by_kind");
                RequestPtr reduce = allreduce("by_reduce");
                if (odd) reduce->meta.reduce_op = HVD_OP_MAX;
                me.enqueue({shape, dtype, allreduce("fine"), kind, reduce});
            },
            seen_at_least(5));
        assert_true(ok);
        assert_no_errors(w);
        std::vector<std::string> order = w[0].names();
        for (int32_t r = 0; r < n; ++r) {
            assert_true(w[r].names() == order);
            for (const Seen &s : w[r].seen) {
                assert_true(s.own);
                if (s.resp.name == "fine") {
                    assert_int_equal(s.resp.status, HVD_OK);
                    continue;
                }
                assert_int_equal(s.resp.status, HVD_ERR_MISMATCH);
                assert_contains(s.resp.message, "'" + s.resp.name + "'");
                for (const Case &c : cases)
                    if (s.resp.name == c.name) assert_contains(s.resp.message, c.what);
                assert_contains(s.resp.message, "rank " + std::to_string(n - 1));
                assert_int_equal(w[r].made[s.resp.name]->status(), HVD_ERR_MISMATCH);
            }
        }
    }
}

// The fuse_next flags rank r saw, in order.
std::vector<bool> fusion_of(const Rank &r) {
    std::vector<bool> out;
    for (const Seen &s : r.seen)
        out.push_back(s.resp.fuse_next);
    return out;
}

// Six 16-byte allreduces reported together come back as one batch: chained whole under a
// large threshold, in runs of two under a 40-byte one, not at all under 0.
void test_fusion_follows_the_threshold(void **) {
    struct Case {
        int64_t threshold;
        std::vector<bool> chain;
    };
    const Case cases[] = {
        {int64_t{128} << 20, {true, true, true, true, true, false}},
        {40, {true, false, true, false, true, false}},
        {16, {false, false, false, false, false, false}},
        {0, {false, false, false, false, false, false}},
    };
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        for (const Case &c : cases) {
            World w(n, Kind::kCoordinator);
            for (int32_t r = 0; r < n; ++r)
                w[r].config.fusion_threshold_bytes = c.threshold;
            bool ok = run_phase(
                w,
                [](Rank &me) {
                    std::vector<RequestPtr> ops;
                    for (int i = 0; i < 6; ++i)
                        ops.push_back(allreduce("t." + std::to_string((i + me.rank) % 6)));
                    me.enqueue(ops);
                },
                seen_at_least(6));
            assert_true(ok);
            assert_agreed(w, 0, 6);
            for (int32_t r = 0; r < n; ++r)
                if (fusion_of(w[r]) != c.chain)
                    fail_msg("%d ranks, threshold %lld: rank %d's chain differs", n,
                             static_cast<long long>(c.threshold), r);
        }
    }
}

// A process set of ranks 1..n-1 created at run time: its ops reach its members only, in one
// order, alongside an op of the global set that every rank gets.
void test_process_set_created_at_run_time(void **) {
    for (int32_t n = 2; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCoordinator);
        const std::vector<int32_t> members = engine_ranks::ranks_in(1, n);
        bool ok = run_phase(
            w,
            [&](Rank &me) {
                RequestPtr create = make_op(OpType::kProcessSetCreate, "create", 0, {});
                create->meta.splits = members;
                me.enqueue({create});
            },
            seen_at_least(1));
        assert_true(ok);
        assert_agreed(w, 0, 1);
        const int64_t id = w[0].seen[0].resp.first_dims.at(0);
        assert_true(id >= 1);
        for (int32_t r = 0; r < n; ++r)
            assert_int_equal(w[r].seen[0].resp.first_dims.at(0), id);
        const uint16_t set = static_cast<uint16_t>(id);

        ok = run_phase(
            w,
            [set](Rank &me) {
                std::vector<RequestPtr> ops = {allreduce("global")};
                if (me.rank != 0) {
                    ops.push_back(make_op(OpType::kAllreduce, "s.a", HVD_DTYPE_FLOAT32, {2},
                                          nullptr, nullptr, set));
                    ops.push_back(make_op(OpType::kAllreduce, "s.b", HVD_DTYPE_FLOAT32, {3},
                                          nullptr, nullptr, set));
                    if (me.rank % 2 == 0) std::swap(ops[1], ops[2]);
                }
                me.enqueue(ops);
            },
            [](const Rank &me) { return me.seen.size() >= (me.rank == 0 ? 2u : 4u); }, 50);
        assert_true(ok);
        assert_no_errors(w);
        std::vector<std::string> just_global = {"create", "global"};
        assert_true(w[0].names() == just_global);
        for (int32_t r = 1; r < n; ++r) {
            assert_true(w[r].names() == w[1].names());
            for (const Seen &s : w[r].seen) {
                assert_true(s.own);
                assert_int_equal(s.resp.status, HVD_OK);
                assert_int_equal(s.resp.set_id, s.resp.name.rfind("s.", 0) == 0 ? set : 0);
            }
        }
    }
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_order_from_different_enqueue_orders),
        cmocka_unit_test(test_op_missing_on_some_ranks_is_not_emitted),
        cmocka_unit_test(test_disagreement_is_an_error_for_every_rank),
        cmocka_unit_test(test_fusion_follows_the_threshold),
        cmocka_unit_test(test_process_set_created_at_run_time),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
