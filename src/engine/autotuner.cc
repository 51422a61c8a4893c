// SPDX-License-Identifier: Apache-2.0
#include "engine/autotuner.h"

#include <algorithm>
#include <cmath>

namespace hvd::engine {

namespace {

// A sample also lasts at least this long, so that timer resolution does not dominate.
constexpr auto kMinSampleTime = std::chrono::milliseconds(5);
constexpr int32_t kScoredSamplesPerPoint = 2;
// The search's seed: fixed, so that the same scores give the same points on every run.
constexpr uint64_t kSeed = 0x6876645f74756e65ULL;

// Log scales that include 0: v = s (2^(x log2(1 + max / s)) - 1) for x in [0, 1], with s
// the step below which values count as about equal.
constexpr double kFusionScaleBytes = 64.0 * 1024.0;
constexpr double kCycleScaleUs = 50.0;

double from_unit(double x, double scale, double max) {
    return scale * (std::exp2(x * std::log2(1.0 + max / scale)) - 1.0);
}

double to_unit(double v, double scale, double max) {
    v = std::min(max, std::max(0.0, v));
    return std::log2(1.0 + v / scale) / std::log2(1.0 + max / scale);
}

}  // namespace

std::vector<int> TuningSpace::levels() const {
    return cache_capacity_ > 0 ? std::vector<int>{0, 0, 2} : std::vector<int>{0, 0};
}

TunedParams TuningSpace::params(const std::vector<double> &x) const {
    TunedParams p;
    p.fusion_threshold_bytes =
        std::llround(from_unit(x[0], kFusionScaleBytes, static_cast<double>(kMaxFusionBytes)));
    p.cycle_time_us =
        std::llround(from_unit(x[1], kCycleScaleUs, static_cast<double>(kMaxCycleUs)));
    p.cache_capacity = x.size() > 2 && x[2] > 0.5 ? cache_capacity_ : 0;
    return p;
}

std::vector<double> TuningSpace::point(const TunedParams &p) const {
    std::vector<double> x = {to_unit(static_cast<double>(p.fusion_threshold_bytes),
                                     kFusionScaleBytes, static_cast<double>(kMaxFusionBytes)),
                             to_unit(static_cast<double>(p.cycle_time_us), kCycleScaleUs,
                                     static_cast<double>(kMaxCycleUs))};
    if (cache_capacity_ > 0) x.push_back(p.cache_capacity > 0 ? 1.0 : 0.0);
    return x;
}

Autotuner::Autotuner(const Options &o)
    : space_(o.cache_capacity_on),
      optimizer_(space_.levels(), o.noise, kSeed),
      warmup_samples_(std::max(0, o.warmup_samples)),
      steps_per_sample_(std::max(1, o.steps_per_sample)),
      max_points_(std::max(1, o.max_points)) {
    start_ = optimizer_.snap(space_.point(o.start));
    x_ = start_;
    current_ = space_.params(x_);
    if (!o.log_path.empty()) {
        log_ = std::fopen(o.log_path.c_str(), "w");
        if (log_ != nullptr) {
            std::fprintf(log_,
                         "sample,fusion_threshold_bytes,cycle_time_ms,cache_capacity,"
                         "score_bytes_per_s,state\n");
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
    point_score_ = 0.0;
    bytes_ = 0;
    steps_ = 0;
    sample_start_ = now;
}

void Autotuner::log_line(const char *state, double score) {
    if (log_ == nullptr) return;
    std::fprintf(log_, "%lld,%lld,%.3f,%lld,%.0f,%s\n", static_cast<long long>(sample_index_),
                 static_cast<long long>(current_.fusion_threshold_bytes),
                 static_cast<double>(current_.cycle_time_us) / 1000.0,
                 static_cast<long long>(current_.cache_capacity), score, state);
    std::fflush(log_);
}

bool Autotuner::tick(Clock::time_point now) {
    if (done_ || steps_ < steps_per_sample_ || now - sample_start_ < kMinSampleTime) return false;
    double seconds = std::chrono::duration<double>(now - sample_start_).count();
    double score = static_cast<double>(bytes_) / seconds;
    bool warmup = samples_in_point_ < warmup_samples_;
    ++sample_index_;
    log_line(warmup ? "warmup" : "sample", score);
    if (!warmup) point_score_ = std::max(point_score_, score);
    ++samples_in_point_;
    bytes_ = 0;
    steps_ = 0;
    sample_start_ = now;
    if (samples_in_point_ < warmup_samples_ + kScoredSamplesPerPoint) return false;
    score_point(point_score_);
    start_point(now);
    return true;
}

void Autotuner::score_point(double score) {
    if (done_) return;
    optimizer_.add_sample(x_, score);
    const size_t scored = optimizer_.size();
    if (static_cast<int32_t>(scored) >= max_points_) {
        // Searched enough: keep the point of best predicted score.
        x_ = optimizer_.best();
        current_ = space_.params(x_);
        done_ = true;
        double mean = 0.0, variance = 0.0;
        optimizer_.model().predict(x_, &mean, &variance);
        log_line("final", mean);
        return;
    }
    // Two spread points first (the first with the cache switched the other way), then the
    // model's choice.
    if (scored <= 2) {
        x_ = scored == 1 ? std::vector<double>{0.5, 0.5} : std::vector<double>{0.25, 0.25};
        if (start_.size() > 2) x_.push_back(scored == 1 ? 1.0 - start_[2] : start_[2]);
    } else {
        x_ = optimizer_.next_sample();
    }
    current_ = space_.params(x_);
}

}  // namespace hvd::engine
