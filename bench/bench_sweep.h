// SPDX-License-Identifier: Apache-2.0
/* Measurement of one size: warm-up, calibration, timed steps, checks. */
#ifndef HVD_BENCH_SWEEP_H_
#define HVD_BENCH_SWEEP_H_

#include "bench_job.h"

typedef struct {
    bench_layout_t layout;
    double median_s;        /* median step time, max over ranks */
    double p10_s, p90_s;    /* this rank's spread (for -v) */
    long iters;             /* timed steps */
    double faults_per_step; /* this rank's minor page faults per timed step */
    int64_t wrong;          /* wrong elements, all ranks */
} bench_result_t;

/* The layout of a sweep size for the job's collective, dtype and rank count. */
bench_layout_t bench_layout_for(const bench_job_t *job, size_t size_bytes);

/* Measures one size. Collective: every rank calls it with the same size. */
bench_result_t bench_measure(bench_job_t *job, size_t size_bytes);

#endif /* HVD_BENCH_SWEEP_H_ */
