// SPDX-License-Identifier: Apache-2.0
// Autotune's search as rank 0 runs it: the parameters' log scales and the cache switch, the
// points in order (the configuration in force, two fixed points, then the model's choices),
// samples closed by tick() and logged as CSV, and the search on a synthetic throughput
// reaching within 5 % of its best point and keeping it.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/autotuner.h"

using hvd::engine::Autotuner;
using hvd::engine::TunedParams;
using hvd::engine::TuningSpace;

namespace {

constexpr int64_t kMiB = 1 << 20;

void test_space_scales(void **) {
    TuningSpace space(1024);
    assert_int_equal(space.levels().size(), 3);
    TunedParams lo = space.params({0.0, 0.0, 0.0});
    assert_true((lo == TunedParams{0, 0, 0}));
    TunedParams hi = space.params({1.0, 1.0, 1.0});
    assert_true((hi == TunedParams{128 * kMiB, 5000, 1024}));
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
    TuningSpace off(0);
    assert_int_equal(off.levels().size(), 2);
    assert_int_equal(off.params({0.5, 0.5}).cache_capacity, 0);
}

Autotuner::Options options(int32_t max_points, const TunedParams &start,
                           const std::string &log = "", int64_t cache_on = 1024) {
    Autotuner::Options o;
    o.log_path = log;
    o.warmup_samples = 1;
    o.steps_per_sample = 2;
    o.max_points = max_points;
    o.start = start;
    o.cache_capacity_on = cache_on;
    return o;
}

void test_points_in_order(void **) {
    const TunedParams start{128 * kMiB, 0, 1024};
    Autotuner t(options(5, start));
    TuningSpace space(1024);
    assert_true(t.current() == start);
    t.score_point(1.0);
    assert_true(t.current() == space.params({0.5, 0.5, 0.0}));  // the cache the other way
    t.score_point(2.0);
    assert_true(t.current() == space.params({0.25, 0.25, 1.0}));
    t.score_point(3.0);
    assert_false(t.done());
    t.score_point(0.5);
    t.score_point(0.5);
    assert_true(t.done());
    assert_int_equal(t.points_scored(), 5);
    // Kept: the best predicted point, here the best sample.
    assert_true(t.current() == space.params({0.25, 0.25, 1.0}));
    t.score_point(9.0);  // after the end: ignored
    assert_int_equal(t.points_scored(), 5);
}

void test_samples_are_ticked_and_logged(void **) {
    const std::string log = "/tmp/hvd_test_autotuner." + std::to_string(getpid()) + ".csv";
    const TunedParams start{4 * kMiB, 1000, 0};
    {
        Autotuner t(options(2, start, log, 0));  // the cache not tuned
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
        assert_true(t.current() == TuningSpace(0).params({0.5, 0.5}));
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
    assert_int_equal(lines.size(), 4);
    assert_string_equal(lines[0].c_str(),
                        "sample,fusion_threshold_bytes,cycle_time_ms,cache_capacity,"
                        "score_bytes_per_s,state");
    assert_string_equal(lines[1].c_str(), "1,4194304,1.000,0,2000,warmup");
    // 1000 bytes over 1.001 s.
    assert_string_equal(lines[2].c_str(), "2,4194304,1.000,0,999,sample");
    assert_string_equal(lines[3].c_str(), "3,4194304,1.000,0,1000,sample");
}

// A throughput peaked at 16 MiB and no cycle time, 3x with the cache: the search gets within
// 5 % of the peak within its 20 points, and keeps a point within 5 %.
double throughput(const TunedParams &p) {
    double f = std::log2(1.0 + static_cast<double>(p.fusion_threshold_bytes) / 65536.0) -
               std::log2(1.0 + 256.0);
    double c = static_cast<double>(p.cycle_time_us) / 1000.0;
    return (p.cache_capacity > 0 ? 3.0 : 1.0) / (1.0 + 0.02 * f * f + 0.5 * c);
}

void test_search_reaches_the_peak(void **) {
    Autotuner t(options(20, TunedParams{128 * kMiB, 0, 1024}));
    const double peak = 3.0;
    int first_within = 0;
    while (!t.done()) {
        double y = throughput(t.current());
        if (first_within == 0 && y >= 0.95 * peak) first_within = t.points_scored() + 1;
        t.score_point(y);
    }
    if (first_within == 0) fail_msg("no point within 5 %% of the peak");
    if (throughput(t.current()) < 0.95 * peak)
        fail_msg("kept %lld bytes, %lld us, cache %lld: %g",
                 (long long)t.current().fusion_threshold_bytes,
                 (long long)t.current().cycle_time_us, (long long)t.current().cache_capacity,
                 throughput(t.current()));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space_scales),
        cmocka_unit_test(test_points_in_order),
        cmocka_unit_test(test_samples_are_ticked_and_logged),
        cmocka_unit_test(test_search_reaches_the_peak),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
