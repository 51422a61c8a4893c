// SPDX-License-Identifier: Apache-2.0
/* Test data of hvd_bench: every tensor holds a pattern of small integers that repeats every
 * BENCH_PERIOD elements, so the expected result of any collective is a precomputed block of
 * BENCH_PERIOD elements and filling or checking a 256 MiB tensor is a tiling / memcmp pass.
 * The values are chosen so that sums and products stay exact in every dtype for the rank
 * counts a benchmark runs on one host (see bench_value). */
#ifndef HVD_BENCH_PATTERN_H_
#define HVD_BENCH_PATTERN_H_

#include <stddef.h>
#include <stdint.h>

#define BENCH_PERIOD 64
#define BENCH_SENTINEL_BYTE 0xA5 /* output bytes before a collective; no pattern value */

/* Largest element size: a block is BENCH_PERIOD elements of any dtype. */
#define BENCH_BLOCK_BYTES (BENCH_PERIOD * 8)

/* Seed of tensor `tensor` (0 unless --many) on rank `rank`: distinct per rank and tensor, so
 * a result taken from the wrong rank or the wrong fused tensor does not pass the check. */
unsigned bench_seed(int32_t rank, int tensor);

/* Element i of the tensor with this seed, before rounding to the dtype. */
double bench_value(int32_t dtype, int32_t op, unsigned seed, size_t i);

/* One period of the tensor with this seed, encoded in the dtype. */
void bench_block_input(int32_t dtype, int32_t op, unsigned seed, void *block);

/* One period of the exact allreduce result over nranks of tensor `tensor`. */
void bench_block_reduced(int32_t dtype, int32_t op, int32_t nranks, int tensor, void *block);

/* Tiles block (one period) over count elements of buf. */
void bench_fill(void *buf, size_t count, const void *block, size_t esize);

/* First mismatch of a check, for the error message. */
typedef struct {
    size_t index;
    double got, want;
} bench_mismatch_t;

/* Number of elements of buf (count elements) that differ from the pattern in block, whose
 * element `phase` is buf's element 0 (a slice that starts `phase` elements into a tensor).
 * Bytes are compared first; elements of a differing period are then compared as values,
 * with the rounding tolerance of (dtype, op). *first is written when the result > 0. */
long bench_compare(int32_t dtype, int32_t op, const void *buf, size_t count, const void *block,
                   size_t phase, bench_mismatch_t *first);

#endif /* HVD_BENCH_PATTERN_H_ */
