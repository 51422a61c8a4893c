/* SPDX-License-Identifier: Apache-2.0 */
#include "mp_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hvd_context_h mp_ctx;
int32_t mp_rank = -1, mp_size = 0;

void mp_die(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char detail[2048];
    hvd_last_error(detail, sizeof detail);
    fprintf(stderr, "rank %d: FAILED: %s (last error: %s)\n", mp_rank, msg, detail);
    fflush(stderr);
    exit(1);
}

void mp_init(void) {
    hvd_status_t s = hvd_init(NULL, &mp_ctx);
    if (s != HVD_OK) mp_die("hvd_init: %s", hvd_status_name(s));
    if (hvd_rank(mp_ctx, NULL, &mp_rank) != HVD_OK || hvd_size(mp_ctx, NULL, &mp_size) != HVD_OK)
        mp_die("hvd_rank/hvd_size");
}

void mp_finalize(void) {
    hvd_status_t s = hvd_finalize(mp_ctx);
    if (s != HVD_OK) mp_die("hvd_finalize: %s", hvd_status_name(s));
}

hvd_status_t mp_wait(hvd_request_h req) {
    hvd_status_t s = hvd_request_wait(req, 60000);
    if (s == HVD_INPROGRESS) mp_die("a request did not complete within 60 s");
    return s;
}

size_t mp_dtype_size(int32_t dtype) {
    static const size_t sizes[] = {1, 1, 2, 2, 4, 8, 2, 4, 8, 1, 2};
    return sizes[dtype];
}

const char *mp_dtype_name(int32_t dtype) {
    static const char *names[] = {"uint8",   "int8",    "uint16",  "int16", "int32",   "int64",
                                  "float16", "float32", "float64", "bool",  "bfloat16"};
    return names[dtype];
}

static float bf16_bits_to_float(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round-to-nearest-even via double arithmetic: the values used here are exactly
 * representable, so plain truncation of the low bits after adding half suffices. */
static uint16_t float_to_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t lsb = (u >> 16) & 1u;
    return (uint16_t)((u + 0x7fffu + lsb) >> 16);
}

double mp_get(int32_t dtype, const void *data, size_t i) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            return ((const uint8_t *)data)[i];
        case HVD_DTYPE_INT8:
            return ((const int8_t *)data)[i];
        case HVD_DTYPE_UINT16:
            return ((const uint16_t *)data)[i];
        case HVD_DTYPE_INT16:
            return ((const int16_t *)data)[i];
        case HVD_DTYPE_INT32:
            return ((const int32_t *)data)[i];
        case HVD_DTYPE_INT64:
            return (double)((const int64_t *)data)[i];
        case HVD_DTYPE_FLOAT16:
            return (double)((const _Float16 *)data)[i];
        case HVD_DTYPE_FLOAT32:
            return ((const float *)data)[i];
        case HVD_DTYPE_FLOAT64:
            return ((const double *)data)[i];
        case HVD_DTYPE_BOOL:
            return ((const uint8_t *)data)[i];
        case HVD_DTYPE_BFLOAT16:
            return bf16_bits_to_float(((const uint16_t *)data)[i]);
    }
    mp_die("unknown dtype %d", dtype);
}

void mp_set(int32_t dtype, void *data, size_t i, double v) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            ((uint8_t *)data)[i] = (uint8_t)v;
            return;
        case HVD_DTYPE_INT8:
            ((int8_t *)data)[i] = (int8_t)v;
            return;
        case HVD_DTYPE_UINT16:
            ((uint16_t *)data)[i] = (uint16_t)v;
            return;
        case HVD_DTYPE_INT16:
            ((int16_t *)data)[i] = (int16_t)v;
            return;
        case HVD_DTYPE_INT32:
            ((int32_t *)data)[i] = (int32_t)v;
            return;
        case HVD_DTYPE_INT64:
            ((int64_t *)data)[i] = (int64_t)v;
            return;
        case HVD_DTYPE_FLOAT16:
            ((_Float16 *)data)[i] = (_Float16)v;
            return;
        case HVD_DTYPE_FLOAT32:
            ((float *)data)[i] = (float)v;
            return;
        case HVD_DTYPE_FLOAT64:
            ((double *)data)[i] = v;
            return;
        case HVD_DTYPE_BOOL:
            ((uint8_t *)data)[i] = v != 0.0;
            return;
        case HVD_DTYPE_BFLOAT16:
            ((uint16_t *)data)[i] = float_to_bf16_bits((float)v);
            return;
    }
    mp_die("unknown dtype %d", dtype);
}

hvd_op_params_t mp_params(hvd_process_set_h ps) {
    hvd_op_params_t p;
    memset(&p, 0, sizeof p);
    if (ps) {
        p.field_mask = HVD_OP_FIELD_PROCESS_SET;
        p.process_set = ps;
    }
    return p;
}

hvd_tensor_t mp_tensor(void *data, int32_t dtype, int32_t ndim, const int64_t *shape) {
    hvd_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim;
    t.shape = shape;
    t.device_type = HVD_DEVICE_CPU;
    return t;
}

double mp_value(int32_t dtype, int32_t r, size_t i) {
    if (dtype == HVD_DTYPE_BOOL) return (double)(((size_t)r + i) % 3 != 0);
    int unsigned_type = dtype == HVD_DTYPE_UINT8 || dtype == HVD_DTYPE_UINT16;
    /* 1..3 for unsigned (products of 4 ranks stay <= 81), -3..3 otherwise */
    if (unsigned_type) return (double)(1 + ((size_t)r * 7 + i) % 3);
    return (double)((long)(((size_t)r * 5 + i * 3) % 7) - 3);
}

double mp_tolerance(int32_t dtype, double ref) {
    switch (dtype) {
        case HVD_DTYPE_FLOAT16:
            return 1e-3 * fabs(ref) + 1e-3;
        case HVD_DTYPE_BFLOAT16:
            return 8e-3 * fabs(ref) + 8e-3;
        case HVD_DTYPE_FLOAT32:
            return 1e-6 * fabs(ref) + 1e-6;
        case HVD_DTYPE_FLOAT64:
            return 1e-12 * fabs(ref) + 1e-12;
        default:
            return 0.0;
    }
}

int mp_is_float(int32_t dtype) {
    return dtype == HVD_DTYPE_FLOAT16 || dtype == HVD_DTYPE_FLOAT32 || dtype == HVD_DTYPE_FLOAT64 ||
           dtype == HVD_DTYPE_BFLOAT16;
}

double mp_reference(int32_t dtype, int32_t op, size_t i) {
    int boolean = dtype == HVD_DTYPE_BOOL;
    double acc = mp_value(dtype, 0, i);
    for (int32_t r = 1; r < mp_size; ++r) {
        double v = mp_value(dtype, r, i);
        switch (op) {
            case HVD_OP_SUM:
            case HVD_OP_AVERAGE:
                acc = boolean ? (double)(acc != 0 || v != 0) : acc + v;
                break;
            case HVD_OP_MIN:
                acc = v < acc ? v : acc;
                break;
            case HVD_OP_MAX:
                acc = v > acc ? v : acc;
                break;
            case HVD_OP_PRODUCT:
                acc = boolean ? (double)(acc != 0 && v != 0) : acc * v;
                break;
        }
    }
    if (op == HVD_OP_AVERAGE) {
        acc = acc * (1.0 / mp_size);
        if (!mp_is_float(dtype)) acc = trunc(acc);
    }
    return acc;
}

hvd_op_params_t mp_reduce_params(const char *name, int32_t op) {
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_REDUCE_OP | HVD_OP_FIELD_NAME;
    p.reduce_op = op;
    p.name = name;
    return p;
}
