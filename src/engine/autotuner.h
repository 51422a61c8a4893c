// SPDX-License-Identifier: Apache-2.0
// Online tuning of the fusion threshold, the cycle time and the response cache's on/off switch
// (HVD_AUTOTUNE=1), run by the coordinator (rank 0) for the whole job, by Bayesian
// optimisation as Horovod tunes. It measures throughput (bytes of tensors the collectives
// carried per second of wall time) over samples of HVD_AUTOTUNE_STEPS_PER_SAMPLE collectives;
// each point tried gets HVD_AUTOTUNE_WARMUP_SAMPLES discarded samples, then two that count (its
// score is the better one). The first point is the configuration the search started from, the
// next two a fixed spread; after them a Gaussian process over the scores so far picks the point
// of largest expected improvement (engine/bayesian_optimizer.h). The fusion threshold
// (0 .. 128 MiB) and the cycle time (0 .. 5 ms) are searched on log scales that include 0; the
// cache is on (Options::cache_capacity_on) or off (0), and stays off when that is 0. After
// HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES points the point of best predicted score is kept. Each
// sample goes to HVD_AUTOTUNE_LOG as a CSV line.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/bayesian_optimizer.h"

namespace hvd::engine {

struct TunedParams {
    int64_t fusion_threshold_bytes = 0;
    int64_t cycle_time_us = 0;
    int64_t cache_capacity = 0;
    bool operator==(const TunedParams &o) const {
        return fusion_threshold_bytes == o.fusion_threshold_bytes &&
               cycle_time_us == o.cycle_time_us && cache_capacity == o.cache_capacity;
    }
};

// The search's ranges and scales: a point of the unit cube (fusion threshold, cycle time and,
// when the cache is tuned, the cache switch) and the parameters it stands for.
class TuningSpace {
  public:
    static constexpr int64_t kMaxFusionBytes = int64_t{128} << 20;
    static constexpr int64_t kMaxCycleUs = 5000;

    // cache_capacity: the capacity "on" stands for; 0: the cache is not tuned (stays off).
    explicit TuningSpace(int64_t cache_capacity) : cache_capacity_(cache_capacity) {}

    // Per dimension: 0 continuous, 2 a switch (BayesianOptimizer's levels).
    std::vector<int> levels() const;
    TunedParams params(const std::vector<double> &x) const;
    // The nearest point of the cube (values outside the ranges are clamped).
    std::vector<double> point(const TunedParams &p) const;

  private:
    int64_t cache_capacity_;
};

class Autotuner {
  public:
    using Clock = std::chrono::steady_clock;

    struct Options {
        std::string log_path;  // HVD_AUTOTUNE_LOG ("" for none)
        int32_t warmup_samples = 1;
        int32_t steps_per_sample = 10;
        int32_t max_points = 20;  // HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES
        double noise = 0.2;       // HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE
        TunedParams start;        // the configuration the search starts from
        // The capacity the cache's "on" stands for; 0: the cache is not tuned (stays off).
        int64_t cache_capacity_on = 0;
    };

    explicit Autotuner(const Options &options);
    ~Autotuner();
    Autotuner(const Autotuner &) = delete;
    Autotuner &operator=(const Autotuner &) = delete;

    // A collective that carried `bytes` of tensor data ran.
    void record(uint64_t bytes) {
        bytes_ += bytes;
        ++steps_;
    }
    // Closes the sample when it is complete. Returns true when the parameters to use changed
    // (read them with current()).
    bool tick(Clock::time_point now);
    // The point's score is known: it joins the model, and the next point (or the final
    // choice) becomes current. Public for tests, which score points without a clock.
    void score_point(double score);

    const TunedParams &current() const { return current_; }
    bool done() const { return done_; }
    int32_t max_points() const { return max_points_; }
    int32_t points_scored() const { return static_cast<int32_t>(optimizer_.size()); }

  private:
    void log_line(const char *state, double score);
    void start_point(Clock::time_point now);

    TuningSpace space_;
    BayesianOptimizer optimizer_;
    std::vector<double> start_;  // the first point, in the cube
    std::vector<double> x_;      // current_ in the cube
    TunedParams current_;
    bool done_ = false;
    int32_t warmup_samples_;
    int32_t steps_per_sample_;
    int32_t max_points_;
    int32_t samples_in_point_ = 0;
    double point_score_ = 0.0;
    uint64_t bytes_ = 0;
    int64_t steps_ = 0;
    int64_t sample_index_ = 0;
    Clock::time_point sample_start_{};
    std::FILE *log_ = nullptr;
};

}  // namespace hvd::engine
