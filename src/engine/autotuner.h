// SPDX-License-Identifier: Apache-2.0
// Online tuning of the fusion threshold and the cycle time (HVD_AUTOTUNE=1), run by the
// coordinator (rank 0) for the whole job. It measures throughput (bytes of tensors the
// collectives carried per second of wall time) over samples of HVD_AUTOTUNE_STEPS_PER_SAMPLE
// collectives, tries every point of a fixed grid (after HVD_AUTOTUNE_WARMUP_SAMPLES discarded
// samples per point), then keeps the best point: an exhaustive search of a finite grid, so it
// ends after a known number of samples. Each sample goes to HVD_AUTOTUNE_LOG as a CSV line.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace hvd::engine {

struct TunedParams {
    int64_t fusion_threshold_bytes = 0;
    int64_t cycle_time_us = 0;
    bool operator==(const TunedParams &o) const {
        return fusion_threshold_bytes == o.fusion_threshold_bytes &&
               cycle_time_us == o.cycle_time_us;
    }
};

class Autotuner {
  public:
    using Clock = std::chrono::steady_clock;

    // log_path: HVD_AUTOTUNE_LOG ("" for none). Starts at the grid's first point.
    Autotuner(const std::string &log_path, int32_t warmup_samples, int32_t steps_per_sample);
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

    const TunedParams &current() const { return current_; }
    bool done() const { return done_; }
    size_t grid_size() const { return grid_.size(); }

  private:
    void log_line(const char *state, double score);
    void start_point(Clock::time_point now);

    std::vector<TunedParams> grid_;
    std::vector<double> best_score_of_point_;
    size_t point_ = 0;
    TunedParams current_;
    bool done_ = false;
    int32_t warmup_samples_;
    int32_t steps_per_sample_;
    int32_t samples_in_point_ = 0;
    int32_t samples_per_point_ = 2;
    uint64_t bytes_ = 0;
    int64_t steps_ = 0;
    int64_t sample_index_ = 0;
    Clock::time_point sample_start_{};
    std::FILE *log_ = nullptr;
};

// The points the search visits, in order: every fusion threshold for each cycle time.
std::vector<TunedParams> autotune_grid();

}  // namespace hvd::engine
