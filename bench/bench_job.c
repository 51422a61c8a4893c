/* SPDX-License-Identifier: Apache-2.0 */
/* The libhvd calls of hvd_bench: enqueue, wait, release and the small helper allreduces. */
#include "bench_job.h"

#include "bench_device.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bench_fail(bench_job_t *job, const char *what, hvd_status_t s) {
    char detail[1024] = "";
    hvd_last_error(detail, sizeof detail);
    fprintf(stderr, "hvd_bench: rank %d: %s: %s: %s\n", job->rank, what, hvd_status_name(s),
            detail);
    fflush(stderr);
    hvd_abort(job->ctx, HVD_ERR_ABORTED);
    hvd_finalize(job->ctx);
    exit(2);
}

static hvd_tensor_t host_tensor(void *data, int32_t dtype, const int64_t *shape) {
    hvd_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.ndim = 1;
    t.shape = shape;
    t.device_type = HVD_DEVICE_CPU;
    return t;
}

/* A tensor over a host buffer of the job, or (--device cuda) over its device mirror. */
static hvd_tensor_t job_tensor(const bench_job_t *job, char *data, int32_t dtype,
                               const int64_t *shape) {
    hvd_tensor_t t = host_tensor(data, dtype, shape);
    if (job->o->cuda) {
        t.data = bench_device_ptr(job, data);
        t.device_type = HVD_DEVICE_CUDA;
        t.device_id = job->device;
    }
    return t;
}

char *bench_in(const bench_job_t *job, const bench_layout_t *l, int k) {
    if (bench_gathers_in_place(job->o))
        return bench_out(job, l, k) + (size_t)job->rank * l->count * job->esize;
    return job->in + (size_t)k * l->count * job->esize;
}

char *bench_out(const bench_job_t *job, const bench_layout_t *l, int k) {
    size_t blocks = bench_gathers_in_place(job->o) ? (size_t)job->nranks : 1;
    return job->out + (size_t)k * blocks * l->count * job->esize;
}

void bench_enqueue(bench_job_t *job, const bench_layout_t *l, int k) {
    const bench_options_t *o = job->o;
    int64_t shape[1] = {(int64_t)l->count};
    hvd_tensor_t in = job_tensor(job, bench_in(job, l, k), o->dtype, shape);
    hvd_tensor_t out = job_tensor(job, bench_out(job, l, k), o->dtype, shape);
    hvd_op_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = HVD_OP_FIELD_NAME;
    p.name = job->names[k];
    hvd_status_t s = HVD_ERR_INTERNAL;
    switch (o->coll) {
        case BENCH_ALLREDUCE:
            p.field_mask |= HVD_OP_FIELD_REDUCE_OP;
            p.reduce_op = o->op;
            s = hvd_allreduce_enqueue(job->ctx, &in, &out, &p, &job->reqs[k]);
            break;
        case BENCH_ALLGATHER:
            if (bench_gathers_in_place(o)) {
                int64_t gathered[1] = {(int64_t)l->count * job->nranks};
                out = job_tensor(job, bench_out(job, l, k), o->dtype, gathered);
                s = hvd_allgather_into_enqueue(job->ctx, &in, &out, &p, &job->reqs[k]);
            } else {
                s = hvd_allgather_enqueue(job->ctx, &in, &p, &job->reqs[k]);
            }
            break;
        case BENCH_BROADCAST:
            p.field_mask |= HVD_OP_FIELD_ROOT;
            p.root_rank = o->root;
            s = hvd_broadcast_enqueue(job->ctx, &in, &out, &p, &job->reqs[k]);
            break;
        case BENCH_REDUCESCATTER:
            p.field_mask |= HVD_OP_FIELD_REDUCE_OP;
            p.reduce_op = o->op;
            s = job->optional_enqueue(job->ctx, &in, &p, &job->reqs[k]);
            break;
        case BENCH_ALLTOALL: /* default: an even split */
            s = job->optional_enqueue(job->ctx, &in, &p, &job->reqs[k]);
            break;
    }
    if (s != HVD_OK) {
        char what[128];
        snprintf(what, sizeof what, "enqueue of %s '%s' (%zu bytes)", bench_coll_name(o->coll),
                 job->names[k], l->bytes);
        bench_fail(job, what, s);
    }
}

/* --poll: the calling thread never sleeps, so no wake-up sits between the engine completing
 * the request and the step's clock stopping; it yields so an engine thread that shares its
 * CPU still runs. Same bound as a wait. */
static hvd_status_t poll_request(hvd_request_h req, int64_t wait_ms) {
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned long spins = 1;; ++spins) {
        hvd_status_t s = hvd_request_test(req);
        if (s != HVD_INPROGRESS) return s;
        sched_yield();
        if (spins % 1024 != 0) continue;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms >= wait_ms) return HVD_INPROGRESS;
    }
}

static void wait_one(bench_job_t *job, hvd_request_h req, const char *what) {
    hvd_status_t s =
        job->o->poll ? poll_request(req, job->o->wait_ms) : hvd_request_wait(req, job->o->wait_ms);
    if (s == HVD_OK) return;
    if (s == HVD_INPROGRESS) {
        fprintf(stderr, "hvd_bench: rank %d: %s did not complete within %.0f s (-T)\n", job->rank,
                what, (double)job->o->wait_ms / 1000.0);
        s = HVD_ERR_TIMED_OUT;
    }
    bench_fail(job, what, s);
}

/* --grouped: the step's tensors as one grouped allreduce (members "hvd_bench.group.<k>"). */
static void enqueue_group(bench_job_t *job, const bench_layout_t *l) {
    const bench_options_t *o = job->o;
    int64_t shape[1] = {(int64_t)l->count};
    for (int k = 0; k < o->many; ++k) {
        job->group_in[k] = job_tensor(job, bench_in(job, l, k), o->dtype, shape);
        job->group_out[k] = job_tensor(job, bench_out(job, l, k), o->dtype, shape);
        job->group_in_p[k] = &job->group_in[k];
        job->group_out_p[k] = &job->group_out[k];
    }
    hvd_op_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_REDUCE_OP;
    p.name = "hvd_bench.group";
    p.reduce_op = o->op;
    hvd_status_t s = hvd_grouped_allreduce_enqueue(job->ctx, job->group_in_p, job->group_out_p,
                                                   o->many, &p, &job->reqs[0]);
    if (s != HVD_OK) bench_fail(job, "enqueue of the grouped allreduce", s);
}

void bench_step(bench_job_t *job, const bench_layout_t *l) {
    if (job->o->grouped) {
        enqueue_group(job, l);
        wait_one(job, job->reqs[0], "the grouped allreduce");
        return;
    }
    for (int k = 0; k < job->o->many; ++k)
        bench_enqueue(job, l, k);
    for (int k = 0; k < job->o->many; ++k)
        wait_one(job, job->reqs[k], job->names[k]);
}

void bench_release(bench_job_t *job) {
    for (int k = 0; k < job->o->many; ++k) {
        if (job->reqs[k] != NULL) hvd_request_release(job->reqs[k]);
        job->reqs[k] = NULL;
    }
}

/* One in-place allreduce of a single element, waited for and released. */
static void small_allreduce(bench_job_t *job, void *v, int32_t dtype, int32_t op,
                            const char *name) {
    int64_t shape[1] = {1};
    hvd_tensor_t t = host_tensor(v, dtype, shape); /* on the host, whatever --device says */
    hvd_op_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_REDUCE_OP;
    p.name = name;
    p.reduce_op = op;
    hvd_request_h req;
    hvd_status_t s = hvd_allreduce_enqueue(job->ctx, &t, &t, &p, &req);
    if (s != HVD_OK) bench_fail(job, name, s);
    wait_one(job, req, name);
    hvd_request_release(req);
}

void bench_barrier(bench_job_t *job) {
    int32_t one = 1; /* completes only once every rank has enqueued it */
    small_allreduce(job, &one, HVD_DTYPE_INT32, HVD_OP_SUM, "hvd_bench.barrier");
}

double bench_max_over_ranks(bench_job_t *job, double v) {
    small_allreduce(job, &v, HVD_DTYPE_FLOAT64, HVD_OP_MAX, "hvd_bench.max");
    return v;
}

int64_t bench_sum_over_ranks(bench_job_t *job, int64_t v) {
    small_allreduce(job, &v, HVD_DTYPE_INT64, HVD_OP_SUM, "hvd_bench.sum");
    return v;
}
