/* SPDX-License-Identifier: Apache-2.0 */
/* hvd_bench: nccl-tests style bandwidth / latency sweep of libhvd's collectives, printing the
 * format of the peer benchmarks in bench/peers (bench_common.h) so scripts/bench.sh can run
 * both side by side. Uses only the public C ABI. Launch with hvdrun -np N (or mpirun, srun,
 * torchrun).
 *
 * Per size: size_bytes count dtype op time_us algbw_GBps busbw_GBps, where time_us is the
 * median over timed steps of one step (first enqueue .. last completed wait), max over
 * ranks; busbw = algbw * 2(n-1)/n (allreduce), (n-1)/n (allgather, size = gathered output),
 * 1 (broadcast). With --many N a step is N tensors and size/count are per step. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvd/hvd.h>

#include "bench_bind.h"
#include "bench_device.h"
#include "bench_dtype.h"
#include "bench_optional.h"
#include "bench_options.h"
#include "bench_plot.h"
#include "bench_sweep.h"

#define BENCH_HEADER "# size_bytes count dtype op time_us algbw_GBps busbw_GBps"

/* Before hvd_init the rank is unknown; usage errors are printed by the process a launcher
 * calls rank 0 (or by every process when there is no launcher). */
static int launcher_rank_is_zero(void) {
    static const char *const kVars[] = {"HVD_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                        "PMI_RANK", "RANK"};
    for (size_t i = 0; i < sizeof kVars / sizeof kVars[0]; ++i) {
        const char *v = getenv(kVars[i]);
        if (v) return strcmp(v, "0") == 0;
    }
    return 1;
}

static double bus_factor(const bench_job_t *job) {
    double n = job->nranks;
    switch (job->o->coll) {
        case BENCH_ALLREDUCE:
            return 2.0 * (n - 1) / n;
        case BENCH_ALLGATHER:
            return (n - 1) / n;
        default:
            return 1.0;
    }
}

static void *alloc_or_fail(bench_job_t *job, size_t bytes, const char *what) {
    void *p = NULL;
    if (job->o->shared_mem) {
        hvd_status_t s = hvd_mem_alloc(bytes ? bytes : 1, &p);
        if (s != HVD_OK) {
            char detail[256];
            hvd_last_error(detail, sizeof detail);
            fprintf(stderr, "hvd_bench: rank %d: hvd_mem_alloc of %zu bytes for %s: %s\n",
                    job->rank, bytes, what, detail);
            bench_fail(job, what, s);
        }
    } else if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0) {
        fprintf(stderr, "hvd_bench: rank %d: cannot allocate %zu bytes for %s\n", job->rank, bytes,
                what);
        bench_fail(job, what, HVD_ERR_NO_MEMORY);
    }
    memset(p, 0, bytes); /* first touch here, not inside a timed step */
    return p;
}

/* Buffers for the largest size, names and request slots for every tensor of a step. */
static void job_allocate(bench_job_t *job) {
    const bench_options_t *o = job->o;
    bench_layout_t big = bench_layout_for(job, o->sizes[o->nsizes - 1]);
    size_t bytes = big.count * job->esize * (size_t)o->many;
    /* in place allgather: each tensor's gathered output, this rank's input inside it */
    if (bench_gathers_in_place(o)) bytes *= (size_t)job->nranks;
    job->in = alloc_or_fail(job, bytes, "input tensors");
    int own_out = !o->inplace && !bench_owns_output(o);
    job->out = own_out ? alloc_or_fail(job, bytes, "output tensors") : job->in;
    job->reqs = calloc((size_t)o->many, sizeof *job->reqs);
    job->names = calloc((size_t)o->many, sizeof *job->names);
    if (!job->reqs || !job->names) bench_fail(job, "allocating request slots", HVD_ERR_NO_MEMORY);
    if (o->grouped) {
        job->group_in = calloc((size_t)o->many, sizeof *job->group_in);
        job->group_out = calloc((size_t)o->many, sizeof *job->group_out);
        job->group_in_p = calloc((size_t)o->many, sizeof *job->group_in_p);
        job->group_out_p = calloc((size_t)o->many, sizeof *job->group_out_p);
        if (!job->group_in || !job->group_out || !job->group_in_p || !job->group_out_p)
            bench_fail(job, "allocating group descriptors", HVD_ERR_NO_MEMORY);
    }
    for (int k = 0; k < o->many; ++k)
        snprintf(job->names[k], BENCH_NAME_LEN, "hvd_bench.%s.%d", bench_coll_name(o->coll), k);
    if (o->cuda) bench_device_open(job, bytes, own_out ? bytes : 0);
}

static void release_shared(void *p) {
    hvd_mem_free(p);
}

static void job_free(bench_job_t *job) {
    if (job->o->cuda) bench_device_close(job);
    void (*release)(void *) = job->o->shared_mem ? release_shared : free;
    if (job->out != job->in) release(job->out);
    release(job->in);
    free(job->reqs);
    free(job->names);
    free(job->group_in);
    free(job->group_out);
    free(job->group_in_p);
    free(job->group_out_p);
}

static void print_header(const bench_job_t *job, int cpu) {
    const bench_options_t *o = job->o;
    int32_t local = 0;
    hvd_local_size(job->ctx, &local);
    printf(
        "# hvd_bench: coll=%s nranks=%d inplace=%d dtype=%s op=%s many=%d target_s=%.2f "
        "warmup=%d check=%d completion=%s memory=%s\n",
        bench_coll_name(o->coll), job->nranks, o->inplace, bench_dtype_name(o->dtype),
        bench_coll_reduces(o->coll) ? bench_op_name(o->op) : "none", o->many, o->target_s,
        o->warmup, o->check, o->poll ? "poll" : "wait",
        o->cuda ? "cuda" : (o->shared_mem ? "hvd_mem_alloc" : "malloc"));
    if (o->bind) printf("# bind: rank 0 pinned to cpu %d (each rank: local rank mod #cpus)\n", cpu);
    printf("# libhvd: %s local_size=%d time=median step (enqueue .. wait), max over ranks\n",
           hvd_version_string(), local);
    if (o->many > 1)
        printf(
            "# many=%d: one step enqueues %d tensors%s, then waits for all; size_bytes and count "
            "are per step\n",
            o->many, o->many, o->grouped ? " as one grouped allreduce" : "");
    printf("%s\n", BENCH_HEADER);
    fflush(stdout);
}

/* Prints one size's line (rank 0); returns its busbw. */
static double print_result(const bench_job_t *job, const bench_result_t *r) {
    const bench_options_t *o = job->o;
    size_t bytes = r->layout.bytes * (size_t)o->many;
    size_t count = bytes / job->esize;
    double algbw = r->median_s > 0 ? (double)bytes / r->median_s / 1e9 : 0.0;
    double busbw = algbw * bus_factor(job);
    printf("%12zu %12zu %8s %6s %12.2f %10.3f %10.3f\n", bytes, count, bench_dtype_name(o->dtype),
           bench_coll_reduces(o->coll) ? bench_op_name(o->op) : "none", r->median_s * 1e6, algbw,
           busbw);
    if (r->wrong)
        printf("# ERROR size %zu: %lld wrong elements (all ranks)\n", bytes, (long long)r->wrong);
    if (o->verbose)
        printf(
            "#   iters=%ld rank0_p10_us=%.2f rank0_p90_us=%.2f "
            "rank0_minor_faults_per_iter=%.1f\n",
            r->iters, r->p10_s * 1e6, r->p90_s * 1e6, r->faults_per_step);
    fflush(stdout);
    return busbw;
}

static void plot(const bench_job_t *job, const size_t *bytes, const double *busbw) {
    char title[160];
    snprintf(title, sizeof title, "libhvd %s, %d ranks, %s%s", bench_coll_name(job->o->coll),
             job->nranks, bench_dtype_name(job->o->dtype), job->o->many > 1 ? ", --many" : "");
    if (bench_plot(job->o->plot_path, title, bytes, busbw, job->o->nsizes) == 0)
        printf("# plot: %s\n", job->o->plot_path);
}

/* The whole sweep; returns the number of wrong elements over all sizes and ranks. */
static int64_t sweep(bench_job_t *job) {
    size_t bytes[BENCH_MAX_SIZES];
    double busbw[BENCH_MAX_SIZES];
    int64_t wrong = 0;
    for (int i = 0; i < job->o->nsizes; ++i) {
        bench_result_t r = bench_measure(job, job->o->sizes[i]);
        wrong += r.wrong;
        bytes[i] = r.layout.bytes * (size_t)job->o->many;
        if (job->rank == 0) busbw[i] = print_result(job, &r);
    }
    if (job->rank == 0) {
        printf("# errors: %lld%s\n", (long long)wrong, job->o->check ? "" : " (check disabled)");
        if (job->o->plot_path) plot(job, bytes, busbw);
        fflush(stdout);
    }
    return wrong;
}

int main(int argc, char **argv) {
    bench_options_t opts;
    int rc = bench_parse_options(argc, argv, launcher_rank_is_zero(), &opts);
    if (rc != 0) return rc == 1 ? 0 : 2;
    if (bench_coll_available(opts.coll, launcher_rank_is_zero()) != 0) return 2;

    bench_job_t job;
    memset(&job, 0, sizeof job);
    job.o = &opts;
    job.esize = bench_dtype_size(opts.dtype);
    job.optional_enqueue = bench_optional_enqueue(opts.coll);
    int cpu = opts.bind ? bench_bind_to_local_cpu() : -1;
    hvd_status_t s = hvd_init(NULL, &job.ctx);
    if (s != HVD_OK) {
        char detail[1024] = "";
        hvd_last_error(detail, sizeof detail);
        fprintf(stderr, "hvd_bench: hvd_init failed: %s: %s\n", hvd_status_name(s), detail);
        return 2;
    }
    hvd_rank(job.ctx, NULL, &job.rank);
    hvd_size(job.ctx, NULL, &job.nranks);
    if (opts.root >= job.nranks) {
        if (job.rank == 0)
            fprintf(stderr, "hvd_bench: -r %d: only %d ranks\n", opts.root, job.nranks);
        hvd_finalize(job.ctx);
        return 2;
    }
    if (opts.autotune_from[0] >= 0) {
        /* the search starts from the configuration in force when autotune turns on */
        const int32_t keys[4] = {HVD_CONFIG_FUSION_THRESHOLD, HVD_CONFIG_CYCLE_TIME,
                                 HVD_CONFIG_CACHE_CAPACITY, HVD_CONFIG_AUTOTUNE};
        const double values[4] = {opts.autotune_from[0], opts.autotune_from[1],
                                  opts.autotune_from[2], 1};
        for (int k = 0; k < 4; ++k) {
            if (hvd_config_set(job.ctx, keys[k], values[k]) == HVD_OK) continue;
            char detail[1024] = "";
            hvd_last_error(detail, sizeof detail);
            fprintf(stderr, "hvd_bench: rank %d: --autotune-from: %s\n", job.rank, detail);
            hvd_finalize(job.ctx);
            return 2;
        }
    }
    job_allocate(&job);
    if (job.rank == 0) print_header(&job, cpu);
    int64_t wrong = sweep(&job);
    job_free(&job);
    s = hvd_finalize(job.ctx);
    if (s != HVD_OK) {
        fprintf(stderr, "hvd_bench: rank %d: hvd_finalize: %s\n", job.rank, hvd_status_name(s));
        return 2;
    }
    return wrong ? 1 : 0;
}
