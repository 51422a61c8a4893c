// SPDX-License-Identifier: Apache-2.0
// CacheNegotiator over the loopback transport, on 1..4 ranks as threads: a step's first run
// goes through the coordinator, its repetitions through the response cache's vote rounds;
// an op whose parameters changed goes back to the coordinator while the others stay hits; a
// cache smaller than the step evicts and still agrees; a cache switched off at run time drops
// its entries and on again fills anew; a grouped op runs from the cache all
// together; a late rank still agrees; an idle rank holds back an empty vote. Every rank must see
// the same responses in the same order, each with its own request. Assertions run on the main
// thread.
#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "assert_contains.h"
#include "engine_ranks.h"

namespace {

using engine_ranks::allreduce;
using engine_ranks::assert_agreed;
using engine_ranks::assert_no_errors;
using engine_ranks::group_of;
using engine_ranks::Kind;
using engine_ranks::Rank;
using engine_ranks::RequestPtr;
using engine_ranks::run_phase;
using engine_ranks::Seen;
using engine_ranks::seen_at_least;
using engine_ranks::Shape;
using engine_ranks::World;

constexpr int32_t kMaxRanks = 4;
constexpr size_t kOps = 8;

// Step `step` of a training loop: kOps allreduces "w.<i>", in an order of rank r's own.
// changed >= 0: that op has another shape on this rank.
std::vector<RequestPtr> step_ops(int32_t rank, int step, int changed = -1) {
    std::vector<RequestPtr> ops;
    for (size_t i = 0; i < kOps; ++i) {
        int64_t len = static_cast<int64_t>(i) + 1 + (static_cast<int>(i) == changed ? 100 : 0);
        ops.push_back(allreduce("w." + std::to_string(i), {len}));
    }
    std::mt19937 rng(static_cast<uint32_t>(rank * 31 + step));
    std::shuffle(ops.begin(), ops.end(), rng);
    return ops;
}

// Runs one step on every rank (rank `late` first sleeps late_ms) until each saw kOps more
// responses; asserts they agree.
void run_step(World &w, int step, int changed = -1, int32_t late = -1, int64_t late_ms = 0) {
    const size_t before = w[0].seen.size();
    bool ok = run_phase(
        w,
        [&](Rank &me) {
            if (me.rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
            me.enqueue(step_ops(me.rank, step, changed));
        },
        seen_at_least(before + kOps));
    assert_no_errors(w);
    assert_true(ok);
    assert_agreed(w, before, kOps);
    for (int32_t r = 0; r < w.size(); ++r)
        assert_true(w[r].settled());
}

void assert_counts(World &w, uint64_t negotiated, uint64_t hits) {
    for (int32_t r = 0; r < w.size(); ++r) {
        if (w[r].negotiator->negotiated() != negotiated || w[r].negotiator->cache_hits() != hits)
            fail_msg("rank %d: negotiated %llu, hits %llu; expected %llu, %llu", r,
                     static_cast<unsigned long long>(w[r].negotiator->negotiated()),
                     static_cast<unsigned long long>(w[r].negotiator->cache_hits()),
                     static_cast<unsigned long long>(negotiated),
                     static_cast<unsigned long long>(hits));
    }
}

void test_repeated_step_hits_the_cache(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        run_step(w, 0);
        assert_counts(w, kOps, 0);
        run_step(w, 1);
        assert_counts(w, kOps, kOps);
        run_step(w, 2);
        assert_counts(w, kOps, 2 * kOps);
    }
}

// Every rank changes w.3's shape: that op alone goes to the coordinator.
void test_changed_op_goes_to_the_coordinator(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        run_step(w, 0);
        run_step(w, 1, 3);
        assert_counts(w, kOps + 1, kOps - 1);
        for (int32_t r = 0; r < n; ++r)
            for (size_t i = kOps; i < 2 * kOps; ++i)
                if (w[r].seen[i].resp.name == "w.3")
                    assert_int_equal(w[r].seen[i].resp.shape[0], 104);
        // The new shape is cached in turn.
        run_step(w, 2, 3);
        assert_counts(w, kOps + 1, 2 * kOps - 1);
    }
}

// Only the last rank changes w.3's shape: its invalid vote sends the others' cached w.3 to
// the coordinator too, which answers every rank with the mismatch; the other ops are hits.
void test_one_rank_changing_an_op_gets_everyone_the_error(void **) {
    for (int32_t n = 2; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        run_step(w, 0);
        const size_t before = w[0].seen.size();
        bool ok = run_phase(
            w, [n](Rank &me) { me.enqueue(step_ops(me.rank, 1, me.rank == n - 1 ? 3 : -1)); },
            seen_at_least(before + kOps));
        assert_true(ok);
        assert_no_errors(w);
        assert_counts(w, kOps + 1, kOps - 1);
        std::vector<std::string> order = w[0].names(before);
        for (int32_t r = 0; r < n; ++r) {
            assert_true(w[r].names(before) == order);
            for (size_t i = before; i < w[r].seen.size(); ++i) {
                const Seen &s = w[r].seen[i];
                assert_true(s.own);
                if (s.resp.name != "w.3") {
                    assert_int_equal(s.resp.status, HVD_OK);
                    continue;
                }
                assert_int_equal(s.resp.status, HVD_ERR_MISMATCH);
                assert_contains(s.resp.message, "shape [104]");
            }
        }
        // Everyone back on the old shape: through the coordinator once more, then hits.
        run_step(w, 2);
        run_step(w, 3);
        for (int32_t r = 0; r < n; ++r)
            assert_true(w[r].negotiator->cache_hits() >= 2 * kOps - 1);
    }
}

// Rank 0's cache holds 3 entries, fewer than the step's ops: bits are reused, every rank
// still agrees, and each op is either a hit or negotiated.
void test_small_cache_evicts_and_agrees(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        w[0].config.cache_capacity = 3;
        for (int step = 0; step < 4; ++step) {
            run_step(w, step);
            for (int32_t r = 0; r < n; ++r) {
                uint64_t negotiated = w[r].negotiator->negotiated();
                uint64_t hits = w[r].negotiator->cache_hits();
                assert_int_equal(negotiated + hits, (step + 1) * kOps);
                assert_true(hits <= static_cast<uint64_t>(step) * 3);
            }
        }
    }
}

// Rank 0's capacity set to 0 between steps (the cache switched off at run time, as autotune
// does): the entries cached so far are dropped on every rank, so every op goes through the
// coordinator; switched on again, the ops are cached anew and hit.
void test_cache_switched_off_and_on_at_run_time(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        run_step(w, 0);
        run_step(w, 1);
        assert_counts(w, kOps, kOps);
        w[0].config.cache_capacity = 0;
        run_step(w, 2);
        assert_counts(w, 2 * kOps, kOps);
        run_step(w, 3);
        assert_counts(w, 3 * kOps, kOps);
        w[0].config.cache_capacity = 1024;
        run_step(w, 4);
        assert_counts(w, 4 * kOps, kOps);
        run_step(w, 5);
        assert_counts(w, 4 * kOps, 2 * kOps);
    }
}

// The members of group `g` sit together in member order in rank r's responses from `from`.
void assert_group_together(const Rank &r, size_t from, const std::string &g, int32_t size) {
    std::vector<std::string> names = r.names(from);
    auto first = std::find(names.begin(), names.end(), g + ".0");
    if (first == names.end()) fail_msg("rank %d: no %s.0", r.rank, g.c_str());
    for (int32_t i = 0; i < size; ++i, ++first)
        if (first == names.end() || *first != g + "." + std::to_string(i))
            fail_msg("rank %d: %s.%d is not where its group is", r.rank, g.c_str(), i);
}

// A group of four with two lone ops around it: negotiated once, then run from the cache with
// its members together, also when one rank enqueues late. In step 3 every rank changes one
// member's shape: the whole group goes to the coordinator (the lone ops stay hits), and its
// members still come together.
void test_grouped_op_runs_from_the_cache_together(void **) {
    const int32_t group_size = 4;
    const uint64_t ops = group_size + 2;
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        for (int step = 0; step < 4; ++step) {
            const size_t before = w[0].seen.size();
            bool ok = run_phase(
                w,
                [&](Rank &me) {
                    if (step == 2 && me.rank == n - 1)
                        std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    std::vector<RequestPtr> group = group_of("g", group_size);
                    if (step == 3) group[2]->meta.shape = group[2]->input.shape = Shape{9};
                    if (me.rank % 2 == 0) me.enqueue({allreduce("lone.a")});
                    me.enqueue(group);
                    if (me.rank % 2 == 1) me.enqueue({allreduce("lone.a")});
                    me.pass();
                    me.enqueue({allreduce("lone.b")});
                },
                seen_at_least(before + ops));
            assert_true(ok);
            assert_agreed(w, before, ops);
            for (int32_t r = 0; r < n; ++r)
                assert_group_together(w[r], before, "g", group_size);
            if (step < 3)
                assert_counts(w, ops, step * ops);
            else
                assert_counts(w, ops + group_size, 2 * ops + 2);
        }
    }
}

// One rank enqueues its step late, without passing meanwhile: briefly, then past the cached
// wait limit. The others' cached ops wait on their bits; the round they voted in waits for
// the late rank's vote, which makes them all ready. Every rank agrees either way.
void test_late_rank_still_agrees(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        run_step(w, 0);
        run_step(w, 1, -1, n - 1, 200);
        assert_counts(w, kOps, kOps);
        run_step(w, 2, -1, n - 1, 1300);
        for (int32_t r = 0; r < n; ++r)
            assert_int_equal(w[r].negotiator->negotiated() + w[r].negotiator->cache_hits(),
                             3 * kOps);
        assert_true(w[0].negotiator->cache_hits() >= kOps);
        run_step(w, 3);
    }
}

uint64_t rounds_of(Rank &r) {
    return static_cast<hvd::engine::CacheNegotiator &>(*r.negotiator).rounds_done();
}

// The last rank keeps passing for 2 ms, while the others' votes for a cached step arrive,
// before it enqueues the step: it holds back its empty vote (up to 5 ms), so the step takes
// one round, where an empty vote would have taken a second. At least one of five tries must
// (a try fails where the thread ran late past the hold).
void test_idle_rank_holds_back_its_empty_vote(void **) {
    for (int32_t n = 2; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        run_step(w, 0);
        run_step(w, 1);
        bool one_round = false;
        for (int attempt = 0; attempt < 5 && !one_round; ++attempt) {
            const uint64_t rounds_before = rounds_of(w[0]);
            const size_t before = w[0].seen.size();
            bool ok = run_phase(
                w,
                [n, attempt](Rank &me) {
                    if (me.rank == n - 1) {
                        auto until =
                            std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
                        while (std::chrono::steady_clock::now() < until)
                            me.pass();
                    }
                    me.enqueue(step_ops(me.rank, 2 + attempt));
                },
                seen_at_least(before + kOps));
            assert_true(ok);
            assert_agreed(w, before, kOps);
            assert_counts(w, kOps, kOps * static_cast<uint64_t>(2 + attempt));
            one_round = rounds_of(w[0]) - rounds_before == 1;
        }
        assert_true(one_round);
    }
}

// The last rank holds back one op past the cached wait limit while it keeps passing: the
// others' cached w.5 goes stale, their invalid votes send it to the coordinator, and it is
// negotiated once the last rank enqueues it; the other ops stay hits.
void test_op_held_back_goes_stale_and_to_the_coordinator(void **) {
    for (int32_t n = 1; n <= kMaxRanks; ++n) {
        World w(n, Kind::kCache);
        run_step(w, 0);
        const size_t before = w[0].seen.size();
        bool ok = run_phase(
            w,
            [n](Rank &me) {
                std::vector<RequestPtr> ops = step_ops(me.rank, 1);
                if (me.rank != n - 1) {
                    me.enqueue(ops);
                    return;
                }
                auto held = std::find_if(ops.begin(), ops.end(),
                                         [](const RequestPtr &r) { return r->meta.name == "w.5"; });
                RequestPtr w5 = *held;
                ops.erase(held);
                me.enqueue(ops);
                auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1800);
                while (std::chrono::steady_clock::now() < until) {
                    me.pass();
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
                me.enqueue({w5});
            },
            seen_at_least(before + kOps));
        assert_true(ok);
        assert_agreed(w, before, kOps);
        if (n == 1)
            assert_counts(w, kOps, kOps);
        else
            assert_counts(w, kOps + 1, kOps - 1);
        for (int32_t r = 0; r < n; ++r)
            assert_string_equal(w[r].seen.back().resp.name.c_str(), "w.5");
        run_step(w, 2);
    }
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeated_step_hits_the_cache),
        cmocka_unit_test(test_changed_op_goes_to_the_coordinator),
        cmocka_unit_test(test_one_rank_changing_an_op_gets_everyone_the_error),
        cmocka_unit_test(test_small_cache_evicts_and_agrees),
        cmocka_unit_test(test_cache_switched_off_and_on_at_run_time),
        cmocka_unit_test(test_grouped_op_runs_from_the_cache_together),
        cmocka_unit_test(test_late_rank_still_agrees),
        cmocka_unit_test(test_op_held_back_goes_stale_and_to_the_coordinator),
        cmocka_unit_test(test_idle_rank_holds_back_its_empty_vote),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
