// SPDX-License-Identifier: Apache-2.0
// How integers are scaled by a factor that is exactly 1/n (Average's 1/size): divided by n,
// not multiplied by the rounded reciprocal, whose product can fall just short of the exact
// quotient and truncate one lower (49 * (1.0 / 49) is 0.99999999999999989). Shared by the host
// scaling (reduce/scale.cc) and the GPU module's kernels (gpu/module/scale_kernels.cu).
#pragma once

#include <cmath>

namespace hvd::reduce {

// n where factor == 1.0 / n exactly for an integer |n| >= 2 (below 2^53), else 0. Pure.
inline double integer_divisor(double factor) {
    const double a = std::fabs(factor);
    if (!(a > 0.0) || a > 0.5) return 0.0;
    const double n = std::nearbyint(1.0 / a);
    return n >= 2.0 && n < 9007199254740992.0 && 1.0 / n == a ? std::copysign(n, factor) : 0.0;
}

}  // namespace hvd::reduce
