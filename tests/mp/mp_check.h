// SPDX-License-Identifier: Apache-2.0
/* Shared helpers for the multi-process tests: join the job from the launcher environment,
 * typed element access, independent reference arithmetic, and waits that always end. */
#ifndef MP_CHECK_H_
#define MP_CHECK_H_

#include <stddef.h>
#include <stdint.h>

#include "hvd/hvd.h"

extern hvd_context_h mp_ctx;
extern int32_t mp_rank, mp_size;

/* hvd_init(NULL) from the launcher's environment; exits the process on failure. */
void mp_init(void);
void mp_finalize(void);

/* Prints "rank R: <message>" with the library's last error and exits 1. */
void mp_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Waits (bounded: 60 s) and returns the final status; a wait that times out is a failure. */
hvd_status_t mp_wait(hvd_request_h req);

/* Element i of a buffer of dtype, as a double (fp16 through the compiler's _Float16, bf16 by
 * shifting: independent of libhvd's own conversions). */
double mp_get(int32_t dtype, const void *data, size_t i);
void mp_set(int32_t dtype, void *data, size_t i, double v);
size_t mp_dtype_size(int32_t dtype);
const char *mp_dtype_name(int32_t dtype);

/* Op parameters with every field at its default, in process set ps (NULL: all ranks). */
hvd_op_params_t mp_params(hvd_process_set_h ps);
/* A named reduction (op: HVD_OP_*) in the global set, every other field at its default. */
hvd_op_params_t mp_reduce_params(const char *name, int32_t op);

/* A tensor descriptor on caller memory. */
hvd_tensor_t mp_tensor(void *data, int32_t dtype, int32_t ndim, const int64_t *shape);

/* The value rank r holds at element i in the reduction tests: small integers, so every
 * reduction is exact in every dtype (non-negative for unsigned types, 0/1 for bool). */
double mp_value(int32_t dtype, int32_t r, size_t i);

/* Whether dtype is a floating-point type. */
int mp_is_float(int32_t dtype);

/* The allreduce of every rank's mp_value at element i under op (HVD_OP_*), computed here in
 * double: bool as logical or/and, integer averages truncated toward zero. */
double mp_reference(int32_t dtype, int32_t op, size_t i);

/* Tolerance for comparing a result of dtype against an exact reference. */
double mp_tolerance(int32_t dtype, double ref);

#endif
