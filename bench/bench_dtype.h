// SPDX-License-Identifier: Apache-2.0
/* Element types and reduce ops as hvd_bench names and encodes them. Values are handled as
 * doubles: the benchmark only needs to write small test integers into a tensor of any dtype
 * and read results back for checking, never to compute in the dtype itself. */
#ifndef HVD_BENCH_DTYPE_H_
#define HVD_BENCH_DTYPE_H_

#include <stddef.h>
#include <stdint.h>

/* hvd_dtype_t value for a name ("float32", "f32", "bf16", ...); -1 if unknown. */
int bench_dtype_parse(const char *name);
const char *bench_dtype_name(int32_t dtype);
size_t bench_dtype_size(int32_t dtype);
int bench_dtype_is_float(int32_t dtype);

/* hvd_reduce_op_t for "sum", "avg"/"average", "min", "max", "prod"/"product"; -1 if unknown.
 * Adasum is left out on purpose: the library does not implement it. */
int bench_op_parse(const char *name);
const char *bench_op_name(int32_t op);

/* Writes v, rounded to the dtype (round to nearest even for the 16-bit floats, truncation
 * toward zero for integers), into element i of buf. */
void bench_store(int32_t dtype, void *buf, size_t i, double v);
/* Reads element i of buf. */
double bench_load(int32_t dtype, const void *buf, size_t i);

#endif /* HVD_BENCH_DTYPE_H_ */
