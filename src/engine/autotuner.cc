// SPDX-License-Identifier: Apache-2.0
#include "engine/autotuner.h"

#include <algorithm>

namespace hvd::engine {

namespace {

// A sample also lasts at least this long, so that timer resolution does not dominate.
constexpr auto kMinSampleTime = std::chrono::milliseconds(5);

}  // namespace

std::vector<TunedParams> autotune_grid() {
    const int64_t mib = 1LL << 20;
    const int64_t thresholds[] = {0, 1 * mib, 4 * mib, 16 * mib, 64 * mib, 128 * mib};
    const int64_t cycles_us[] = {0, 500, 1000, 2500, 5000};
    std::vector<TunedParams> grid;
    for (int64_t c : cycles_us)
        for (int64_t t : thresholds)
            grid.push_back(TunedParams{t, c});
    return grid;
}

Autotuner::Autotuner(const std::string &log_path, int32_t warmup_samples, int32_t steps_per_sample)
    : grid_(autotune_grid()),
      best_score_of_point_(grid_.size(), 0.0),
      warmup_samples_(std::max(0, warmup_samples)),
      steps_per_sample_(std::max(1, steps_per_sample)) {
    current_ = grid_.front();
    if (!log_path.empty()) {
        log_ = std::fopen(log_path.c_str(), "w");
        if (log_ != nullptr) {
            std::fprintf(log_,
                         "sample,fusion_threshold_bytes,cycle_time_ms,score_bytes_per_s,"
                         "state\n");
            std::fflush(log_);
        }
    }
    start_point(Clock::now());
}

Autotuner::~Autotuner() {
    if (log_ != nullptr) std::fclose(log_);
}

void Autotuner::start_point(Clock::time_point now) {
    samples_in_point_ = 0;
    bytes_ = 0;
    steps_ = 0;
    sample_start_ = now;
}

void Autotuner::log_line(const char *state, double score) {
    if (log_ == nullptr) return;
    std::fprintf(log_, "%lld,%lld,%.3f,%.0f,%s\n", static_cast<long long>(sample_index_),
                 static_cast<long long>(current_.fusion_threshold_bytes),
                 static_cast<double>(current_.cycle_time_us) / 1000.0, score, state);
    std::fflush(log_);
}

bool Autotuner::tick(Clock::time_point now) {
    if (done_ || steps_ < steps_per_sample_ || now - sample_start_ < kMinSampleTime) return false;
    double seconds = std::chrono::duration<double>(now - sample_start_).count();
    double score = static_cast<double>(bytes_) / seconds;
    bool warmup = samples_in_point_ < warmup_samples_;
    ++sample_index_;
    log_line(warmup ? "warmup" : "sample", score);
    if (!warmup) best_score_of_point_[point_] = std::max(best_score_of_point_[point_], score);
    ++samples_in_point_;
    bytes_ = 0;
    steps_ = 0;
    sample_start_ = now;
    if (samples_in_point_ < warmup_samples_ + samples_per_point_) return false;
    if (point_ + 1 < grid_.size()) {
        current_ = grid_[++point_];
        start_point(now);
        return true;
    }
    // Searched every point: keep the best one.
    auto best = std::max_element(best_score_of_point_.begin(), best_score_of_point_.end());
    point_ = static_cast<size_t>(best - best_score_of_point_.begin());
    current_ = grid_[point_];
    done_ = true;
    log_line("final", *best);
    return true;
}

}  // namespace hvd::engine
