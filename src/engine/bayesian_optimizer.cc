// SPDX-License-Identifier: Apache-2.0
#include "engine/bayesian_optimizer.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

namespace hvd::engine {

namespace {

constexpr int kCandidates = 2048;  // random points the acquisition is evaluated at
constexpr int kRefined = 4;        // best candidates refined by the pattern search
constexpr double kFirstStep = 0.1;
constexpr int kHalvings = 7;
constexpr double kXi = 0.01;  // margin of improvement, in standard deviations of the scores

double uniform01(std::mt19937_64 &rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

double expected_improvement(double mean, double variance, double best, double xi) {
    const double gain = mean - best - xi;
    const double sigma = variance > 0.0 ? std::sqrt(variance) : 0.0;
    if (sigma <= 0.0) return gain > 0.0 ? gain : 0.0;
    const double z = gain / sigma;
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    return gain * cdf + sigma * pdf;
}

BayesianOptimizer::BayesianOptimizer(std::vector<int> levels, double noise, uint64_t seed)
    : levels_(std::move(levels)), noise_(noise), seed_(seed) {}

BayesianOptimizer::Point BayesianOptimizer::snap(Point x) const {
    for (size_t d = 0; d < x.size(); ++d) {
        double v = std::min(1.0, std::max(0.0, x[d]));
        if (levels_[d] >= 2) {
            const double steps = levels_[d] - 1;
            v = std::round(v * steps) / steps;
        }
        x[d] = v;
    }
    return x;
}

void BayesianOptimizer::add_sample(const Point &x, double score) {
    xs_.push_back(snap(x));
    ys_.push_back(score);
    gp_.fit(xs_, ys_, noise_);
}

BayesianOptimizer::Point BayesianOptimizer::best() const {
    Point centre = snap(Point(levels_.size(), 0.5));
    if (xs_.empty()) return centre;
    size_t best = 0;
    double best_mean = 0.0;
    for (size_t i = 0; i < xs_.size(); ++i) {
        double mean = 0.0, var = 0.0;
        gp_.predict(xs_[i], &mean, &var);
        if (i == 0 || mean > best_mean) {
            best = i;
            best_mean = mean;
        }
    }
    return xs_[best];
}

double BayesianOptimizer::acquisition(const Point &x, double best, double xi) const {
    double mean = 0.0, var = 0.0;
    gp_.predict(x, &mean, &var);
    return expected_improvement(mean, var, best, xi);
}

// A pattern search from x: each continuous coordinate moved by +-step, every level of the
// others, keeping any move that raises the expected improvement; the step halves when none
// does.
void BayesianOptimizer::refine(Point *x, double *ei, double best, double xi) const {
    double step = kFirstStep;
    for (int h = 0; h < kHalvings;) {
        bool moved = false;
        for (size_t d = 0; d < x->size(); ++d) {
            std::vector<double> values;
            if (levels_[d] >= 2) {
                for (int k = 0; k < levels_[d]; ++k)
                    values.push_back(static_cast<double>(k) / (levels_[d] - 1));
            } else {
                values = {(*x)[d] - step, (*x)[d] + step};
            }
            for (double v : values) {
                Point y = *x;
                y[d] = v;
                y = snap(y);
                double e = acquisition(y, best, xi);
                if (e > *ei) {
                    *x = y;
                    *ei = e;
                    moved = true;
                }
            }
        }
        if (!moved) {
            step /= 2.0;
            ++h;
        }
    }
}

BayesianOptimizer::Point BayesianOptimizer::next_sample() {
    const size_t dims = levels_.size();
    if (xs_.empty()) return snap(Point(dims, 0.5));
    double best = 0.0;
    {
        Point b = this->best();
        double var = 0.0;
        gp_.predict(b, &best, &var);
    }
    double sd = 0.0, mean = 0.0;
    for (double y : ys_)
        mean += y;
    mean /= static_cast<double>(ys_.size());
    for (double y : ys_)
        sd += (y - mean) * (y - mean);
    sd = std::sqrt(sd / static_cast<double>(ys_.size()));
    const double xi = kXi * sd;

    std::mt19937_64 rng(seed_ + xs_.size());
    std::vector<std::pair<double, Point>> scored;
    scored.reserve(kCandidates);
    for (int c = 0; c < kCandidates; ++c) {
        Point x(dims);
        for (double &v : x)
            v = uniform01(rng);
        x = snap(x);
        scored.emplace_back(acquisition(x, best, xi), std::move(x));
    }
    // Stable: equal expected improvements keep the order the generator made.
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto &a, const auto &b) { return a.first > b.first; });
    Point chosen = scored.front().second;
    double chosen_ei = scored.front().first;
    for (int r = 0; r < kRefined && r < static_cast<int>(scored.size()); ++r) {
        Point x = scored[static_cast<size_t>(r)].second;
        double ei = scored[static_cast<size_t>(r)].first;
        refine(&x, &ei, best, xi);
        if (ei > chosen_ei) {
            chosen = x;
            chosen_ei = ei;
        }
    }
    return chosen;
}

}  // namespace hvd::engine
