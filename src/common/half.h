// SPDX-License-Identifier: Apache-2.0
// IEEE binary16 and bfloat16 <-> float. Reductions on 16-bit floats run in float and round
// back with round-to-nearest-even, as CUDA and PyTorch do.
#pragma once

#include <cstdint>
#include <cstring>

namespace hvd {

inline float bits_to_float(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint32_t float_to_bits(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}

inline float bf16_to_float(uint16_t h) {
    return bits_to_float(static_cast<uint32_t>(h) << 16);
}

inline uint16_t float_to_bf16(float f) {
    uint32_t bits = float_to_bits(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
    return static_cast<uint16_t>((bits + rounding) >> 16);
}

// The fp16 conversions below are branch-free (mask selects instead of early returns) so that
// the block loops in src/reduce/ vectorise; every 16-bit pattern and every float rounding is
// checked exhaustively in tests/unit/test_half.cc.

// c ? a : b, as a bit mask: compilers keep a ternary as control flow, which blocks SIMD.
inline uint32_t select_bits(bool c, uint32_t a, uint32_t b) {
    uint32_t mask = 0u - static_cast<uint32_t>(c);
    return (a & mask) | (b & ~mask);
}

inline float fp16_to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t mag = h & 0x7fffu;
    // Normal: move exponent and mantissa into place and rebias the exponent (15 -> 127);
    // inf/nan (exponent 31) need a second rebias so the exponent lands on 255.
    uint32_t normal = (mag << 13) + (112u << 23);
    normal += select_bits(mag >= 0x7c00u, 112u << 23, 0u);
    // Subnormal (and zero): value = mantissa * 2^-24, exact in float.
    float subnormal = static_cast<float>(static_cast<int32_t>(mag)) * (1.0f / 16777216.0f);
    return bits_to_float(sign | select_bits(mag < 0x400u, float_to_bits(subnormal), normal));
}

// float_to_fp16 with the result in the low 16 bits of a 32-bit word. Vector loops should
// store this into a 32-bit buffer and narrow in a second pass: when the 16-bit store sits in
// the same loop, GCC shrinks the selects to 16-bit lanes and spends its time on shuffles.
inline uint32_t float_to_fp16_wide(float f) {
    uint32_t bits = float_to_bits(f);
    uint32_t sign = (bits >> 16) & 0x8000u;
    // Signed compares below (abs < 2^31): SSE2 has no unsigned 32-bit compare.
    int32_t abs = static_cast<int32_t>(bits & 0x7fffffffu);
    uint32_t uabs = static_cast<uint32_t>(abs);
    // Normal result: rebias the exponent (-112 << 23) and round the 13 dropped bits to
    // nearest even; a mantissa carry correctly bumps the exponent.
    uint32_t normal = (uabs + 0xc8000fffu + ((uabs >> 13) & 1u)) >> 13;
    // Subnormal result (|f| < 2^-14): adding 0.5 puts the float's ulp at 2^-24, the fp16
    // subnormal step, so the FPU rounds to nearest even; the low bits are the fp16 mantissa.
    uint32_t subnormal = float_to_bits(bits_to_float(uabs) + 0.5f) - 0x3f000000u;
    uint32_t h = select_bits(abs < 0x38800000, subnormal, normal);
    h = select_bits(abs >= 0x477ff000, 0x7c00u, h);  // >= 65520 rounds to inf
    h = select_bits(abs > 0x7f800000, 0x7e00u, h);   // nan -> canonical quiet nan
    return sign | h;
}

inline uint16_t float_to_fp16(float f) {
    return static_cast<uint16_t>(float_to_fp16_wide(f));
}

}  // namespace hvd
