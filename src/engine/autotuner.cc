// SPDX-License-Identifier: Apache-2.0
#include "engine/autotuner.h"

#include <algorithm>

namespace hvd::engine {

namespace {

// A sample also lasts at least this long, so that timer resolution does not dominate.
constexpr auto kMinSampleTime = std::chrono::milliseconds(5);
constexpr int32_t kScoredSamplesPerPoint = 2;
// The search's seed: fixed, so that the same scores give the same points on every run.
constexpr uint64_t kSeed = 0x6876645f74756e65ULL;

}  // namespace

Autotuner::Autotuner(const Options &o)
    : space_(o.choices, o.start),
      optimizer_(space_.levels(), o.noise, kSeed),
      warmups_left_(std::max(0, o.warmup_samples)),
      steps_per_sample_(std::max(1, o.steps_per_sample)),
      max_points_(std::max(1, o.max_points)) {
    start_ = optimizer_.snap(space_.point(o.start));
    x_ = start_;
    if (o.search == Search::kGrid) {
        grid_ = space_.grid();
        max_points_ = static_cast<int32_t>(grid_.size());
        x_ = grid_.front();
    }
    current_ = space_.params(x_);
    if (!o.log_path.empty()) {
        log_ = std::fopen(o.log_path.c_str(), "w");
        if (log_ != nullptr) {
            std::fprintf(log_,
                         "sample,fusion_threshold_bytes,cycle_time_ms,cache_capacity,"
                         "hierarchical,score_bytes_per_s,state\n");
            std::fflush(log_);
        }
    }
    start_point(Clock::now());
    if (space_.dims() == 0) {  // every parameter held
        done_ = true;
        log_line("final", 0.0);
    }
}

Autotuner::~Autotuner() {
    if (log_ != nullptr) std::fclose(log_);
}

void Autotuner::start_point(Clock::time_point now) {
    samples_in_point_ = 0;
    point_score_ = 0.0;
    bytes_ = 0;
    steps_ = 0;
    sample_start_ = now;
}

void Autotuner::log_line(const char *state, double score) {
    if (log_ == nullptr) return;
    std::fprintf(log_, "%lld,%lld,%.3f,%lld,%s,%.0f,%s\n", static_cast<long long>(sample_index_),
                 static_cast<long long>(current_.fusion_threshold_bytes),
                 static_cast<double>(current_.cycle_time_us) / 1000.0,
                 static_cast<long long>(current_.cache_capacity),
                 hierarchical_names(current_.hierarchical_ops).c_str(), score, state);
    std::fflush(log_);
}

bool Autotuner::tick(Clock::time_point now) {
    if (done_ || steps_ < steps_per_sample_ || now - sample_start_ < kMinSampleTime) return false;
    double seconds = std::chrono::duration<double>(now - sample_start_).count();
    double score = static_cast<double>(bytes_) / seconds;
    bool warmup = warmups_left_ > 0;
    ++sample_index_;
    log_line(warmup ? "warmup" : "sample", score);
    bytes_ = 0;
    steps_ = 0;
    sample_start_ = now;
    if (warmup) {
        --warmups_left_;
        return false;
    }
    point_score_ = std::max(point_score_, score);
    if (++samples_in_point_ < kScoredSamplesPerPoint) return false;
    score_point(point_score_);
    start_point(now);
    return true;
}

void Autotuner::score_point(double score) {
    if (done_) return;
    const size_t scored = static_cast<size_t>(++scored_);
    if (score > best_score_) {
        best_score_ = score;
        best_x_ = x_;
    }
    if (grid_.empty()) optimizer_.add_sample(x_, score);
    if (scored_ >= max_points_) {
        // Searched enough: keep the best point (Bayesian: of best predicted score).
        double final_score = best_score_;
        if (grid_.empty()) {
            x_ = optimizer_.best();
            double variance = 0.0;
            optimizer_.model().predict(x_, &final_score, &variance);
        } else {
            x_ = best_x_;
        }
        current_ = space_.params(x_);
        done_ = true;
        log_line("final", final_score);
        return;
    }
    if (!grid_.empty()) {
        x_ = grid_[scored];
        current_ = space_.params(x_);
        return;
    }
    // Two spread points first (the first with every switch the other way), then the model's
    // choice.
    if (scored <= 2) {
        const std::vector<int> levels = space_.levels();
        for (size_t d = 0; d < levels.size(); ++d) {
            if (levels[d] == 0)
                x_[d] = scored == 1 ? 0.5 : 0.25;
            else
                x_[d] = scored == 1 ? 1.0 - start_[d] : start_[d];
        }
    } else {
        x_ = optimizer_.next_sample();
    }
    current_ = space_.params(x_);
}

}  // namespace hvd::engine
