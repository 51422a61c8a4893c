// SPDX-License-Identifier: Apache-2.0
/* State of one hvd_bench process: the context, its place in the job, the options, the
 * buffers of the step being measured and the handful of libhvd calls every phase needs. */
#ifndef HVD_BENCH_JOB_H_
#define HVD_BENCH_JOB_H_

#include <stddef.h>
#include <stdint.h>

#include <hvd/hvd.h>

#include "bench_optional.h"
#include "bench_options.h"

#define BENCH_NAME_LEN 48

typedef struct {
    hvd_context_h ctx;
    int32_t rank, nranks;
    const bench_options_t *o;
    size_t esize;        /* bytes per element */
    char *in, *out;      /* o->many tensors of the largest size each; out == in in place */
    hvd_request_h *reqs; /* o->many: the requests of the current step */
    char (*names)[BENCH_NAME_LEN]; /* o->many: one fixed name per tensor, as training does */
    bench_owned_output_fn optional_enqueue; /* alltoall / reducescatter, looked up once */
    hvd_tensor_t *group_in, *group_out;     /* --grouped: o->many descriptors each */
    const hvd_tensor_t **group_in_p, **group_out_p;
    /* --device cuda (bench_device.h): the device and the device mirrors of in / out */
    int32_t device;
    char *dev_in, *dev_out;
    size_t dev_in_bytes, dev_out_bytes;
    char *fetch; /* host copy of a library-owned device output */
    size_t fetch_bytes;
} bench_job_t;

/* The tensors of one size: `count` elements per tensor and rank (allgather: the rank's
 * input), `bytes` the reported size (allgather: the gathered output), both per tensor. */
typedef struct {
    size_t count;
    size_t bytes;
} bench_layout_t;

/* Prints "hvd_bench: rank R: <what>: STATUS: detail" to stderr, aborts the context (so the
 * other ranks fail at once instead of waiting out their timeouts) and exits with status 2. */
void bench_fail(bench_job_t *job, const char *what, hvd_status_t s);

/* Enqueues tensor k of the step (all ranks use the same name for it). */
void bench_enqueue(bench_job_t *job, const bench_layout_t *l, int k);
/* Enqueues every tensor of the step, then waits for each (--grouped: as one grouped
 * allreduce, whose request is reqs[0], waited once). */
void bench_step(bench_job_t *job, const bench_layout_t *l);
/* Releases the step's requests. */
void bench_release(bench_job_t *job);

/* Small allreduces outside the timed regions: a barrier, the max of a double (times) and
 * the sum of a count (wrong elements) over all ranks. */
void bench_barrier(bench_job_t *job);
double bench_max_over_ranks(bench_job_t *job, double v);
int64_t bench_sum_over_ranks(bench_job_t *job, int64_t v);

/* Element i of tensor k in the input / output buffer. */
char *bench_in(const bench_job_t *job, const bench_layout_t *l, int k);
char *bench_out(const bench_job_t *job, const bench_layout_t *l, int k);

#endif /* HVD_BENCH_JOB_H_ */
