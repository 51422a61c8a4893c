/* SPDX-License-Identifier: Apache-2.0 */
/* One size of the sweep, measured the way the peer benchmarks in bench/peers do it:
 * checked warm-up, calibration to ~target_s of timed work, a timed loop with outputs reset to
 * a sentinel, and a check after it. Unlike the peers (mean over the loop) each step is timed
 * on its own and the median is reported, so a hypervisor hiccup does not move the result. */
#define _GNU_SOURCE
#include "bench_sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_data.h"

#define CALIB_MIN_S 0.02             /* calibration stops once this much was timed */
#define BIG_BYTES ((size_t)32 << 20) /* one warm-up step from here on, as the peers */
#define MIN_TIMED_STEPS 3            /* a median of fewer is one sample (as the peers) */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long minor_faults(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* q-quantile of a sorted array (nearest rank; the median of an even count averages). */
static double quantile(const double *v, long n, double q) {
    if (q == 0.5 && n % 2 == 0) return 0.5 * (v[n / 2 - 1] + v[n / 2]);
    long i = (long)(q * (double)(n - 1) + 0.5);
    return v[i];
}

bench_layout_t bench_layout_for(const bench_job_t *job, size_t size_bytes) {
    bench_layout_t l;
    size_t count = size_bytes / job->esize, n = (size_t)job->nranks;
    if (count < 1) count = 1;
    if (job->o->coll == BENCH_ALLGATHER) { /* size is the gathered output */
        count /= n;
        if (count < 1) count = 1;
        l.bytes = count * n * job->esize;
    } else if (bench_owns_output(job->o)) { /* alltoall, reducescatter: an even */
        count -= count % n;                 /* split of the input */
        if (count < n) count = n;
        l.bytes = count * job->esize;
    } else {
        l.bytes = count * job->esize;
    }
    l.count = count;
    return l;
}

/* One step, timed from the first enqueue to the last completed wait. */
static double timed_step(bench_job_t *job, const bench_layout_t *l) {
    double t0 = now_s();
    bench_step(job, l);
    return now_s() - t0;
}

/* Doubles `it` (up to 64x, as bench_common.h) until a run of it steps takes CALIB_MIN_S on
 * the slowest rank; returns the number of steps that fill target_s, at least MIN_TIMED_STEPS
 * (at most max_iters). */
static long calibrate(bench_job_t *job, const bench_layout_t *l) {
    long it = 1, max_it = job->o->max_iters;
    double dt;
    for (;;) {
        bench_barrier(job);
        double t0 = now_s();
        for (long k = 0; k < it; ++k) {
            bench_step(job, l);
            bench_release(job);
        }
        dt = bench_max_over_ranks(job, now_s() - t0);
        if (dt >= CALIB_MIN_S || it >= max_it) break;
        double m = dt > 0 ? ceil(1.5 * CALIB_MIN_S / dt) : 64;
        it *= m < 2 ? 2 : (m > 64 ? 64 : (long)m);
        if (it > max_it) it = max_it;
    }
    double iters = ceil(job->o->target_s / (dt / (double)it));
    if (iters < MIN_TIMED_STEPS) iters = MIN_TIMED_STEPS;
    return iters > (double)max_it ? max_it : (long)iters;
}

/* The warm-up steps; the first one's result is checked. */
static long warm_up(bench_job_t *job, const bench_layout_t *l) {
    int n = l->bytes * (size_t)job->o->many >= BIG_BYTES ? 1 : job->o->warmup;
    long wrong = 0;
    bench_data_init(job, l);
    bench_barrier(job);
    bench_step(job, l);
    if (job->o->check) wrong = bench_data_check(job, l, "warm-up");
    bench_release(job);
    for (int w = 1; w < n; ++w) {
        bench_step(job, l);
        bench_release(job);
    }
    return wrong;
}

/* The last timed step's result (its requests are still held). In-place allreduce reduces
 * its own output again every step, so it gets fresh inputs and one more step first. */
static long check_after_timing(bench_job_t *job, const bench_layout_t *l) {
    if (job->o->coll == BENCH_ALLREDUCE && job->o->inplace) {
        bench_release(job);
        bench_data_init(job, l);
        bench_barrier(job);
        bench_step(job, l);
    }
    long wrong = bench_data_check(job, l, "timed");
    bench_release(job);
    return wrong;
}

bench_result_t bench_measure(bench_job_t *job, size_t size_bytes) {
    bench_result_t r;
    r.layout = bench_layout_for(job, size_bytes);
    const bench_layout_t *l = &r.layout;
    long wrong = warm_up(job, l);
    r.iters = calibrate(job, l);
    double *times = malloc((size_t)r.iters * sizeof *times);
    if (!times) bench_fail(job, "allocating the timing array", HVD_ERR_NO_MEMORY);

    bench_data_reset(job, l);
    bench_barrier(job);
    long faults = minor_faults();
    for (long k = 0; k < r.iters; ++k) {
        times[k] = timed_step(job, l);
        if (k + 1 < r.iters) bench_release(job);
    }
    r.faults_per_step = (double)(minor_faults() - faults) / (double)r.iters;
    if (job->o->check)
        wrong += check_after_timing(job, l);
    else
        bench_release(job);

    qsort(times, (size_t)r.iters, sizeof *times, cmp_double);
    r.p10_s = quantile(times, r.iters, 0.1);
    r.p90_s = quantile(times, r.iters, 0.9);
    r.median_s = bench_max_over_ranks(job, quantile(times, r.iters, 0.5));
    r.wrong = bench_sum_over_ranks(job, wrong);
    free(times);
    return r;
}
