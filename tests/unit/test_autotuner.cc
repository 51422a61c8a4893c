// SPDX-License-Identifier: Apache-2.0
// Autotune's search as rank 0 runs it: the parameters' log scales, the cache and hierarchical
// switches, parameters held where they are set explicitly, the points in order (the
// configuration in force, two fixed points, then the model's choices), samples closed by
// tick() (warm-up at the start only) and logged as CSV, the search on a synthetic
// throughput reaching within 5 % of its best point and keeping it, and the grid search.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "collectives/hierarchy.h"
#include "engine/autotuner.h"
#include "engine/tuning_space.h"

using hvd::engine::Autotuner;
using hvd::engine::TunedParams;
using hvd::engine::TuningChoices;
using hvd::engine::TuningSpace;
using hvd::negotiation::kAllOpTypes;
using hvd::negotiation::op_type_bit;
using hvd::negotiation::OpType;

namespace {

constexpr int64_t kMiB = 1 << 20;
const uint32_t kAllreduceBit = op_type_bit(OpType::kAllreduce);
const uint32_t kAllgatherBit = op_type_bit(OpType::kAllgather);
const uint32_t kNoAllreduce = kAllOpTypes & ~kAllreduceBit;

// Fusion threshold and cycle time searched, the cache where cache_on > 0, hierarchical
// allreduce where `hierarchical`.
TuningChoices choices(int64_t cache_on, bool hierarchical = false) {
    TuningChoices c;
    c.cache_capacity_on = cache_on;
    c.hierarchical_ops = hierarchical ? kAllreduceBit : 0;
    return c;
}

TuningSpace space_of(int64_t cache_on, bool hierarchical = false) {
    return TuningSpace(choices(cache_on, hierarchical), TunedParams{});
}

void test_space_scales(void **) {
    TuningSpace space = space_of(1024);
    assert_int_equal(space.levels().size(), 3);
    TunedParams lo = space.params({0.0, 0.0, 0.0});
    assert_true((lo == TunedParams{0, 0, 0, kAllOpTypes}));
    TunedParams hi = space.params({1.0, 1.0, 1.0});
    assert_true((hi == TunedParams{128 * kMiB, 5000, 1024, kAllOpTypes}));
    // Midway on the log scales: s (sqrt(1 + max / s) - 1), s = 64 KiB and 50 us.
    TunedParams mid = space.params({0.5, 0.5, 1.0});
    assert_int_equal(mid.fusion_threshold_bytes,
                     std::llround(65536.0 * (std::sqrt(1.0 + 2048.0) - 1.0)));
    assert_int_equal(mid.cycle_time_us, std::llround(50.0 * (std::sqrt(101.0) - 1.0)));
    // And back, clamped outside the ranges.
    std::vector<double> x = space.point(TunedParams{16 * kMiB, 1000, 0});
    TunedParams again = space.params(x);
    assert_true(std::llabs(again.fusion_threshold_bytes - 16 * kMiB) <= 1);
    assert_int_equal(again.cycle_time_us, 1000);
    assert_int_equal(again.cache_capacity, 0);
    x = space.point(TunedParams{1LL << 40, 1000000, 5});
    assert_true((x == std::vector<double>{1.0, 1.0, 1.0}));
    // A cache configured off is not tuned.
    TuningSpace off = space_of(0);
    assert_int_equal(off.levels().size(), 2);
    assert_int_equal(off.params({0.5, 0.5}).cache_capacity, 0);
}

// Hierarchical allreduce is a switch of its own; held parameters are no dimension and keep
// the values the search started from.
void test_space_switches_and_held(void **) {
    TuningSpace space = space_of(1024, true);
    assert_true((space.levels() == std::vector<int>{0, 0, 2, 2}));
    assert_string_equal(space.describe().c_str(),
                        "fusion threshold, cycle time, response cache, hierarchical allreduce");
    assert_int_equal(space.params({0.0, 0.0, 0.0, 0.0}).hierarchical_ops, kNoAllreduce);
    assert_int_equal(space.params({0.0, 0.0, 0.0, 1.0}).hierarchical_ops, kAllOpTypes);
    assert_true((space.point(TunedParams{0, 0, 0, kNoAllreduce}) ==
                 std::vector<double>{0.0, 0.0, 0.0, 0.0}));
    assert_string_equal(hvd::engine::hierarchical_names(kNoAllreduce & ~kAllgatherBit).c_str(),
                        "none");
    assert_string_equal(hvd::engine::hierarchical_names(kNoAllreduce).c_str(), "allgather");
    assert_string_equal(hvd::engine::hierarchical_names(kAllOpTypes).c_str(),
                        "allreduce+allgather");

    TuningChoices held = choices(0, true);
    held.fusion = false;
    const TunedParams base{8 * kMiB, 700, 0, kAllOpTypes};
    TuningSpace part(held, base);
    assert_true((part.levels() == std::vector<int>{0, 2}));
    assert_string_equal(part.describe().c_str(), "cycle time, hierarchical allreduce");
    TunedParams p = part.params({1.0, 0.0});
    assert_true((p == TunedParams{8 * kMiB, 5000, 0, kNoAllreduce}));
    assert_true((part.point(base) ==
                 std::vector<double>{std::log2(1.0 + 700.0 / 50.0) / std::log2(101.0), 1.0}));
}

// What the environment holds: a setting set explicitly (HVD_ or HOROVOD_), the cache without
// a capacity to switch on, the hierarchical switches without a hierarchy.
void test_choices_from_the_environment(void **) {
    const char *vars[] = {"HVD_FUSION_THRESHOLD",
                          "HOROVOD_FUSION_THRESHOLD",
                          "HVD_CYCLE_TIME",
                          "HOROVOD_CYCLE_TIME",
                          "HVD_CACHE_CAPACITY",
                          "HOROVOD_CACHE_CAPACITY",
                          "HVD_HIERARCHICAL_ALLREDUCE",
                          "HOROVOD_HIERARCHICAL_ALLREDUCE",
                          "HVD_HIERARCHICAL_ALLGATHER",
                          "HOROVOD_HIERARCHICAL_ALLGATHER"};
    for (const char *v : vars)
        unsetenv(v);
    const uint32_t both = kAllreduceBit | kAllgatherBit;
    TuningChoices c = hvd::engine::tuning_choices(1024, both);
    assert_true(c.fusion && c.cycle);
    assert_int_equal(c.cache_capacity_on, 1024);
    assert_int_equal(c.hierarchical_ops, both);
    // Uneven hosts: only the allgather's hierarchical algorithm applies.
    assert_int_equal(hvd::engine::tuning_choices(1024, kAllgatherBit).hierarchical_ops,
                     kAllgatherBit);
    assert_int_equal(hvd::engine::tuning_choices(0, 0).cache_capacity_on, 0);
    assert_int_equal(hvd::engine::tuning_choices(1024, 0).hierarchical_ops, 0);
    // What a job's hierarchy makes available: the switches whose algorithm it runs at all.
    assert_int_equal(hvd::engine::hierarchical_available(nullptr), 0);
    hvd::collectives::Hierarchy h;
    assert_int_equal(hvd::engine::hierarchical_available(&h), both);
    h.allreduce_min_bytes = hvd::collectives::kHierarchyOff;
    h.allgather_min_bytes = 1 << 20;
    assert_int_equal(hvd::engine::hierarchical_available(&h), kAllgatherBit);
    h.allgather_min_bytes = hvd::collectives::kHierarchyOff;
    assert_int_equal(hvd::engine::hierarchical_available(&h), 0);

    setenv("HVD_FUSION_THRESHOLD", "1048576", 1);
    setenv("HOROVOD_CYCLE_TIME", "2", 1);
    setenv("HVD_CACHE_CAPACITY", "1024", 1);
    setenv("HVD_HIERARCHICAL_ALLREDUCE", "auto", 1);
    setenv("HOROVOD_HIERARCHICAL_ALLGATHER", "0", 1);
    c = hvd::engine::tuning_choices(1024, both);
    assert_false(c.fusion);
    assert_false(c.cycle);
    assert_int_equal(c.cache_capacity_on, 0);
    assert_int_equal(c.hierarchical_ops, 0);
    for (const char *v : vars)
        unsetenv(v);

    // Nothing left to search: the search is done at once, on the values it started from.
    TuningChoices none;
    none.fusion = none.cycle = false;
    Autotuner::Options o;
    o.start = TunedParams{1 * kMiB, 2000, 0, kAllOpTypes};
    o.choices = none;
    Autotuner t(o);
    assert_true(t.done());
    assert_true(t.current() == o.start);
}

Autotuner::Options options(int32_t max_points, const TunedParams &start,
                           const std::string &log = "", int64_t cache_on = 1024,
                           bool hierarchical = false) {
    Autotuner::Options o;
    o.log_path = log;
    o.warmup_samples = 1;
    o.steps_per_sample = 2;
    o.max_points = max_points;
    o.start = start;
    o.choices = choices(cache_on, hierarchical);
    return o;
}

void test_points_in_order(void **) {
    const TunedParams start{128 * kMiB, 0, 1024, kAllOpTypes};
    Autotuner t(options(5, start, "", 1024, true));
    TuningSpace space = space_of(1024, true);
    assert_true(t.current() == start);
    t.score_point(1.0);
    // Every switch the other way.
    assert_true(t.current() == space.params({0.5, 0.5, 0.0, 0.0}));
    assert_int_equal(t.current().hierarchical_ops, kNoAllreduce);
    t.score_point(2.0);
    assert_true(t.current() == space.params({0.25, 0.25, 1.0, 1.0}));
    t.score_point(3.0);
    assert_false(t.done());
    t.score_point(0.5);
    t.score_point(0.5);
    assert_true(t.done());
    assert_int_equal(t.points_scored(), 5);
    // Kept: the best predicted point, here the best sample.
    assert_true(t.current() == space.params({0.25, 0.25, 1.0, 1.0}));
    t.score_point(9.0);  // after the end: ignored
    assert_int_equal(t.points_scored(), 5);
}

void test_samples_are_ticked_and_logged(void **) {
    const std::string log = "/tmp/hvd_test_autotuner." + std::to_string(getpid()) + ".csv";
    const TunedParams start{4 * kMiB, 1000, 0, kAllOpTypes};
    {
        Autotuner t(options(3, start, log, 0));  // the cache not tuned
        auto now = Autotuner::Clock::now();
        t.record(1000);
        assert_false(t.tick(now + std::chrono::seconds(1)));  // one op of two
        t.record(1000);
        assert_false(t.tick(now + std::chrono::seconds(1)));  // warm-up
        t.record(500);
        t.record(500);
        assert_false(t.tick(now + std::chrono::seconds(2) + std::chrono::milliseconds(1)));
        assert_true(t.current() == start);
        t.record(500);
        t.record(500);
        // The point's second counted sample: the next point.
        assert_true(t.tick(now + std::chrono::seconds(3) + std::chrono::milliseconds(1)));
        const TunedParams second = space_of(0).params({0.5, 0.5});
        assert_true(t.current() == second);
        // The warm-up was the search's: the next point's first sample counts.
        t.record(3000);
        t.record(3000);
        assert_false(t.tick(now + std::chrono::seconds(4) + std::chrono::milliseconds(1)));
        t.record(4000);
        t.record(4000);
        assert_true(t.tick(now + std::chrono::seconds(5) + std::chrono::milliseconds(1)));
        assert_int_equal(t.points_scored(), 2);
        assert_false(t.done());
    }
    std::vector<std::string> lines;
    std::FILE *in = std::fopen(log.c_str(), "r");
    assert_non_null(in);
    char buf[256];
    while (std::fgets(buf, sizeof buf, in) != nullptr) {
        std::string line = buf;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        lines.push_back(line);
    }
    std::fclose(in);
    std::remove(log.c_str());
    assert_int_equal(lines.size(), 6);
    assert_string_equal(lines[0].c_str(),
                        "sample,fusion_threshold_bytes,cycle_time_ms,cache_capacity,"
                        "hierarchical,score_bytes_per_s,state");
    assert_string_equal(lines[1].c_str(), "1,4194304,1.000,0,allreduce+allgather,2000,warmup");
    // 1000 bytes over 1.001 s.
    assert_string_equal(lines[2].c_str(), "2,4194304,1.000,0,allreduce+allgather,999,sample");
    assert_string_equal(lines[3].c_str(), "3,4194304,1.000,0,allreduce+allgather,1000,sample");
    char point[128];
    std::snprintf(point, sizeof point, "%lld,%.3f,0,allreduce+allgather",
                  static_cast<long long>(space_of(0).params({0.5, 0.5}).fusion_threshold_bytes),
                  static_cast<double>(space_of(0).params({0.5, 0.5}).cycle_time_us) / 1000.0);
    assert_string_equal(lines[4].c_str(), ("4," + std::string(point) + ",6000,sample").c_str());
    assert_string_equal(lines[5].c_str(), ("5," + std::string(point) + ",8000,sample").c_str());
}

// A throughput peaked at 16 MiB and no cycle time, 3x with the cache, 1.5x with hierarchical
// allreduce off: from the defaults (hierarchical on), the search gets within 5 % of the peak
// within its 20 points, and keeps a point within 5 %.
double throughput(const TunedParams &p) {
    double f = std::log2(1.0 + static_cast<double>(p.fusion_threshold_bytes) / 65536.0) -
               std::log2(1.0 + 256.0);
    double c = static_cast<double>(p.cycle_time_us) / 1000.0;
    double h = (p.hierarchical_ops & kAllreduceBit) != 0 ? 1.0 : 1.5;
    return h * (p.cache_capacity > 0 ? 3.0 : 1.0) / (1.0 + 0.02 * f * f + 0.5 * c);
}

void test_search_reaches_the_peak(void **) {
    Autotuner t(options(20, TunedParams{128 * kMiB, 0, 1024, kAllOpTypes}, "", 1024, true));
    const double peak = 4.5;
    int first_within = 0;
    while (!t.done()) {
        double y = throughput(t.current());
        if (first_within == 0 && y >= 0.95 * peak) first_within = t.points_scored() + 1;
        t.score_point(y);
    }
    if (first_within == 0) fail_msg("no point within 5 %% of the peak");
    if (throughput(t.current()) < 0.95 * peak)
        fail_msg("kept %lld bytes, %lld us, cache %lld, hierarchical %s: %g",
                 (long long)t.current().fusion_threshold_bytes,
                 (long long)t.current().cycle_time_us, (long long)t.current().cache_capacity,
                 hvd::engine::hierarchical_names(t.current().hierarchical_ops).c_str(),
                 throughput(t.current()));
    assert_int_equal(t.current().hierarchical_ops & kAllreduceBit, 0);
}

// HVD_AUTOTUNE_SEARCH=grid: every point of the fixed grid once, in order (the last
// dimension fastest), whatever max_points says, then the best scored point is kept.
void test_grid_search_scores_every_point(void **) {
    Autotuner::Options o =
        options(3, TunedParams{128 * kMiB, 0, 1024, kAllOpTypes}, "", 1024, true);
    o.search = Autotuner::Search::kGrid;
    Autotuner t(o);
    const int64_t fusion[] = {0, kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 128 * kMiB};
    const int64_t cycle_us[] = {0, 500, 1000, 2500, 5000};
    assert_int_equal(t.max_points(), 6 * 5 * 2 * 2);
    TunedParams best{};
    double best_y = -1.0;
    for (int64_t f : fusion)
        for (int64_t c : cycle_us)
            for (int64_t cache : {int64_t{0}, int64_t{1024}})
                for (uint32_t h : {kNoAllreduce, kAllOpTypes}) {
                    assert_false(t.done());
                    const TunedParams expect{f, c, cache, h};
                    if (!(t.current() == expect))
                        fail_msg(
                            "point %d: %lld bytes, %lld us, cache %lld, hierarchical %s; "
                            "expected %lld, %lld, %lld, %s",
                            t.points_scored(), (long long)t.current().fusion_threshold_bytes,
                            (long long)t.current().cycle_time_us,
                            (long long)t.current().cache_capacity,
                            hvd::engine::hierarchical_names(t.current().hierarchical_ops).c_str(),
                            (long long)f, (long long)c, (long long)cache,
                            hvd::engine::hierarchical_names(h).c_str());
                    const double y = throughput(expect);
                    if (y > best_y) {
                        best_y = y;
                        best = expect;
                    }
                    t.score_point(y);
                }
    assert_true(t.done());
    assert_int_equal(t.points_scored(), 120);
    // The grid's best: 16 MiB, no cycle time, the cache on, hierarchical allreduce off.
    assert_true(best == (TunedParams{16 * kMiB, 0, 1024, kNoAllreduce}));
    assert_true(t.current() == best);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space_scales),
        cmocka_unit_test(test_space_switches_and_held),
        cmocka_unit_test(test_choices_from_the_environment),
        cmocka_unit_test(test_points_in_order),
        cmocka_unit_test(test_samples_are_ticked_and_logged),
        cmocka_unit_test(test_search_reaches_the_peak),
        cmocka_unit_test(test_grid_search_scores_every_point),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
