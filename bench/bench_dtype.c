/* SPDX-License-Identifier: Apache-2.0 */
/* Names, sizes and element encoding of the dtypes hvd_bench can sweep. */
#include "bench_dtype.h"

#include <math.h>
#include <string.h>

#include <hvd/hvd.h>

typedef struct {
    int32_t dtype;
    const char *name;
    const char *alias;
    size_t size;
} dtype_info_t;

static const dtype_info_t kDtypes[] = {
    {HVD_DTYPE_UINT8, "uint8", "u8", 1},         {HVD_DTYPE_INT8, "int8", "i8", 1},
    {HVD_DTYPE_UINT16, "uint16", "u16", 2},      {HVD_DTYPE_INT16, "int16", "i16", 2},
    {HVD_DTYPE_INT32, "int32", "i32", 4},        {HVD_DTYPE_INT64, "int64", "i64", 8},
    {HVD_DTYPE_FLOAT16, "float16", "f16", 2},    {HVD_DTYPE_FLOAT32, "float32", "f32", 4},
    {HVD_DTYPE_FLOAT64, "float64", "f64", 8},    {HVD_DTYPE_BOOL, "bool", "b8", 1},
    {HVD_DTYPE_BFLOAT16, "bfloat16", "bf16", 2},
};
enum { kNumDtypes = sizeof kDtypes / sizeof kDtypes[0] };

static const dtype_info_t *dtype_info(int32_t dtype) {
    for (int i = 0; i < kNumDtypes; ++i)
        if (kDtypes[i].dtype == dtype) return &kDtypes[i];
    return NULL;
}

int bench_dtype_parse(const char *name) {
    for (int i = 0; i < kNumDtypes; ++i)
        if (!strcmp(name, kDtypes[i].name) || !strcmp(name, kDtypes[i].alias))
            return kDtypes[i].dtype;
    if (!strcmp(name, "float")) return HVD_DTYPE_FLOAT32;
    if (!strcmp(name, "double")) return HVD_DTYPE_FLOAT64;
    return -1;
}

const char *bench_dtype_name(int32_t dtype) {
    const dtype_info_t *d = dtype_info(dtype);
    return d ? d->name : "unknown";
}

size_t bench_dtype_size(int32_t dtype) {
    const dtype_info_t *d = dtype_info(dtype);
    return d ? d->size : 0;
}

int bench_dtype_is_float(int32_t dtype) {
    return dtype == HVD_DTYPE_FLOAT16 || dtype == HVD_DTYPE_FLOAT32 || dtype == HVD_DTYPE_FLOAT64 ||
           dtype == HVD_DTYPE_BFLOAT16;
}

int bench_op_parse(const char *name) {
    if (!strcmp(name, "sum")) return HVD_OP_SUM;
    if (!strcmp(name, "avg") || !strcmp(name, "average")) return HVD_OP_AVERAGE;
    if (!strcmp(name, "min")) return HVD_OP_MIN;
    if (!strcmp(name, "max")) return HVD_OP_MAX;
    if (!strcmp(name, "prod") || !strcmp(name, "product")) return HVD_OP_PRODUCT;
    return -1;
}

const char *bench_op_name(int32_t op) {
    switch (op) {
        case HVD_OP_SUM:
            return "sum";
        case HVD_OP_AVERAGE:
            return "avg";
        case HVD_OP_MIN:
            return "min";
        case HVD_OP_MAX:
            return "max";
        case HVD_OP_PRODUCT:
            return "prod";
        default:
            return "none";
    }
}

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* IEEE binary16, round to nearest even; NaN/overflow become NaN/inf. */
static uint16_t half_from_float(float f) {
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t mag = u & 0x7fffffffu;
    if (mag >= 0x7f800000u) return (uint16_t)(sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (mag < 0x38800000u) {                                   /* subnormal half or zero */
        float scaled = bits_float(mag) * 16777216.0f;          /* * 2^24: units of 2^-24 */
        return (uint16_t)(sign | (uint16_t)lrintf(scaled));
    }
    uint32_t rounded = mag + 0xfffu + ((mag >> 13) & 1u);
    return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) {
        float v = (float)man / 16777216.0f;
        return sign ? -v : v;
    }
    if (exp == 31) return bits_float(sign | 0x7f800000u | (man << 13));
    return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

static uint16_t bf16_from_float(float f) {
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_to_float(uint16_t b) {
    return bits_float((uint32_t)b << 16);
}

void bench_store(int32_t dtype, void *buf, size_t i, double v) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            ((uint8_t *)buf)[i] = (uint8_t)v;
            break;
        case HVD_DTYPE_INT8:
            ((int8_t *)buf)[i] = (int8_t)v;
            break;
        case HVD_DTYPE_UINT16:
            ((uint16_t *)buf)[i] = (uint16_t)v;
            break;
        case HVD_DTYPE_INT16:
            ((int16_t *)buf)[i] = (int16_t)v;
            break;
        case HVD_DTYPE_INT32:
            ((int32_t *)buf)[i] = (int32_t)v;
            break;
        case HVD_DTYPE_INT64:
            ((int64_t *)buf)[i] = (int64_t)v;
            break;
        case HVD_DTYPE_FLOAT16:
            ((uint16_t *)buf)[i] = half_from_float((float)v);
            break;
        case HVD_DTYPE_FLOAT32:
            ((float *)buf)[i] = (float)v;
            break;
        case HVD_DTYPE_FLOAT64:
            ((double *)buf)[i] = v;
            break;
        case HVD_DTYPE_BOOL:
            ((uint8_t *)buf)[i] = v != 0.0;
            break;
        case HVD_DTYPE_BFLOAT16:
            ((uint16_t *)buf)[i] = bf16_from_float((float)v);
            break;
        default:
            break;
    }
}

double bench_load(int32_t dtype, const void *buf, size_t i) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            return ((const uint8_t *)buf)[i];
        case HVD_DTYPE_INT8:
            return ((const int8_t *)buf)[i];
        case HVD_DTYPE_UINT16:
            return ((const uint16_t *)buf)[i];
        case HVD_DTYPE_INT16:
            return ((const int16_t *)buf)[i];
        case HVD_DTYPE_INT32:
            return ((const int32_t *)buf)[i];
        case HVD_DTYPE_INT64:
            return (double)((const int64_t *)buf)[i];
        case HVD_DTYPE_FLOAT16:
            return half_to_float(((const uint16_t *)buf)[i]);
        case HVD_DTYPE_FLOAT32:
            return ((const float *)buf)[i];
        case HVD_DTYPE_FLOAT64:
            return ((const double *)buf)[i];
        case HVD_DTYPE_BOOL:
            return ((const uint8_t *)buf)[i];
        case HVD_DTYPE_BFLOAT16:
            return bf16_to_float(((const uint16_t *)buf)[i]);
        default:
            return NAN;
    }
}
