// SPDX-License-Identifier: Apache-2.0
#include "engine/gaussian_process.h"

#include <cmath>

namespace hvd::engine {

namespace {

constexpr double kJitter = 1e-9;  // keeps the factorisation stable with zero noise
constexpr double kLog2Pi = 1.8378770664093453;

}  // namespace

const std::vector<double> &GaussianProcess::length_scales() {
    static const std::vector<double> ladder = {0.08, 0.12, 0.18, 0.25, 0.35, 0.5, 0.7, 1.0};
    return ladder;
}

bool cholesky(const std::vector<double> &a, size_t n, std::vector<double> *l) {
    l->assign(n * n, 0.0);
    for (size_t j = 0; j < n; ++j) {
        double d = a[j * n + j];
        for (size_t k = 0; k < j; ++k)
            d -= (*l)[j * n + k] * (*l)[j * n + k];
        if (!(d > 0.0)) return false;
        const double ljj = std::sqrt(d);
        (*l)[j * n + j] = ljj;
        for (size_t i = j + 1; i < n; ++i) {
            double s = a[i * n + j];
            for (size_t k = 0; k < j; ++k)
                s -= (*l)[i * n + k] * (*l)[j * n + k];
            (*l)[i * n + j] = s / ljj;
        }
    }
    return true;
}

void forward_substitute(const std::vector<double> &l, size_t n, std::vector<double> *b) {
    for (size_t i = 0; i < n; ++i) {
        double s = (*b)[i];
        for (size_t k = 0; k < i; ++k)
            s -= l[i * n + k] * (*b)[k];
        (*b)[i] = s / l[i * n + i];
    }
}

namespace {

// Solves L^T z = b in place.
void backward_substitute(const std::vector<double> &l, size_t n, std::vector<double> *b) {
    for (size_t i = n; i-- > 0;) {
        double s = (*b)[i];
        for (size_t k = i + 1; k < n; ++k)
            s -= l[k * n + i] * (*b)[k];
        (*b)[i] = s / l[i * n + i];
    }
}

}  // namespace

double GaussianProcess::kernel(const Point &a, const Point &b, double l) const {
    double d2 = 0.0;
    for (size_t i = 0; i < a.size(); ++i)
        d2 += (a[i] - b[i]) * (a[i] - b[i]);
    return std::exp(-d2 / (2.0 * l * l));
}

bool GaussianProcess::factor(double l, std::vector<double> *chol, std::vector<double> *weights,
                             double *log_likelihood) const {
    const size_t n = xs_.size();
    std::vector<double> k(n * n);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j)
            k[i * n + j] = kernel(xs_[i], xs_[j], l) + (i == j ? noise_ * noise_ + kJitter : 0.0);
    if (!cholesky(k, n, chol)) return false;
    *weights = ys_;
    forward_substitute(*chol, n, weights);
    double fit = 0.0;  // y^T K^-1 y = |L^-1 y|^2
    for (double z : *weights)
        fit += z * z;
    backward_substitute(*chol, n, weights);
    double log_det = 0.0;
    for (size_t i = 0; i < n; ++i)
        log_det += std::log((*chol)[i * n + i]);
    *log_likelihood = -0.5 * fit - log_det - 0.5 * static_cast<double>(n) * kLog2Pi;
    return true;
}

bool GaussianProcess::fit(const std::vector<Point> &xs, const std::vector<double> &ys, double noise,
                          double length_scale) {
    xs_ = xs;
    noise_ = noise;
    const size_t n = ys.size();
    double mean = 0.0;
    for (double y : ys)
        mean += y;
    mean /= static_cast<double>(n);
    double var = 0.0;
    for (double y : ys)
        var += (y - mean) * (y - mean);
    var /= static_cast<double>(n);
    y_mean_ = mean;
    y_scale_ = var > 0.0 ? std::sqrt(var) : (mean != 0.0 ? std::fabs(mean) : 1.0);
    ys_.resize(n);
    for (size_t i = 0; i < n; ++i)
        ys_[i] = (ys[i] - y_mean_) / y_scale_;
    const std::vector<double> fixed = {length_scale};
    const std::vector<double> &ladder = length_scale > 0.0 ? fixed : length_scales();
    bool any = false;
    for (double l : ladder) {
        std::vector<double> chol, weights;
        double ll = 0.0;
        if (!factor(l, &chol, &weights, &ll)) continue;
        if (any && ll <= log_likelihood_) continue;
        any = true;
        length_scale_ = l;
        log_likelihood_ = ll;
        chol_ = std::move(chol);
        weights_ = std::move(weights);
    }
    if (!any) {
        length_scale_ = ladder.back();
        chol_.clear();
        weights_.clear();
    }
    return any;
}

void GaussianProcess::predict(const Point &x, double *mean, double *variance) const {
    const size_t n = xs_.size();
    if (weights_.empty()) {
        *mean = y_mean_;
        *variance = y_scale_ * y_scale_;
        return;
    }
    std::vector<double> ks(n);
    double m = 0.0;
    for (size_t i = 0; i < n; ++i) {
        ks[i] = kernel(xs_[i], x, length_scale_);
        m += ks[i] * weights_[i];
    }
    forward_substitute(chol_, n, &ks);
    double v = 1.0;
    for (double z : ks)
        v -= z * z;
    *mean = y_mean_ + y_scale_ * m;
    *variance = (v > 0.0 ? v : 0.0) * y_scale_ * y_scale_;
}

}  // namespace hvd::engine
