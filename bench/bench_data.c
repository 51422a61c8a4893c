/* SPDX-License-Identifier: Apache-2.0 */
/* Test data of one size for each collective (see bench_data.h). */
#include "bench_data.h"

#include <stdio.h>
#include <string.h>

#include "bench_device.h"
#include "bench_dtype.h"
#include "bench_pattern.h"

static void fill_input(bench_job_t *job, const bench_layout_t *l, int k, int32_t owner) {
    unsigned char block[BENCH_BLOCK_BYTES];
    bench_block_input(job->o->dtype, job->o->op, bench_seed(owner, k), block);
    bench_fill(bench_in(job, l, k), l->count, block, job->esize);
}

static void fill_sentinel(bench_job_t *job, char *p, const bench_layout_t *l) {
    memset(p, BENCH_SENTINEL_BYTE, l->count * job->esize);
}

/* Broadcast: the root holds its pattern; elsewhere the buffer that receives is the
 * sentinel (in place: the input itself; out of place: the output on every rank). */
static void broadcast_init(bench_job_t *job, const bench_layout_t *l, int k) {
    int32_t root = job->o->root;
    if (job->rank == root || !job->o->inplace) fill_input(job, l, k, root);
    if (job->rank != root && job->o->inplace) fill_sentinel(job, bench_in(job, l, k), l);
    if (!job->o->inplace) fill_sentinel(job, bench_out(job, l, k), l);
}

static void fill_host(bench_job_t *job, const bench_layout_t *l);
static void reset_host(bench_job_t *job, const bench_layout_t *l);

void bench_data_init(bench_job_t *job, const bench_layout_t *l) {
    fill_host(job, l);
    if (job->o->cuda) bench_device_upload(job);
}

static void fill_host(bench_job_t *job, const bench_layout_t *l) {
    for (int k = 0; k < job->o->many; ++k) {
        if (job->o->coll == BENCH_BROADCAST) {
            broadcast_init(job, l, k);
            continue;
        }
        fill_input(job, l, k, job->rank);
        if (job->o->coll == BENCH_ALLREDUCE && !job->o->inplace)
            fill_sentinel(job, bench_out(job, l, k), l);
    }
    if (bench_gathers_in_place(job->o)) reset_host(job, l);
}

void bench_data_reset(bench_job_t *job, const bench_layout_t *l) {
    if (bench_owns_output(job->o)) return; /* a fresh library-owned output per op */
    if (job->o->inplace && job->o->coll == BENCH_ALLREDUCE) {
        bench_data_init(job, l);
        return;
    }
    reset_host(job, l);
    if (job->o->cuda) bench_device_upload(job);
}

static void reset_host(bench_job_t *job, const bench_layout_t *l) {
    const bench_options_t *o = job->o;
    if (bench_owns_output(o)) return;
    if (bench_gathers_in_place(o)) { /* every block but this rank's own */
        for (int k = 0; k < o->many; ++k)
            for (int32_t r = 0; r < job->nranks; ++r)
                if (r != job->rank)
                    fill_sentinel(job, bench_out(job, l, k) + (size_t)r * l->count * job->esize, l);
        return;
    }
    for (int k = 0; k < o->many; ++k) {
        if (!o->inplace)
            fill_sentinel(job, bench_out(job, l, k), l);
        else if (job->rank != o->root)
            fill_sentinel(job, bench_in(job, l, k), l);
    }
}

static long report(bench_job_t *job, const bench_layout_t *l, int k, const char *when, long wrong,
                   const bench_mismatch_t *m) {
    if (wrong == 0) return 0;
    fprintf(stderr,
            "# ERROR rank %d size %zu tensor %d (%s): %ld wrong elements, first at %zu: got %g "
            "expected %g\n",
            job->rank, l->bytes, k, when, wrong, m->index, m->got, m->want);
    return wrong;
}

/* The library-owned output of tensor k, if it has ndim 1 and `want` elements of the dtype;
 * otherwise reports what it has and returns NULL. */
static const char *owned_output(bench_job_t *job, const bench_layout_t *l, int k, size_t want,
                                const char *when) {
    hvd_tensor_t out;
    hvd_status_t s = hvd_request_output(job->reqs[k], 0, &out);
    if (s != HVD_OK) bench_fail(job, "reading a library-owned output", s);
    if (out.ndim == 1 && out.dtype == job->o->dtype && (size_t)out.shape[0] == want) {
        if (out.device_type == HVD_DEVICE_CUDA)
            return bench_device_fetch(job, out.data, want * job->esize);
        return out.data;
    }
    fprintf(stderr,
            "# ERROR rank %d size %zu tensor %d (%s): %s output has ndim %d, %lld elements, "
            "dtype %d; expected 1, %zu, %d\n",
            job->rank, l->bytes, k, when, bench_coll_name(job->o->coll), out.ndim,
            out.ndim > 0 ? (long long)out.shape[0] : 0LL, out.dtype, want, job->o->dtype);
    return NULL;
}

/* n chunks of c elements; chunk r must be the pattern of rank r's tensor k from element
 * r_phase * c on (allgather: from 0; alltoall: rank r's chunk for this rank). */
static long check_chunks(bench_job_t *job, const bench_layout_t *l, int k, const char *out,
                         size_t c, size_t phase, const char *when) {
    const bench_options_t *o = job->o;
    long wrong = 0;
    for (int32_t r = 0; r < job->nranks; ++r) {
        unsigned char block[BENCH_BLOCK_BYTES];
        bench_mismatch_t m;
        bench_block_input(o->dtype, o->op, bench_seed(r, k), block);
        const char *chunk = out + (size_t)r * c * job->esize;
        long w = bench_compare(o->dtype, o->op, chunk, c, block, phase, &m);
        m.index += (size_t)r * c;
        wrong += report(job, l, k, when, w, &m);
    }
    return wrong;
}

/* Allgather: rank r's whole input in chunk r. Alltoall (even split): rank r's chunk number
 * `this rank` in chunk r. Reducescatter: block `this rank` of the reduced tensor. */
static long check_owned(bench_job_t *job, const bench_layout_t *l, int k, const char *when) {
    const bench_options_t *o = job->o;
    size_t n = (size_t)job->nranks, me = (size_t)job->rank;
    size_t want = o->coll == BENCH_ALLGATHER  ? l->count * n
                  : o->coll == BENCH_ALLTOALL ? l->count
                                              : l->count / n;
    const char *out = owned_output(job, l, k, want, when);
    if (!out) return (long)want;
    if (o->coll == BENCH_ALLGATHER) return check_chunks(job, l, k, out, l->count, 0, when);
    if (o->coll == BENCH_ALLTOALL)
        return check_chunks(job, l, k, out, want / n, me * want / n, when);
    unsigned char block[BENCH_BLOCK_BYTES];
    bench_mismatch_t m;
    bench_block_reduced(o->dtype, o->op, job->nranks, k, block);
    return report(job, l, k, when, bench_compare(o->dtype, o->op, out, want, block, me * want, &m),
                  &m);
}

static long check_tensor(bench_job_t *job, const bench_layout_t *l, int k, const char *when) {
    const bench_options_t *o = job->o;
    unsigned char block[BENCH_BLOCK_BYTES];
    bench_mismatch_t m;
    if (bench_owns_output(o)) return check_owned(job, l, k, when);
    if (bench_gathers_in_place(o))
        return check_chunks(job, l, k, bench_out(job, l, k), l->count, 0, when);
    if (o->coll == BENCH_ALLREDUCE)
        bench_block_reduced(o->dtype, o->op, job->nranks, k, block);
    else
        bench_block_input(o->dtype, o->op, bench_seed(o->root, k), block);
    const char *result = o->inplace ? bench_in(job, l, k) : bench_out(job, l, k);
    return report(job, l, k, when, bench_compare(o->dtype, o->op, result, l->count, block, 0, &m),
                  &m);
}

long bench_data_check(bench_job_t *job, const bench_layout_t *l, const char *when) {
    long wrong = 0;
    if (job->o->cuda) bench_device_download(job);
    for (int k = 0; k < job->o->many; ++k)
        wrong += check_tensor(job, l, k, when);
    return wrong;
}
