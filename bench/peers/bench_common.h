// SPDX-License-Identifier: Apache-2.0
/*
 * bench_common.h - helpers shared by the *_perf benchmarks (C and C++).
 *
 * Output contract (every benchmark, one data line per message size):
 *
 *   size_bytes count dtype op time_us algbw_GBps busbw_GBps
 *
 * Lines starting with '#' are comments (configuration, errors, summary).
 * GB/s means 1e9 bytes/s.  time_us is the per-operation time averaged over
 * the timed iterations, taken as the MAX over ranks.  algbw = size/time,
 * busbw = algbw * factor (allreduce 2(n-1)/n, allgather (n-1)/n,
 * broadcast 1), as in nccl-tests.
 *
 * Default size sweep: 8 B .. 256 MiB in x4 steps (8, 32, ..., 128 MiB), plus
 * the end point (256 MiB) and the "extra" key sizes (default 64 MiB), so
 * that 8 B (latency) and 64 MiB (bandwidth) are always present.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_MAX_SIZES 128
#define BENCH_DEFAULT_MIN "8"
#define BENCH_DEFAULT_MAX "256M"
#define BENCH_DEFAULT_FACTOR 4.0
#define BENCH_DEFAULT_EXTRA "64M"
#define BENCH_DEFAULT_TARGET_S 0.3 /* timed seconds per size */
#define BENCH_CALIB_MIN_S 0.02     /* calibration stops after this long */
#define BENCH_HEADER "# size_bytes count dtype op time_us algbw_GBps busbw_GBps"

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "8", "4K", "64M", "1G" (binary multipliers).  Returns 0 on error. */
static inline size_t bench_parse_size(const char *s) {
    char *end = NULL;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || v < 0) return 0;
    switch (*end) {
        case '\0':
            break;
        case 'k':
        case 'K':
            v *= 1024.0;
            end++;
            break;
        case 'm':
        case 'M':
            v *= 1024.0 * 1024.0;
            end++;
            break;
        case 'g':
        case 'G':
            v *= 1024.0 * 1024.0 * 1024.0;
            end++;
            break;
        default:
            return 0;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') return 0;
    return (size_t)v;
}

static inline int bench_cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Builds the sorted, de-duplicated size list.  extra: comma separated list
 * of sizes (or NULL / "" / "none").  Returns the number of sizes, or -1. */
static inline int bench_size_list(size_t minb, size_t maxb, double factor, const char *extra,
                                  size_t *out, int maxn) {
    int n = 0, i, m;
    double s;
    if (minb == 0 || maxb < minb || factor <= 1.0) return -1;
    for (s = (double)minb; s <= (double)maxb && n < maxn; s *= factor)
        out[n++] = (size_t)s;
    if (n < maxn && out[n - 1] != maxb) out[n++] = maxb;
    if (extra && *extra && strcmp(extra, "none") != 0) {
        char buf[1024], *tok, *save = NULL;
        strncpy(buf, extra, sizeof(buf) - 1);
        buf[sizeof(buf) - 1] = '\0';
        for (tok = strtok_r(buf, ",", &save); tok && n < maxn; tok = strtok_r(NULL, ",", &save)) {
            size_t v = bench_parse_size(tok);
            if (v == 0) return -1;
            out[n++] = v;
        }
    }
    qsort(out, (size_t)n, sizeof(size_t), bench_cmp_size);
    for (i = 0, m = 0; i < n; i++)
        if (m == 0 || out[m - 1] != out[i]) out[m++] = out[i];
    return m;
}

/* Where a peer keeps the options every peer takes alike (the size sweep, timing, checking);
 * a null pointer is an option that peer does not take. */
struct bench_opts {
    size_t *minb, *maxb; /* -b MIN, -e MAX */
    double *factor;      /* -f FACTOR */
    const char **extra;  /* -x LIST */
    double *target;      /* -t SECONDS */
    int *warmup;         /* -w N */
    long *maxit;         /* -m MAXITERS */
    int *check;          /* -C 0|1 */
    int *inplace;        /* -i 0|1 */
    int *root;           /* -r ROOT */
    int *verbose;        /* -v */
};

/* Parses getopt's option `opt` (argument `arg`) into o if it is one of the common ones the
 * peer takes: 1; otherwise 0 (the peer's own option, or a usage error). */
static inline int bench_option(int opt, const char *arg, const struct bench_opts *o) {
    switch (opt) {
        case 'b':
            if (!o->minb) return 0;
            *o->minb = bench_parse_size(arg);
            return 1;
        case 'e':
            if (!o->maxb) return 0;
            *o->maxb = bench_parse_size(arg);
            return 1;
        case 'f':
            if (!o->factor) return 0;
            *o->factor = atof(arg);
            return 1;
        case 'x':
            if (!o->extra) return 0;
            *o->extra = arg;
            return 1;
        case 't':
            if (!o->target) return 0;
            *o->target = atof(arg);
            return 1;
        case 'w':
            if (!o->warmup) return 0;
            *o->warmup = atoi(arg);
            return 1;
        case 'm':
            if (!o->maxit) return 0;
            *o->maxit = atol(arg);
            return 1;
        case 'C':
            if (!o->check) return 0;
            *o->check = atoi(arg) != 0;
            return 1;
        case 'i':
            if (!o->inplace) return 0;
            *o->inplace = atoi(arg) != 0;
            return 1;
        case 'r':
            if (!o->root) return 0;
            *o->root = atoi(arg);
            return 1;
        case 'v':
            if (!o->verbose) return 0;
            *o->verbose = 1;
            return 1;
        default:
            return 0;
    }
}

/* Test pattern: small integers, so float sums over up to 2^18 ranks are
 * exact and the expected value of element i depends only on i mod 64. */
static inline float bench_val(int rank, size_t i) {
    return (float)((i + 7u * (unsigned)rank) & 63u);
}

#define BENCH_SENTINEL (-1.0f)

/* Next iteration count during calibration (geometric growth, bounded). */
static inline long bench_calib_next(long it, double dt, long maxit) {
    long mult = 64;
    if (dt > 0) {
        double m = ceil(1.5 * BENCH_CALIB_MIN_S / dt);
        mult = m < 2 ? 2 : (m > 64 ? 64 : (long)m);
    }
    it = it * mult;
    return it > maxit ? maxit : it;
}

/* Timed iterations filling target_s: at least 3 (a mean or median of one is a single
 * sample of a noisy host), at most maxit. */
static inline long bench_iters_for(double per_iter_s, double target_s, long maxit) {
    double it = per_iter_s > 0 ? ceil(target_s / per_iter_s) : (double)maxit;
    if (it < 3) it = 3;
    if (it > (double)maxit) it = (double)maxit;
    return (long)it;
}

/* Minor page faults of this process so far (for -v diagnostics). */
static inline long bench_minflt(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return 0;
    return ru.ru_minflt;
}

static inline void bench_print_line(size_t bytes, size_t count, const char *dtype, const char *op,
                                    double t_s, double busfactor) {
    double algbw = t_s > 0 ? (double)bytes / t_s / 1e9 : 0.0;
    printf("%12zu %12zu %8s %6s %12.2f %10.3f %10.3f\n", bytes, count, dtype, op, t_s * 1e6, algbw,
           algbw * busfactor);
    fflush(stdout);
}

#endif /* BENCH_COMMON_H */
