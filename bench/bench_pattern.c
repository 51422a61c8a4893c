/* SPDX-License-Identifier: Apache-2.0 */
/* Test pattern, expected results and checking for hvd_bench (see bench_pattern.h). */
#include "bench_pattern.h"

#include <math.h>
#include <string.h>

#include <hvd/hvd.h>

#include "bench_dtype.h"

unsigned bench_seed(int32_t rank, int tensor) {
    return 7u * (unsigned)rank + 13u * (unsigned)tensor;
}

/* Values 0..63, or 0..15 for the 1-byte types and bfloat16 (8 significant bits): sums over
 * up to 8 ranks stay exact in int8, over 17 in bfloat16. Products use 1 and 2 only, so a
 * product over n ranks is at most 2^n. Booleans alternate 0 and 1. */
double bench_value(int32_t dtype, int32_t op, unsigned seed, size_t i) {
    unsigned k = (unsigned)(i % BENCH_PERIOD) + seed;
    if (dtype == HVD_DTYPE_BOOL) return (double)(k & 1u);
    if (op == HVD_OP_PRODUCT) return 1.0 + (double)(k & 1u);
    int narrow = bench_dtype_size(dtype) == 1 || dtype == HVD_DTYPE_BFLOAT16;
    return (double)(k & (narrow ? 15u : 63u));
}

void bench_block_input(int32_t dtype, int32_t op, unsigned seed, void *block) {
    for (size_t i = 0; i < BENCH_PERIOD; ++i)
        bench_store(dtype, block, i, bench_value(dtype, op, seed, i));
}

/* The reduction of one element over all ranks, in exact (double) arithmetic. Booleans
 * reduce as the header says: Sum/Max are "or", Min/Product are "and". */
static double reduce_element(int32_t dtype, int32_t op, int32_t nranks, int tensor, size_t i) {
    if (dtype == HVD_DTYPE_BOOL)
        op = (op == HVD_OP_SUM || op == HVD_OP_MAX) ? HVD_OP_MAX : HVD_OP_MIN;
    double acc = bench_value(dtype, op, bench_seed(0, tensor), i);
    for (int32_t r = 1; r < nranks; ++r) {
        double v = bench_value(dtype, op, bench_seed(r, tensor), i);
        switch (op) {
            case HVD_OP_MIN:
                acc = v < acc ? v : acc;
                break;
            case HVD_OP_MAX:
                acc = v > acc ? v : acc;
                break;
            case HVD_OP_PRODUCT:
                acc *= v;
                break;
            default:
                acc += v;
                break; /* sum, average */
        }
    }
    if (op == HVD_OP_AVERAGE) {
        acc /= nranks;
        if (!bench_dtype_is_float(dtype)) acc = trunc(acc);
    }
    return acc;
}

void bench_block_reduced(int32_t dtype, int32_t op, int32_t nranks, int tensor, void *block) {
    for (size_t i = 0; i < BENCH_PERIOD; ++i)
        bench_store(dtype, block, i, reduce_element(dtype, op, nranks, tensor, i));
}

void bench_fill(void *buf, size_t count, const void *block, size_t esize) {
    size_t total = count * esize, done = BENCH_PERIOD * esize;
    char *p = buf;
    memcpy(p, block, total < done ? total : done);
    /* Doubling copies: a 256 MiB fill is a few large memcpys, not millions of small ones. */
    while (done < total) {
        size_t n = total - done < done ? total - done : done;
        memcpy(p + done, p, n);
        done += n;
    }
}

/* Allowed difference between a result and the exact value: Average divides in the dtype's
 * own arithmetic (integers truncate after a float64 multiply by 1/n), everything else on
 * these small integers is exact. */
static double tolerance(int32_t dtype, int32_t op, double want) {
    if (op != HVD_OP_AVERAGE) return 0.0;
    switch (dtype) {
        case HVD_DTYPE_FLOAT64:
            return 1e-12 * fabs(want);
        case HVD_DTYPE_FLOAT32:
            return 1e-6 * fabs(want);
        case HVD_DTYPE_FLOAT16:
            return 2e-3 * fabs(want);
        case HVD_DTYPE_BFLOAT16:
            return 1e-2 * fabs(want);
        default:
            return 1.0;
    }
}

static long compare_values(int32_t dtype, int32_t op, const void *buf, size_t base, size_t n,
                           const void *block, long wrong, bench_mismatch_t *first) {
    for (size_t j = 0; j < n; ++j) {
        double got = bench_load(dtype, buf, base + j), want = bench_load(dtype, block, j);
        if (fabs(got - want) <= tolerance(dtype, op, want)) continue;
        if (wrong++ == 0) {
            first->index = base + j;
            first->got = got;
            first->want = want;
        }
    }
    return wrong;
}

long bench_compare(int32_t dtype, int32_t op, const void *buf, size_t count, const void *block,
                   size_t phase, bench_mismatch_t *first) {
    size_t esize = bench_dtype_size(dtype);
    unsigned char rotated[BENCH_BLOCK_BYTES];
    phase %= BENCH_PERIOD;
    memcpy(rotated, (const char *)block + phase * esize, (BENCH_PERIOD - phase) * esize);
    memcpy(rotated + (BENCH_PERIOD - phase) * esize, block, phase * esize);
    block = rotated;
    long wrong = 0;
    for (size_t base = 0; base < count; base += BENCH_PERIOD) {
        size_t n = count - base < BENCH_PERIOD ? count - base : BENCH_PERIOD;
        if (memcmp((const char *)buf + base * esize, block, n * esize) == 0) continue;
        wrong = compare_values(dtype, op, buf, base, n, block, wrong, first);
    }
    return wrong;
}
