// SPDX-License-Identifier: Apache-2.0
// A Gaussian process regressor for autotune's Bayesian optimisation: points in the unit cube,
// an RBF kernel exp(-|a - b|^2 / (2 l^2)) of unit signal variance on scores normalised to
// zero mean and unit variance, observation noise of standard deviation `noise` (in those
// units), and the length scale l chosen from a fixed ladder by the largest log marginal
// likelihood. Fitting is a Cholesky factorisation; no randomness, so equal samples give equal
// predictions on every run.
#pragma once

#include <cstddef>
#include <vector>

namespace hvd::engine {

class GaussianProcess {
  public:
    using Point = std::vector<double>;

    // The ladder the length scale is chosen from (in unit-cube distances).
    static const std::vector<double> &length_scales();

    // Fits the samples: xs[i] scored ys[i]. length_scale > 0 fixes l; 0 chooses it. Needs at
    // least one sample, every point of one dimension. Returns false (and predicts the prior)
    // when the kernel matrix is not positive definite.
    bool fit(const std::vector<Point> &xs, const std::vector<double> &ys, double noise,
             double length_scale = 0.0);

    // The posterior mean and variance of the score at x, in the scores' units.
    void predict(const Point &x, double *mean, double *variance) const;

    double length_scale() const { return length_scale_; }
    // The log marginal likelihood of the normalised scores under the chosen kernel.
    double log_marginal_likelihood() const { return log_likelihood_; }
    size_t size() const { return xs_.size(); }

  private:
    // Cholesky factor and weights for length scale l; false when not positive definite.
    bool factor(double l, std::vector<double> *chol, std::vector<double> *weights,
                double *log_likelihood) const;
    double kernel(const Point &a, const Point &b, double l) const;

    std::vector<Point> xs_;
    std::vector<double> ys_;  // normalised
    double y_mean_ = 0.0, y_scale_ = 1.0;
    double noise_ = 0.0;
    double length_scale_ = 0.0;
    double log_likelihood_ = 0.0;
    std::vector<double> chol_;     // lower triangle, row-major n x n
    std::vector<double> weights_;  // K^-1 y
};

// Solves L z = b in place for a lower-triangular row-major n x n matrix L.
void forward_substitute(const std::vector<double> &l, size_t n, std::vector<double> *b);

// L with L L^T = a (row-major n x n, symmetric); false when a is not positive definite.
bool cholesky(const std::vector<double> &a, size_t n, std::vector<double> *l);

}  // namespace hvd::engine
