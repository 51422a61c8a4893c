/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line parsing of hvd_bench (see bench_options.h and usage() below). */
#define _GNU_SOURCE
#include "bench_options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvd/hvd.h>

#include "bench_dtype.h"

#define DEFAULT_MIN "8"
#define DEFAULT_MAX "256M"
#define DEFAULT_MAX_MANY "4M" /* --many N keeps N tensors of the largest size in memory */
#define DEFAULT_EXTRA "64M"
#define DEFAULT_FACTOR 4.0
#define DEFAULT_TARGET_S 0.3
#define MAX_STEP_BYTES ((size_t)1 << 30) /* one --many step's input, all tensors together */

static const char *const kCollNames[] = {"allreduce", "allgather", "broadcast", "alltoall",
                                         "reducescatter"};

const char *bench_coll_name(bench_coll_t coll) {
    return kCollNames[coll];
}

int bench_coll_reduces(bench_coll_t coll) {
    return coll == BENCH_ALLREDUCE || coll == BENCH_REDUCESCATTER;
}

int bench_owns_output(const bench_options_t *o) {
    return o->coll == BENCH_ALLTOALL || o->coll == BENCH_REDUCESCATTER ||
           (o->coll == BENCH_ALLGATHER && !o->inplace);
}

int bench_gathers_in_place(const bench_options_t *o) {
    return o->coll == BENCH_ALLGATHER && o->inplace;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: hvd_bench [options]   (launch with hvdrun -np N, mpirun, srun, torchrun)\n"
            "  -c COLL                  allreduce (default), allgather, broadcast, alltoall,\n"
            "                           reducescatter (the last two if this libhvd has them)\n"
            "  -b MIN -e MAX -f FACTOR  size sweep (default 8 .. 256M, x4; K/M/G suffixes)\n"
            "  -x LIST|none             extra sizes, comma separated (default 64M)\n"
            "  -d DTYPE                 float32 (default), float64, float16, bfloat16, int8,\n"
            "                           uint8, int16, uint16, int32, int64, bool\n"
            "  -o sum|avg|min|max|prod  reduce op (default sum; reducescatter: sum or avg)\n"
            "  -i 0|1                   in place (default 1; allreduce, broadcast, allgather:\n"
            "                           1 gathers into the caller's buffer, where each rank's\n"
            "                           input is its own block; 0 into a library-owned output)\n"
            "  -r ROOT                  broadcast root (default 0)\n"
            "  -t SECONDS               timed time per size (default 0.3; at least 3\n"
            "                           timed steps, up to -m)\n"
            "  -w N                     warm-up steps (default 2; 1 from 32 MiB on)\n"
            "  -m MAXITERS              cap on timed steps per size (default 1000000)\n"
            "  -C 0|1, --check 0|1      element-wise result check (default 1; -c 0|1 too)\n"
            "  --many N                 N tensors of each size per step, all enqueued, then\n"
            "                           all waited (fusion); sizes then default to 8 .. 4M\n"
            "  --grouped                the --many tensors as one grouped allreduce\n"
            "                           (hvd_grouped_allreduce_enqueue), waited once\n"
            "  --plot FILE.png          draw busbw against size (needs python3-matplotlib)\n"
            "  -T SECONDS               bound of each wait on a request (default 300)\n"
            "  --poll                   complete requests by polling hvd_request_test (with\n"
            "                           sched_yield) instead of hvd_request_wait\n"
            "  --bind                   pin each rank to one CPU (local rank mod #CPUs) before\n"
            "                           hvd_init, as Open MPI binds up to 2 ranks by default\n"
            "  -R 0|1                   1: tensors in hvd_mem_alloc memory, which the ranks of\n"
            "                           one host reduce in place (like nccl-tests -R; default 0)\n"
            "  --device cpu|cuda        cuda: tensors in CUDA memory of device local rank mod\n"
            "                           #devices (CUDA runtime loaded at run time; default cpu)\n"
            "  --autotune-from F,C,K    after hvd_init: fusion threshold F bytes, cycle time C\n"
            "                           ms, cache capacity K, then autotune on (the search\n"
            "                           starts there; settings set so are not held)\n"
            "  -v                       iteration counts, p10/p90 and page faults as comments\n"
            "Output: '#' comments, then per size\n"
            "  size_bytes count dtype op time_us algbw_GBps busbw_GBps\n"
            "time_us is the median step time (enqueue .. last wait completed), max over ranks.\n");
}

size_t bench_parse_size(const char *s) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0) return 0;
    switch (*end) {
        case '\0':
            break;
        case 'k':
        case 'K':
            v *= 1024.0;
            ++end;
            break;
        case 'm':
        case 'M':
            v *= 1024.0 * 1024.0;
            ++end;
            break;
        case 'g':
        case 'G':
            v *= 1024.0 * 1024.0 * 1024.0;
            ++end;
            break;
        default:
            return 0;
    }
    if (*end == 'B' || *end == 'b') ++end;
    return *end == '\0' ? (size_t)v : 0;
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* min, min*f, ... up to max, plus max and the extra sizes; sorted, without duplicates. */
static int size_list(size_t minb, size_t maxb, double factor, const char *extra, size_t *out) {
    int n = 0;
    if (minb == 0 || maxb < minb || factor <= 1.0) return -1;
    for (double s = (double)minb; s <= (double)maxb && n < BENCH_MAX_SIZES; s *= factor)
        out[n++] = (size_t)s;
    if (n < BENCH_MAX_SIZES && out[n - 1] != maxb) out[n++] = maxb;
    if (extra && *extra && strcmp(extra, "none") != 0) {
        char buf[1024], *save = NULL;
        snprintf(buf, sizeof buf, "%s", extra);
        for (char *tok = strtok_r(buf, ",", &save); tok && n < BENCH_MAX_SIZES;
             tok = strtok_r(NULL, ",", &save)) {
            size_t v = bench_parse_size(tok);
            if (v == 0) return -1;
            out[n++] = v;
        }
    }
    qsort(out, (size_t)n, sizeof *out, cmp_size);
    int m = 0;
    for (int i = 0; i < n; ++i)
        if (m == 0 || out[m - 1] != out[i]) out[m++] = out[i];
    return m;
}

/* -c takes a collective, or 0|1: the "-c 1" spelling of the result check. */
static int parse_coll(const char *arg, bench_options_t *o) {
    if (!strcmp(arg, "0") || !strcmp(arg, "1")) {
        o->check = arg[0] == '1';
        return 0;
    }
    for (int c = BENCH_ALLREDUCE; c <= BENCH_REDUCESCATTER; ++c)
        if (!strcmp(arg, kCollNames[c])) {
            o->coll = (bench_coll_t)c;
            return 0;
        }
    if (!strcmp(arg, "bcast")) {
        o->coll = BENCH_BROADCAST;
        return 0;
    }
    return -1;
}

typedef struct {
    const char *min, *max, *extra;
    double factor;
} sweep_args_t;

enum { OPT_MANY = 256, OPT_PLOT, OPT_POLL, OPT_BIND, OPT_GROUPED, OPT_DEVICE, OPT_AUTOTUNE_FROM };

/* One option; returns 0, or 2 after an error message naming the flag. */
static int apply_option(int opt, const char *arg, bench_options_t *o, sweep_args_t *sw, char *err,
                        size_t errlen) {
    char *end = NULL;
    switch (opt) {
        case 'c':
            if (parse_coll(arg, o) == 0) return 0;
            snprintf(err, errlen, "-c %s: not a collective", arg);
            return 2;
        case 'b':
            sw->min = arg;
            return 0;
        case 'e':
            sw->max = arg;
            return 0;
        case 'f':
            sw->factor = strtod(arg, &end);
            break;
        case 'x':
            sw->extra = arg;
            return 0;
        case 'd':
            o->dtype = bench_dtype_parse(arg);
            if (o->dtype >= 0) return 0;
            snprintf(err, errlen, "-d %s: unknown dtype", arg);
            return 2;
        case 'o':
            o->op = bench_op_parse(arg);
            if (o->op >= 0) return 0;
            snprintf(err, errlen, "-o %s: unknown op (sum, avg, min, max, prod)", arg);
            return 2;
        case 'i':
            o->inplace = (int)strtol(arg, &end, 10) != 0;
            break;
        case 'r':
            o->root = (int32_t)strtol(arg, &end, 10);
            break;
        case 't':
            o->target_s = strtod(arg, &end);
            break;
        case 'w':
            o->warmup = (int)strtol(arg, &end, 10);
            break;
        case 'm':
            o->max_iters = strtol(arg, &end, 10);
            break;
        case 'C':
            o->check = (int)strtol(arg, &end, 10) != 0;
            break;
        case 'R':
            o->shared_mem = (int)strtol(arg, &end, 10) != 0;
            break;
        case 'T':
            o->wait_ms = (int64_t)(strtod(arg, &end) * 1000.0);
            break;
        case OPT_MANY:
            o->many = (int)strtol(arg, &end, 10);
            break;
        case OPT_PLOT:
            o->plot_path = arg;
            return 0;
        case OPT_POLL:
            o->poll = 1;
            return 0;
        case OPT_GROUPED:
            o->grouped = 1;
            return 0;
        case OPT_BIND:
            o->bind = 1;
            return 0;
        case OPT_DEVICE:
            if (strcmp(arg, "cpu") != 0 && strcmp(arg, "cuda") != 0) {
                snprintf(err, errlen, "--device takes cpu or cuda, not '%s'", arg);
                return 2;
            }
            o->cuda = strcmp(arg, "cuda") == 0;
            return 0;
        case OPT_AUTOTUNE_FROM: {
            double *f = o->autotune_from;
            char tail;
            if (sscanf(arg, "%lf,%lf,%lf%c", &f[0], &f[1], &f[2], &tail) != 3 || f[0] < 0 ||
                f[1] < 0 || f[2] < 0) {
                snprintf(err, errlen, "--autotune-from takes BYTES,MS,ENTRIES, not '%s'", arg);
                return 2;
            }
            return 0;
        }
        case 'v':
            o->verbose = 1;
            return 0;
        default:
            snprintf(err, errlen, "unknown option");
            return 2;
    }
    if (end == arg || *end != '\0') {
        snprintf(err, errlen, "-%c %s: not a number", opt < 256 ? opt : '-', arg);
        return 2;
    }
    return 0;
}

static int validate(bench_options_t *o, const sweep_args_t *sw, char *err, size_t errlen) {
    if (o->coll == BENCH_ALLTOALL || o->coll == BENCH_REDUCESCATTER) o->inplace = 0;
    if (o->coll == BENCH_REDUCESCATTER && o->op != HVD_OP_SUM && o->op != HVD_OP_AVERAGE) {
        snprintf(err, errlen, "reducescatter takes -o sum or avg");
        return 2;
    }
    if (o->cuda && o->shared_mem) {
        snprintf(err, errlen,
                 "-R 1 (hvd_mem_alloc host memory) and --device cuda exclude each other");
        return 2;
    }
    if (o->grouped && o->coll != BENCH_ALLREDUCE) {
        snprintf(err, errlen, "--grouped takes -c allreduce");
        return 2;
    }
    if (o->dtype == HVD_DTYPE_BOOL && (o->op == HVD_OP_AVERAGE || o->op == HVD_OP_PRODUCT)) {
        snprintf(err, errlen, "-d bool takes -o sum, min or max");
        return 2;
    }
    if (o->many < 1 || o->warmup < 0 || o->max_iters < 1 || o->target_s <= 0 || o->wait_ms <= 0 ||
        o->root < 0) {
        snprintf(err, errlen, "--many, -m, -t and -T must be > 0; -w and -r >= 0");
        return 2;
    }
    const char *max = sw->max ? sw->max : (o->many > 1 ? DEFAULT_MAX_MANY : DEFAULT_MAX);
    const char *extra = sw->extra ? sw->extra : (o->many > 1 ? "none" : DEFAULT_EXTRA);
    o->nsizes =
        size_list(bench_parse_size(sw->min), bench_parse_size(max), sw->factor, extra, o->sizes);
    if (o->nsizes <= 0) {
        snprintf(err, errlen, "bad size sweep -b %s -e %s -f %g -x %s", sw->min, max, sw->factor,
                 extra);
        return 2;
    }
    if (o->sizes[o->nsizes - 1] > MAX_STEP_BYTES / (size_t)o->many) {
        snprintf(err, errlen, "--many %d tensors of %zu bytes exceed %zu bytes per step; lower -e",
                 o->many, o->sizes[o->nsizes - 1], MAX_STEP_BYTES);
        return 2;
    }
    return 0;
}

static void set_defaults(bench_options_t *o) {
    memset(o, 0, sizeof *o);
    o->coll = BENCH_ALLREDUCE;
    o->dtype = HVD_DTYPE_FLOAT32;
    o->op = HVD_OP_SUM;
    o->inplace = 1;
    o->target_s = DEFAULT_TARGET_S;
    o->warmup = 2;
    o->max_iters = 1000000;
    o->check = 1;
    o->many = 1;
    o->wait_ms = 300000;
    o->autotune_from[0] = -1;
}

int bench_parse_options(int argc, char **argv, int speak, bench_options_t *o) {
    static const struct option kLong[] = {
        {"check", required_argument, NULL, 'C'},
        {"many", required_argument, NULL, OPT_MANY},
        {"plot", required_argument, NULL, OPT_PLOT},
        {"poll", no_argument, NULL, OPT_POLL},
        {"grouped", no_argument, NULL, OPT_GROUPED},
        {"bind", no_argument, NULL, OPT_BIND},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"autotune-from", required_argument, NULL, OPT_AUTOTUNE_FROM},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    sweep_args_t sw = {DEFAULT_MIN, NULL, NULL, DEFAULT_FACTOR};
    char err[512] = "";
    int opt, rc = 0;
    set_defaults(o);
    opterr = 0;
    while (rc == 0 &&
           (opt = getopt_long(argc, argv, "c:b:e:f:x:d:o:i:r:t:w:m:C:R:T:vh", kLong, NULL)) != -1) {
        if (opt == 'h') {
            if (speak) usage(stdout);
            return 1;
        }
        if (opt == '?') {
            snprintf(err, sizeof err, "unknown option or missing value: %s", argv[optind - 1]);
            rc = 2;
            break;
        }
        rc = apply_option(opt, optarg, o, &sw, err, sizeof err);
    }
    if (rc == 0 && optind < argc) {
        snprintf(err, sizeof err, "unexpected argument '%s'", argv[optind]);
        rc = 2;
    }
    if (rc == 0) rc = validate(o, &sw, err, sizeof err);
    if (rc != 0 && speak) {
        fprintf(stderr, "hvd_bench: %s\n", err);
        usage(stderr);
    }
    return rc;
}
