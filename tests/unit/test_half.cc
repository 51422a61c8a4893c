// SPDX-License-Identifier: Apache-2.0
// fp16 / bf16 <-> float conversions (src/common/half.h) against references built another
// way: decoding with ldexp, encoding by double arithmetic (scale so one unit in the last
// place is 1.0, rint with ties to even, rebuild the fields). Decoding and the 16-bit round
// trip are checked for all 65536 patterns; encoding on every rounding midpoint (and its
// float neighbours), on a sweep across all float exponents, and on hand-picked cases.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <algorithm>
#include <cmath>

#include "common/half.h"

namespace {

// An IEEE-style 16-bit format: 1 sign bit, the rest exponent and stored mantissa.
struct Format {
    const char *name;
    int mant_bits;
    int exp_bias;
    float (*widen)(uint16_t);
    uint16_t (*narrow)(float);

    int exp_field_max() const { return (1 << (15 - mant_bits)) - 1; }
    int emin() const { return 1 - exp_bias; }
    int emax() const { return exp_field_max() - 1 - exp_bias; }
    uint16_t inf_bits() const { return static_cast<uint16_t>(exp_field_max() << mant_bits); }
    bool is_nan(uint16_t h) const { return (h & 0x7fff) > inf_bits(); }
};

const Format kFp16 = {"fp16", 10, 15, hvd::fp16_to_float, hvd::float_to_fp16};
const Format kBf16 = {"bf16", 7, 127, hvd::bf16_to_float, hvd::float_to_bf16};

// Value of a non-NaN pattern.
double decode_reference(const Format &f, uint16_t h) {
    int exp = (h >> f.mant_bits) & f.exp_field_max();
    int mant = h & ((1 << f.mant_bits) - 1);
    double v;
    if (exp == f.exp_field_max()) {
        v = HUGE_VAL;
    } else if (exp == 0) {
        v = std::ldexp(mant, f.emin() - f.mant_bits);
    } else {
        v = std::ldexp(mant + (1 << f.mant_bits), exp - f.exp_bias - f.mant_bits);
    }
    return (h & 0x8000) ? -v : v;
}

// Nearest pattern to a non-NaN value, ties to even, overflow to infinity.
uint16_t encode_reference(const Format &f, double d) {
    const uint16_t sign = std::signbit(d) ? 0x8000 : 0;
    const double a = std::fabs(d);
    if (std::isinf(a)) return sign | f.inf_bits();
    int e;
    std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1), so floor(log2(a)) = e - 1
    const double ulp = std::ldexp(1.0, std::max(e - 1, f.emin()) - f.mant_bits);
    const double units = std::rint(a / ulp);  // default rounding mode: nearest, ties to even
    const double rounded = units * ulp;
    if (rounded >= std::ldexp(1.0, f.emax() + 1)) return sign | f.inf_bits();
    if (rounded < std::ldexp(1.0, f.emin())) return sign | static_cast<uint16_t>(units);
    std::frexp(rounded, &e);
    const int exp = e - 1;
    const double mant = rounded / std::ldexp(1.0, exp - f.mant_bits) - (1 << f.mant_bits);
    return sign | static_cast<uint16_t>(((exp + f.exp_bias) << f.mant_bits) | int(mant));
}

void check_narrow(const Format &f, float x) {
    const uint16_t got = f.narrow(x);
    if (std::isnan(x)) {
        // Any NaN in, a quiet NaN of the same sign out (never inf, as truncation would give).
        const uint16_t quiet_bit = static_cast<uint16_t>(1 << (f.mant_bits - 1));
        if (!f.is_nan(got) || !(got & quiet_bit) || (got >> 15) != std::signbit(x)) {
            fail_msg("%s: NaN %08x became %04x", f.name, hvd::float_to_bits(x), got);
        }
        return;
    }
    const uint16_t want = encode_reference(f, x);
    if (got != want) {
        fail_msg("%s: %a (%08x) became %04x, expected %04x", f.name, static_cast<double>(x),
                 hvd::float_to_bits(x), got, want);
    }
}

void check_widen_all(const Format &f) {
    for (uint32_t i = 0; i < 65536; ++i) {
        const uint16_t h = static_cast<uint16_t>(i);
        const float got = f.widen(h);
        if (f.is_nan(h)) {
            if (!std::isnan(got) || std::signbit(got) != bool(h & 0x8000)) {
                fail_msg("%s: NaN %04x widened to %a", f.name, h, static_cast<double>(got));
            }
            continue;
        }
        const double want = decode_reference(f, h);
        if (static_cast<double>(got) != want || std::signbit(got) != std::signbit(want)) {
            fail_msg("%s: %04x widened to %a, expected %a", f.name, h, static_cast<double>(got),
                     want);
        }
    }
}

void check_round_trip_all(const Format &f) {
    for (uint32_t i = 0; i < 65536; ++i) {
        const uint16_t h = static_cast<uint16_t>(i);
        const float x = f.widen(h);
        if (f.is_nan(h)) {
            check_narrow(f, x);  // payloads may change; NaN-ness, quietness and sign may not
        } else if (f.narrow(x) != h) {
            fail_msg("%s: %04x -> %a -> %04x", f.name, h, static_cast<double>(x), f.narrow(x));
        }
    }
}

// Every halfway point between neighbouring values (including the one between the largest
// finite value and the first unrepresentable power of two), and the floats just beside it.
void check_midpoints(const Format &f) {
    for (uint16_t h = 0; h < f.inf_bits(); ++h) {
        const double lo = decode_reference(f, h);
        const double hi =
            (h + 1 == f.inf_bits()) ? std::ldexp(1.0, f.emax() + 1) : decode_reference(f, h + 1);
        const float mid = static_cast<float>((lo + hi) / 2);
        assert_true(static_cast<double>(mid) == (lo + hi) / 2);  // exact in float
        // The reference itself must break the tie toward the even pattern.
        assert_int_equal(encode_reference(f, mid), (h & 1) ? h + 1 : h);
        const float probes[] = {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, HUGE_VALF)};
        for (float p : probes) {
            check_narrow(f, p);
            check_narrow(f, -p);
        }
    }
}

// A stride through all 2^32 float patterns: every exponent, sign, NaN and subnormal class,
// with varied low mantissa bits (the stride is odd, so the low bits cycle).
void check_float_sweep(const Format &f) {
    constexpr uint64_t kStride = 127;
    for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += kStride) {
        check_narrow(f, hvd::bits_to_float(static_cast<uint32_t>(bits)));
    }
}

void test_fp16_widen_all(void **) {
    check_widen_all(kFp16);
}
void test_fp16_round_trip_all(void **) {
    check_round_trip_all(kFp16);
}
void test_fp16_midpoints(void **) {
    check_midpoints(kFp16);
}
void test_fp16_float_sweep(void **) {
    check_float_sweep(kFp16);
}
void test_bf16_widen_all(void **) {
    check_widen_all(kBf16);
}
void test_bf16_round_trip_all(void **) {
    check_round_trip_all(kBf16);
}
void test_bf16_midpoints(void **) {
    check_midpoints(kBf16);
}
void test_bf16_float_sweep(void **) {
    check_float_sweep(kBf16);
}

// Cases worked out by hand, so the references above are not the only judge.
void test_fp16_known_values(void **) {
    using hvd::float_to_fp16;
    assert_int_equal(float_to_fp16(1.0f), 0x3c00);
    assert_int_equal(float_to_fp16(-2.0f), 0xc000);
    assert_int_equal(float_to_fp16(-0.0f), 0x8000);
    assert_int_equal(float_to_fp16(65504.0f), 0x7bff);    // largest finite
    assert_int_equal(float_to_fp16(65519.996f), 0x7bff);  // just below the tie
    assert_int_equal(float_to_fp16(65520.0f), 0x7c00);    // tie rounds to even: inf
    assert_int_equal(float_to_fp16(1e10f), 0x7c00);
    assert_int_equal(float_to_fp16(-HUGE_VALF), 0xfc00);
    assert_int_equal(float_to_fp16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
    assert_int_equal(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
    assert_int_equal(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie: to even (zero)
    assert_int_equal(float_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
    assert_int_equal(float_to_fp16(std::ldexp(3.0f, -25)), 0x0002);  // tie 1.5 ulp -> 2
    assert_int_equal(float_to_fp16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);
    assert_int_equal(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie, even
    assert_int_equal(float_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie, even
    assert_int_equal(float_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
    assert_int_equal(float_to_fp16(2047.5f), 0x6800);  // 2047 + tie -> 2048 (carry into exp)
    assert_int_equal(float_to_fp16(NAN), 0x7e00);
    assert_true(hvd::fp16_to_float(0x0001) == std::ldexp(1.0f, -24));
    assert_true(hvd::fp16_to_float(0x7bff) == 65504.0f);
    assert_true(hvd::fp16_to_float(0xfc00) == -HUGE_VALF);
}

void test_bf16_known_values(void **) {
    using hvd::float_to_bf16;
    assert_int_equal(float_to_bf16(1.0f), 0x3f80);
    assert_int_equal(float_to_bf16(-0.0f), 0x8000);
    assert_int_equal(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie, even
    assert_int_equal(float_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);  // tie, even
    assert_int_equal(float_to_bf16(3.4028235e38f), 0x7f80);  // FLT_MAX is past the last tie
    assert_int_equal(float_to_bf16(3.3895314e38f), 0x7f7f);  // largest finite bf16
    assert_int_equal(float_to_bf16(std::ldexp(1.0f, -133)), 0x0001);
    assert_int_equal(float_to_bf16(std::ldexp(1.0f, -134)), 0x0000);  // tie: to even (zero)
    // A signalling NaN whose payload sits only in the low 16 bits must stay a NaN.
    const uint16_t snan = float_to_bf16(hvd::bits_to_float(0x7f800001u));
    assert_true((snan & 0x7f80) == 0x7f80 && (snan & 0x7f) != 0);
    assert_int_equal(float_to_bf16(hvd::bits_to_float(0xff800001u)) & 0x8000, 0x8000);
    assert_true(hvd::bf16_to_float(0x4049) == 3.140625f);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_widen_all),      cmocka_unit_test(test_fp16_round_trip_all),
        cmocka_unit_test(test_fp16_midpoints),      cmocka_unit_test(test_fp16_float_sweep),
        cmocka_unit_test(test_fp16_known_values),   cmocka_unit_test(test_bf16_widen_all),
        cmocka_unit_test(test_bf16_round_trip_all), cmocka_unit_test(test_bf16_midpoints),
        cmocka_unit_test(test_bf16_float_sweep),    cmocka_unit_test(test_bf16_known_values),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
