// SPDX-License-Identifier: Apache-2.0
// Bayesian optimisation of a noisy score over the unit cube, for autotune: a Gaussian process
// (engine/gaussian_process.h) models the samples so far, and the next point to try is the one
// of largest expected improvement over the best predicted score, found among random
// candidates refined by a pattern search. Dimensions are continuous or take a few evenly
// spaced levels (a switch: 2 levels, 0 and 1). Randomness comes from a generator seeded with
// the seed and the number of samples, so the same scores lead to the same points on every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/gaussian_process.h"

namespace hvd::engine {

// The expected improvement over `best` of a score predicted as N(mean, variance), less the
// margin xi: E[max(0, Y - best - xi)].
double expected_improvement(double mean, double variance, double best, double xi);

class BayesianOptimizer {
  public:
    using Point = GaussianProcess::Point;

    // levels[d]: 0 for a continuous dimension d in [0, 1], k >= 2 for the values
    // 0, 1/(k-1), ..., 1. noise: the observation noise, in standard deviations of the scores.
    BayesianOptimizer(std::vector<int> levels, double noise, uint64_t seed);

    void add_sample(const Point &x, double score);
    // The point to sample next (snapped to the levels). Before any sample: the centre.
    Point next_sample();
    // The sampled point whose predicted score is highest (the noise averaged out by the
    // model); the centre before any sample.
    Point best() const;

    size_t size() const { return xs_.size(); }
    const GaussianProcess &model() const { return gp_; }
    // x snapped to the levels and clamped to [0, 1].
    Point snap(Point x) const;

  private:
    double acquisition(const Point &x, double best, double xi) const;
    void refine(Point *x, double *ei, double best, double xi) const;

    std::vector<int> levels_;
    double noise_;
    uint64_t seed_;
    std::vector<Point> xs_;
    std::vector<double> ys_;
    GaussianProcess gp_;
};

}  // namespace hvd::engine
