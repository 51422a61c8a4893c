// SPDX-License-Identifier: Apache-2.0
// Reduction kernels against scalar references written independently here: integer results
// are computed exactly in __int128 and reduced modulo 2^bits, floats per element with
// explicit NaN rules, 16-bit floats through float, bools as truth values. Every dtype x op
// runs over several lengths (including ones that are not multiples of any vector width or
// of the 256-element half-float block) and every aliasing pattern reduce_into allows.
//
// NaN rule checked here: floating Min/Max return NaN when either input is NaN (like
// torch.minimum); Sum/Product follow IEEE. Which NaN payload comes out is not specified.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "common/half.h"
#include "reduce/reduce.h"

namespace {

using hvd::reduce::reduce_inplace;
using hvd::reduce::reduce_into;
using hvd::reduce::reduce_into_twice;

constexpr int32_t kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
// 32771 and 131101: at least 32 KiB for every dtype (the kernels then interleave streams of
// 128-byte blocks) and at least 128 KiB (reduce_into_twice then stores both outputs in one
// pass), with ragged tails.
constexpr size_t kLengths[] = {0, 1, 7, 1000, 4099, 32771, 131101};

// ------------------------------------------------------------------ per-dtype references

// The value two's complement hardware keeps of an exact result: exact mod 2^bits, mapped
// into T's range.
template <class T>
T wrap_exact(__int128 exact) {
    const __int128 modulus = static_cast<__int128>(1) << (8 * sizeof(T));
    __int128 r = exact % modulus;
    if (r < 0) r += modulus;
    if (std::is_signed_v<T> && r >= modulus / 2) r -= modulus;
    return static_cast<T>(r);
}

template <class T>
struct IntTraits {
    using Elem = T;
    static T random(std::mt19937_64 &rng) { return static_cast<T>(rng()); }
    static T reference(int32_t op, T a, T b) {
        __int128 x = a, y = b;
        switch (op) {
            case HVD_OP_SUM:
                return wrap_exact<T>(x + y);
            case HVD_OP_PRODUCT:
                return wrap_exact<T>(x * y);
            case HVD_OP_MIN:
                return std::min(a, b);
            default:
                return std::max(a, b);
        }
    }
    static bool same(T x, T y) { return x == y; }
    static double show(T x) { return static_cast<double>(x); }
};

template <class F>
F float_reference(int32_t op, F a, F b) {
    const F nan = std::numeric_limits<F>::quiet_NaN();
    switch (op) {
        case HVD_OP_SUM:
            return a + b;
        case HVD_OP_PRODUCT:
            return a * b;
        case HVD_OP_MIN:
            return std::isnan(a) || std::isnan(b) ? nan : std::fmin(a, b);
        default:
            return std::isnan(a) || std::isnan(b) ? nan : std::fmax(a, b);
    }
}

// Mostly ordinary values, with infinities, NaN, signed zeros, extremes and subnormals mixed in.
template <class F>
F random_float(std::mt19937_64 &rng) {
    using L = std::numeric_limits<F>;
    static const F kSpecial[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), F(0),
                                 -F(0),          L::max(),      L::lowest(),    L::denorm_min()};
    if (rng() % 16 == 0) return kSpecial[rng() % (sizeof kSpecial / sizeof kSpecial[0])];
    return std::uniform_real_distribution<F>(F(-100), F(100))(rng);
}

template <class F>
struct FloatTraits {
    using Elem = F;
    static F random(std::mt19937_64 &rng) { return random_float<F>(rng); }
    static F reference(int32_t op, F a, F b) { return float_reference(op, a, b); }
    static bool same(F x, F y) { return (std::isnan(x) && std::isnan(y)) || x == y; }
    static double show(F x) { return static_cast<double>(x); }
};

// Half floats: random bit patterns (all classes: subnormal, inf, NaN); the reference computes
// in float and rounds with the converters that test_half.cc checks exhaustively.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
struct HalfTraits {
    using Elem = uint16_t;
    static uint16_t random(std::mt19937_64 &rng) { return static_cast<uint16_t>(rng()); }
    static uint16_t reference(int32_t op, uint16_t a, uint16_t b) {
        return Narrow(float_reference(op, Widen(a), Widen(b)));
    }
    static bool same(uint16_t x, uint16_t y) {
        return FloatTraits<float>::same(Widen(x), Widen(y));
    }
    static double show(uint16_t x) { return Widen(x); }
};
using Fp16Traits = HalfTraits<hvd::fp16_to_float, hvd::float_to_fp16>;
using Bf16Traits = HalfTraits<hvd::bf16_to_float, hvd::float_to_bf16>;

struct BoolTraits {
    using Elem = uint8_t;
    // 0..3: values other than 1 check that any nonzero byte counts as true.
    static uint8_t random(std::mt19937_64 &rng) { return static_cast<uint8_t>(rng() % 4); }
    static uint8_t reference(int32_t op, uint8_t a, uint8_t b) {
        bool x = a != 0, y = b != 0;
        bool any = op == HVD_OP_SUM || op == HVD_OP_MAX;
        return (any ? (x || y) : (x && y)) ? 1 : 0;
    }
    static bool same(uint8_t x, uint8_t y) { return x == y; }
    static double show(uint8_t x) { return x; }
};

// ------------------------------------------------------------------ the harness

template <class Traits>
using Vec = std::vector<typename Traits::Elem>;

template <class Traits>
Vec<Traits> random_vector(std::mt19937_64 &rng, size_t n) {
    Vec<Traits> v(n);
    for (auto &x : v)
        x = Traits::random(rng);
    return v;
}

template <class Traits>
Vec<Traits> reference(int32_t op, const Vec<Traits> &a, const Vec<Traits> &b) {
    Vec<Traits> out(a.size());
    for (size_t i = 0; i < a.size(); ++i)
        out[i] = Traits::reference(op, a[i], b[i]);
    return out;
}

template <class Traits>
void expect_equal(const Vec<Traits> &got, const Vec<Traits> &want, int32_t dtype, int32_t op,
                  const char *pattern) {
    assert_int_equal(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        if (!Traits::same(got[i], want[i])) {
            fail_msg("dtype %d op %d n %zu (%s): element %zu is %g, expected %g", dtype, op,
                     got.size(), pattern, i, Traits::show(got[i]), Traits::show(want[i]));
        }
    }
}

// Every call shape reduce_inplace / reduce_into allow, each against the same reference.
template <class Traits>
void check_aliasing_patterns(int32_t dtype, int32_t op, const Vec<Traits> &a,
                             const Vec<Traits> &b) {
    const size_t n = a.size();
    const Vec<Traits> want = reference<Traits>(op, a, b);

    Vec<Traits> acc = a;
    assert_int_equal(reduce_inplace(acc.data(), b.data(), n, dtype, op), HVD_OK);
    expect_equal<Traits>(acc, want, dtype, op, "inplace");

    Vec<Traits> out(n), a_copy = a, b_copy = b;
    assert_int_equal(reduce_into(out.data(), a_copy.data(), b_copy.data(), n, dtype, op), HVD_OK);
    expect_equal<Traits>(out, want, dtype, op, "into, separate output");
    expect_equal<Traits>(a_copy, a, dtype, op, "into leaves a alone");
    expect_equal<Traits>(b_copy, b, dtype, op, "into leaves b alone");

    assert_int_equal(reduce_into(a_copy.data(), a_copy.data(), b.data(), n, dtype, op), HVD_OK);
    expect_equal<Traits>(a_copy, want, dtype, op, "into, dst == a");

    assert_int_equal(reduce_into(b_copy.data(), a.data(), b_copy.data(), n, dtype, op), HVD_OK);
    expect_equal<Traits>(b_copy, want, dtype, op, "into, dst == b");

    // The result stored twice: separate outputs, the copy over a (an in-place shared-memory
    // allreduce) or over b, dst over a or b with the copy apart, and dst over a with the copy
    // over b (the last step of a reduction over three or more members, in place).
    enum Where { kApart, kOverA, kOverB };
    const Where cases[][2] = {{kApart, kApart}, {kApart, kOverA}, {kApart, kOverB},
                              {kOverA, kApart}, {kOverB, kApart}, {kOverA, kOverB}};
    for (const auto &c : cases) {
        Vec<Traits> x = a, y = b, d(n), e(n);
        auto place = [&](Where w, Vec<Traits> &apart) -> Vec<Traits> & {
            return w == kOverA ? x : w == kOverB ? y : apart;
        };
        Vec<Traits> &dst = place(c[0], d);
        Vec<Traits> &copy = place(c[1], e);
        assert_int_equal(
            reduce_into_twice(dst.data(), copy.data(), x.data(), y.data(), n, dtype, op), HVD_OK);
        static const char *const kWhere[] = {"apart", "over a", "over b"};
        char label[64];
        std::snprintf(label, sizeof label, "twice, dst %s, copy %s", kWhere[c[0]], kWhere[c[1]]);
        expect_equal<Traits>(dst, want, dtype, op, label);
        expect_equal<Traits>(copy, want, dtype, op, label);
        if (c[0] != kOverA && c[1] != kOverA) expect_equal<Traits>(x, a, dtype, op, label);
        if (c[0] != kOverB && c[1] != kOverB) expect_equal<Traits>(y, b, dtype, op, label);
    }
}

template <class Traits>
void check_self_reduction(int32_t dtype, int32_t op, const Vec<Traits> &a) {
    const Vec<Traits> want = reference<Traits>(op, a, a);
    Vec<Traits> x = a;
    assert_int_equal(reduce_inplace(x.data(), x.data(), x.size(), dtype, op), HVD_OK);
    expect_equal<Traits>(x, want, dtype, op, "inplace, dst == src");
    x = a;
    assert_int_equal(reduce_into(x.data(), x.data(), x.data(), x.size(), dtype, op), HVD_OK);
    expect_equal<Traits>(x, want, dtype, op, "into, dst == a == b");
}

template <class Traits>
void check_dtype(int32_t dtype) {
    std::mt19937_64 rng(0x5eed0000u + static_cast<unsigned>(dtype));
    for (int32_t op : kOps) {
        for (size_t n : kLengths) {
            Vec<Traits> a = random_vector<Traits>(rng, n);
            Vec<Traits> b = random_vector<Traits>(rng, n);
            check_aliasing_patterns<Traits>(dtype, op, a, b);
            check_self_reduction<Traits>(dtype, op, a);
        }
    }
}

void test_uint8(void **) {
    check_dtype<IntTraits<uint8_t>>(HVD_DTYPE_UINT8);
}
void test_int8(void **) {
    check_dtype<IntTraits<int8_t>>(HVD_DTYPE_INT8);
}
void test_uint16(void **) {
    check_dtype<IntTraits<uint16_t>>(HVD_DTYPE_UINT16);
}
void test_int16(void **) {
    check_dtype<IntTraits<int16_t>>(HVD_DTYPE_INT16);
}
void test_int32(void **) {
    check_dtype<IntTraits<int32_t>>(HVD_DTYPE_INT32);
}
void test_int64(void **) {
    check_dtype<IntTraits<int64_t>>(HVD_DTYPE_INT64);
}
void test_float16(void **) {
    check_dtype<Fp16Traits>(HVD_DTYPE_FLOAT16);
}
void test_bfloat16(void **) {
    check_dtype<Bf16Traits>(HVD_DTYPE_BFLOAT16);
}
void test_float32(void **) {
    check_dtype<FloatTraits<float>>(HVD_DTYPE_FLOAT32);
}
void test_float64(void **) {
    check_dtype<FloatTraits<double>>(HVD_DTYPE_FLOAT64);
}
void test_bool(void **) {
    check_dtype<BoolTraits>(HVD_DTYPE_BOOL);
}

// ------------------------------------------------------------------ hand-checked values

// A few results worked out by hand, so the references above are not the only judge.
void test_known_values(void **) {
    int8_t i8[] = {100, -128, 3};
    const int8_t i8_b[] = {100, -1, -5};
    assert_int_equal(reduce_inplace(i8, i8_b, 3, HVD_DTYPE_INT8, HVD_OP_SUM), HVD_OK);
    assert_int_equal(i8[0], -56);  // 200 wraps
    assert_int_equal(i8[1], 127);  // -129 wraps
    assert_int_equal(i8[2], -2);

    uint16_t u16[] = {65535, 300};
    const uint16_t u16_b[] = {65535, 300};
    assert_int_equal(reduce_inplace(u16, u16_b, 2, HVD_DTYPE_UINT16, HVD_OP_PRODUCT), HVD_OK);
    assert_int_equal(u16[0], 1);  // (2^16 - 1)^2 mod 2^16
    assert_int_equal(u16[1], 90000 - 65536);

    int64_t i64[] = {INT64_MAX, INT64_MIN};
    const int64_t i64_b[] = {1, -1};
    assert_int_equal(reduce_inplace(i64, i64_b, 2, HVD_DTYPE_INT64, HVD_OP_SUM), HVD_OK);
    assert_true(i64[0] == INT64_MIN);
    assert_true(i64[1] == INT64_MAX);

    uint8_t flags[] = {0, 2, 0, 7};
    const uint8_t flags_b[] = {0, 0, 5, 9};
    const uint8_t want_and[] = {0, 0, 0, 1}, want_or[] = {0, 1, 1, 1};
    uint8_t both[4];
    assert_int_equal(reduce_into(both, flags, flags_b, 4, HVD_DTYPE_BOOL, HVD_OP_PRODUCT), HVD_OK);
    assert_memory_equal(both, want_and, 4);
    assert_int_equal(reduce_inplace(flags, flags_b, 4, HVD_DTYPE_BOOL, HVD_OP_MAX), HVD_OK);
    assert_memory_equal(flags, want_or, 4);

    // fp16 sums exact in float but halfway between two fp16 values round to even:
    // 1 + 2^-11 -> 1, (1 + 2^-10) + 2^-11 -> 1 + 2^-9. bf16 likewise with 2^-8.
    uint16_t h[] = {0x3c00, 0x3c01};
    const uint16_t h_b[] = {0x1000, 0x1000};  // 2^-11
    assert_int_equal(reduce_inplace(h, h_b, 2, HVD_DTYPE_FLOAT16, HVD_OP_SUM), HVD_OK);
    assert_int_equal(h[0], 0x3c00);
    assert_int_equal(h[1], 0x3c02);
    uint16_t bf[] = {0x3f80, 0x3f81};
    const uint16_t bf_b[] = {0x3b80, 0x3b80};  // 2^-8
    assert_int_equal(reduce_inplace(bf, bf_b, 2, HVD_DTYPE_BFLOAT16, HVD_OP_SUM), HVD_OK);
    assert_int_equal(bf[0], 0x3f80);
    assert_int_equal(bf[1], 0x3f82);

    float f[] = {1.0f, NAN, 2.0f};
    const float f_b[] = {NAN, 1.0f, -3.0f};
    assert_int_equal(reduce_inplace(f, f_b, 3, HVD_DTYPE_FLOAT32, HVD_OP_MIN), HVD_OK);
    assert_true(std::isnan(f[0]) && std::isnan(f[1]));
    assert_true(f[2] == -3.0f);
}

void test_empty_and_unsupported(void **) {
    // count 0 touches no memory, so null pointers are fine.
    assert_int_equal(reduce_into(nullptr, nullptr, nullptr, 0, HVD_DTYPE_FLOAT32, HVD_OP_SUM),
                     HVD_OK);
    assert_int_equal(reduce_inplace(nullptr, nullptr, 0, HVD_DTYPE_BOOL, HVD_OP_MIN), HVD_OK);

    float x[2] = {1, 2}, y[2] = {3, 4};
    const int32_t bad_ops[] = {HVD_OP_AVERAGE, HVD_OP_ADASUM, -1, 6, 1000};
    for (int32_t op : bad_ops) {
        assert_false(hvd::reduce::op_supported(op));
        assert_int_equal(reduce_inplace(x, y, 2, HVD_DTYPE_FLOAT32, op), HVD_ERR_UNSUPPORTED);
        assert_int_equal(reduce_inplace(x, y, 2, HVD_DTYPE_BOOL, op), HVD_ERR_UNSUPPORTED);
        assert_int_equal(reduce_into(x, x, y, 0, HVD_DTYPE_INT32, op), HVD_ERR_UNSUPPORTED);
    }
    for (int32_t op : kOps)
        assert_true(hvd::reduce::op_supported(op));
    const int32_t bad_dtypes[] = {-1, 11, 1 << 20};
    for (int32_t dtype : bad_dtypes) {
        assert_int_equal(reduce_inplace(x, y, 2, dtype, HVD_OP_SUM), HVD_ERR_UNSUPPORTED);
        assert_int_equal(reduce_into(x, x, y, 0, dtype, HVD_OP_MAX), HVD_ERR_UNSUPPORTED);
    }
    assert_true(x[0] == 1.0f && x[1] == 2.0f);  // rejected calls write nothing
}

// ------------------------------------------------------------------ scaling

using hvd::reduce::scale_into;

template <class T, size_t N>
void expect_scaled(int32_t dtype, const T (&src)[N], double factor, const T (&want)[N]) {
    T out[N];
    assert_int_equal(scale_into(out, src, N, dtype, factor), HVD_OK);
    for (size_t i = 0; i < N; ++i) {
        if (out[i] != want[i]) {
            fail_msg("dtype %d: %g * %g gave %g, expected %g", dtype, static_cast<double>(src[i]),
                     factor, static_cast<double>(out[i]), static_cast<double>(want[i]));
        }
    }
}

// Horovod truncates toward zero; out-of-range results saturate.
void test_scale_integers(void **) {
    expect_scaled<int32_t>(HVD_DTYPE_INT32, {7, -7, 5, -5, 100, INT32_MAX, INT32_MIN, 0}, 0.5,
                           {3, -3, 2, -2, 50, 1073741823, -1073741824, 0});
    expect_scaled<int8_t>(HVD_DTYPE_INT8, {-5, 5, 100, -100, 127}, 0.3, {-1, 1, 30, -30, 38});
    expect_scaled<int8_t>(HVD_DTYPE_INT8, {100, -100, 64, -64}, 2.0, {127, -128, 127, -128});
    expect_scaled<uint8_t>(HVD_DTYPE_UINT8, {200, 1, 0}, -1.0, {0, 0, 0});
    expect_scaled<uint8_t>(HVD_DTYPE_UINT8, {200, 100, 3}, 1.5, {255, 150, 4});
    expect_scaled<int16_t>(HVD_DTYPE_INT16, {30000, -30000, -3}, 2.0, {32767, -32768, -6});
    expect_scaled<uint16_t>(HVD_DTYPE_UINT16, {40000, 7}, 2.0, {65535, 14});
    expect_scaled<int64_t>(HVD_DTYPE_INT64, {INT64_MAX, INT64_MIN, 3, -3}, 2.0,
                           {INT64_MAX, INT64_MIN, 6, -6});
    expect_scaled<int64_t>(HVD_DTYPE_INT64, {INT64_MIN, -9}, 0.5, {INT64_MIN / 2, -4});
    // Computed in float64: 2^53 + 1 is not a double, it rounds to 2^53 before scaling.
    expect_scaled<int64_t>(HVD_DTYPE_INT64, {(int64_t{1} << 53) + 1}, 0.5, {int64_t{1} << 52});
    // Non-finite factors: infinities saturate, NaN (and 0 * inf) give 0.
    const double inf = std::numeric_limits<double>::infinity();
    expect_scaled<int32_t>(HVD_DTYPE_INT32, {5, -5, 0}, inf, {INT32_MAX, INT32_MIN, 0});
    expect_scaled<int32_t>(HVD_DTYPE_INT32, {5, -5}, std::nan(""), {0, 0});
    // Average's factor 1/n divides: 49 * (1.0 / 49) would be 0.99999999999999989, truncated to
    // 0. A factor that only comes close to 1/n multiplies.
    expect_scaled<int32_t>(HVD_DTYPE_INT32, {49, -98, 48, 147, -1}, 1.0 / 49, {1, -2, 0, 3, 0});
    expect_scaled<int64_t>(HVD_DTYPE_INT64, {int64_t{49} << 40, 97}, 1.0 / 49,
                           {int64_t{1} << 40, 1});
    expect_scaled<uint8_t>(HVD_DTYPE_UINT8, {98, 255}, 1.0 / 49, {2, 5});
    expect_scaled<int32_t>(HVD_DTYPE_INT32, {49, -98}, -1.0 / 49, {-1, 2});
    expect_scaled<int32_t>(HVD_DTYPE_INT32, {49}, std::nextafter(1.0 / 49, 1.0), {1});
    expect_scaled<int32_t>(HVD_DTYPE_INT32, {49}, std::nextafter(1.0 / 49, 0.0), {0});
}

// Reference written as trunc-then-clamp, unlike the kernel's compare-then-cast; a factor that
// is exactly 1/n (for an integer n >= 2) divides by n.
template <class T>
T scaled_reference(T x, double factor) {
    const double n = factor != 0 ? std::round(1.0 / std::fabs(factor)) : 0.0;
    const bool divides = n >= 2 && 1.0 / n == std::fabs(factor);
    double p = std::trunc(divides ? static_cast<double>(x) / std::copysign(n, factor)
                                  : static_cast<double>(x) * factor);
    if (p > static_cast<double>(std::numeric_limits<T>::max()))
        return std::numeric_limits<T>::max();
    if (p < static_cast<double>(std::numeric_limits<T>::min()))
        return std::numeric_limits<T>::min();
    return static_cast<T>(p);
}

// Every value of a narrow integer type, scaled in place by awkward factors.
template <class T>
void sweep_narrow_integer(int32_t dtype) {
    const double factors[] = {-1.5, 0.3, 2.5, -0.0, 1e-9, 1.0 / 3.0, -7.25, 1000.5};
    std::vector<T> all;
    for (int64_t v = std::numeric_limits<T>::min(); v <= std::numeric_limits<T>::max(); ++v) {
        all.push_back(static_cast<T>(v));
    }
    for (double factor : factors) {
        std::vector<T> x = all;
        assert_int_equal(scale_into(x.data(), x.data(), x.size(), dtype, factor), HVD_OK);
        for (size_t i = 0; i < x.size(); ++i) {
            if (x[i] != scaled_reference(all[i], factor)) {
                fail_msg("dtype %d: %d * %g gave %d", dtype, static_cast<int>(all[i]), factor,
                         static_cast<int>(x[i]));
            }
        }
    }
}

void test_scale_integer_sweeps(void **) {
    sweep_narrow_integer<uint8_t>(HVD_DTYPE_UINT8);
    sweep_narrow_integer<int8_t>(HVD_DTYPE_INT8);
    sweep_narrow_integer<uint16_t>(HVD_DTYPE_UINT16);
    sweep_narrow_integer<int16_t>(HVD_DTYPE_INT16);
    std::mt19937_64 rng(7);
    std::vector<int32_t> x(4099);
    for (auto &v : x)
        v = static_cast<int32_t>(rng());
    std::vector<int32_t> out(x.size());
    assert_int_equal(scale_into(out.data(), x.data(), x.size(), HVD_DTYPE_INT32, -0.37), HVD_OK);
    for (size_t i = 0; i < x.size(); ++i)
        assert_int_equal(out[i], scaled_reference(x[i], -0.37));
}

// 16-bit floats: computed in float32 (the factor rounded to float first), rounded to even.
void test_scale_half_floats(void **) {
    const double tie11 = 1.0 + std::ldexp(1.0, -11);  // halfway between two fp16 at 1.0
    expect_scaled<uint16_t>(HVD_DTYPE_FLOAT16, {0x3c00, 0x3c01}, tie11, {0x3c00, 0x3c02});
    expect_scaled<uint16_t>(HVD_DTYPE_FLOAT16, {0x3c00}, 1.0 + 3 * std::ldexp(1.0, -12), {0x3c01});
    // The extra 2^-40 would break the tie upward in double, but does not survive (float).
    expect_scaled<uint16_t>(HVD_DTYPE_FLOAT16, {0x3c00}, tie11 + std::ldexp(1.0, -40), {0x3c00});
    // Overflow to inf, subnormal ties to even, negative values, NaN stays NaN.
    expect_scaled<uint16_t>(HVD_DTYPE_FLOAT16, {0x7bff, 0x0001, 0x0003, 0xc000, 0x7c00}, 2.0,
                            {0x7c00, 0x0002, 0x0006, 0xc400, 0x7c00});
    expect_scaled<uint16_t>(HVD_DTYPE_FLOAT16, {0x0001, 0x0003, 0xc000}, 0.5,
                            {0x0000, 0x0002, 0xbc00});
    uint16_t nan16 = 0x7e00;
    assert_int_equal(scale_into(&nan16, &nan16, 1, HVD_DTYPE_FLOAT16, 3.0), HVD_OK);
    assert_true(std::isnan(hvd::fp16_to_float(nan16)));

    const double tie8 = 1.0 + std::ldexp(1.0, -8);  // halfway between two bf16 at 1.0
    expect_scaled<uint16_t>(HVD_DTYPE_BFLOAT16, {0x3f80, 0x3f81}, tie8, {0x3f80, 0x3f82});
    expect_scaled<uint16_t>(HVD_DTYPE_BFLOAT16, {0x3f80}, 1.0 + 3 * std::ldexp(1.0, -9), {0x3f81});
    expect_scaled<uint16_t>(HVD_DTYPE_BFLOAT16, {0x3f80}, tie8 + std::ldexp(1.0, -40), {0x3f80});
    expect_scaled<uint16_t>(HVD_DTYPE_BFLOAT16, {0x7f7f, 0xc000}, 2.0, {0x7f80, 0xc080});
}

void test_scale_float_and_bool(void **) {
    // float32 multiplies by (float)factor: here that is 1 + 2^-23, and 1.5 * (1 + 2^-23) is
    // a tie that rounds to even (1.5 + 2^-22). The double product would round to 1.5 + 2^-23.
    const double factor = 1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -30);
    expect_scaled<float>(HVD_DTYPE_FLOAT32, {1.5f}, factor, {1.5f + std::ldexp(1.0f, -22)});
    expect_scaled<float>(HVD_DTYPE_FLOAT32, {-3.0f, 0.0f, INFINITY}, 0.25,
                         {-0.75f, 0.0f, INFINITY});
    expect_scaled<double>(HVD_DTYPE_FLOAT64, {1.5, -2.0, 1e300}, 0.25, {0.375, -0.5, 2.5e299});
    expect_scaled<double>(HVD_DTYPE_FLOAT64, {1.5}, factor, {1.5 * factor});

    expect_scaled<uint8_t>(HVD_DTYPE_BOOL, {0, 1, 2, 0}, 0.5, {0, 1, 2, 0});
    expect_scaled<uint8_t>(HVD_DTYPE_BOOL, {0, 1, 2, 0}, -3.0, {0, 1, 2, 0});
    expect_scaled<uint8_t>(HVD_DTYPE_BOOL, {0, 1, 2, 0}, 0.0, {0, 0, 0, 0});
}

void test_scale_identity_and_errors(void **) {
    // factor 1 copies bits: no float64 round trip for big int64, NaN payloads kept.
    expect_scaled<int64_t>(HVD_DTYPE_INT64, {(int64_t{1} << 53) + 1}, 1.0,
                           {(int64_t{1} << 53) + 1});
    expect_scaled<uint16_t>(HVD_DTYPE_FLOAT16, {0x7d01, 0x3555}, 1.0, {0x7d01, 0x3555});
    int32_t in_place[] = {9, -9};
    assert_int_equal(scale_into(in_place, in_place, 2, HVD_DTYPE_INT32, 1.0), HVD_OK);
    assert_int_equal(scale_into(in_place, in_place, 2, HVD_DTYPE_INT32, 0.5), HVD_OK);
    assert_int_equal(in_place[0], 4);
    assert_int_equal(in_place[1], -4);

    assert_int_equal(scale_into(nullptr, nullptr, 0, HVD_DTYPE_FLOAT16, 0.5), HVD_OK);
    float x = 2.0f;
    const int32_t bad_dtypes[] = {-1, 11, 1 << 20};
    for (int32_t dtype : bad_dtypes) {
        assert_int_equal(scale_into(&x, &x, 1, dtype, 0.5), HVD_ERR_UNSUPPORTED);
        assert_int_equal(scale_into(&x, &x, 1, dtype, 1.0), HVD_ERR_UNSUPPORTED);
        assert_int_equal(scale_into(nullptr, nullptr, 0, dtype, 0.5), HVD_ERR_UNSUPPORTED);
    }
    assert_true(x == 2.0f);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uint8),
        cmocka_unit_test(test_int8),
        cmocka_unit_test(test_uint16),
        cmocka_unit_test(test_int16),
        cmocka_unit_test(test_int32),
        cmocka_unit_test(test_int64),
        cmocka_unit_test(test_float16),
        cmocka_unit_test(test_bfloat16),
        cmocka_unit_test(test_float32),
        cmocka_unit_test(test_float64),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_empty_and_unsupported),
        cmocka_unit_test(test_scale_integers),
        cmocka_unit_test(test_scale_integer_sweeps),
        cmocka_unit_test(test_scale_half_floats),
        cmocka_unit_test(test_scale_float_and_bool),
        cmocka_unit_test(test_scale_identity_and_errors),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
