// SPDX-License-Identifier: Apache-2.0
// Online tuning of the fusion threshold, the cycle time, the response cache's on/off switch
// and, in a job that spans hosts, the hierarchical algorithms' switches (HVD_AUTOTUNE=1;
// engine/tuning_space.h says which are searched), run by the coordinator (rank 0) for the
// whole job, by Bayesian optimisation as Horovod tunes. It measures throughput (bytes of
// tensors the collectives carried per second of wall time) over samples of
// HVD_AUTOTUNE_STEPS_PER_SAMPLE collectives. The first HVD_AUTOTUNE_WARMUP_SAMPLES samples of
// the search are discarded (as Horovod's warm-up); then each point tried gets two samples that
// count (its score is the better one). The first point is the configuration the search
// started from, the next two a fixed spread (the first with every switch the other way); after
// them a Gaussian process over the scores so far picks the point of largest expected
// improvement (engine/bayesian_optimizer.h). After HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES points
// the point of best predicted score is kept. HVD_AUTOTUNE_SEARCH=grid instead scores every
// point of TuningSpace::grid() in order, with the same samples, and keeps the best scored.
// With every parameter held there is nothing to search: the search is done at once. Each
// sample goes to HVD_AUTOTUNE_LOG as a CSV line.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/bayesian_optimizer.h"
#include "engine/tuning_space.h"

namespace hvd::engine {

class Autotuner {
  public:
    using Clock = std::chrono::steady_clock;

    enum class Search { kBayesian, kGrid };

    struct Options {
        Search search = Search::kBayesian;  // HVD_AUTOTUNE_SEARCH
        std::string log_path;               // HVD_AUTOTUNE_LOG ("" for none)
        int32_t warmup_samples = 1;
        int32_t steps_per_sample = 10;
        int32_t max_points = 20;  // HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES (Bayesian only)
        double noise = 0.2;       // HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE
        TunedParams start;        // the configuration the search starts from
        TuningChoices choices;    // what is searched; the rest keeps its start value
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
    int32_t points_scored() const { return scored_; }
    const TuningSpace &space() const { return space_; }

  private:
    void log_line(const char *state, double score);
    void start_point(Clock::time_point now);

    TuningSpace space_;
    BayesianOptimizer optimizer_;
    std::vector<std::vector<double>> grid_;  // a grid search's points; empty: Bayesian
    std::vector<double> best_x_;             // the best scored point
    double best_score_ = -1.0;
    int32_t scored_ = 0;
    std::vector<double> start_;  // the first point, in the cube
    std::vector<double> x_;      // current_ in the cube
    TunedParams current_;
    bool done_ = false;
    int32_t warmups_left_;  // the search's first samples, discarded
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
