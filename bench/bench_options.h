// SPDX-License-Identifier: Apache-2.0
/* Command line of hvd_bench. The sweep and timing flags are those of the peer benchmarks in
 * bench/peers (mpi_allreduce_perf and friends), so run_all.sh's SWEEP flags (-t, -e, -x) work
 * unchanged for libhvd. */
#ifndef HVD_BENCH_OPTIONS_H_
#define HVD_BENCH_OPTIONS_H_

#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_SIZES 128

typedef enum {
    BENCH_ALLREDUCE,
    BENCH_ALLGATHER,
    BENCH_BROADCAST,
    BENCH_ALLTOALL,
    BENCH_REDUCESCATTER
} bench_coll_t;

typedef struct {
    bench_coll_t coll;
    int32_t dtype; /* hvd_dtype_t */
    int32_t op;    /* hvd_reduce_op_t (allreduce only) */
    int inplace;   /* out->data == in->data (allreduce, broadcast) */
    int32_t root;  /* broadcast root */
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    double target_s;       /* timed seconds per size */
    int warmup;            /* warm-up steps per size (1 from 32 MiB on) */
    long max_iters;        /* cap on timed steps per size */
    int check;             /* element-wise result check */
    int many;              /* tensors per step (fusion) */
    int grouped;           /* --grouped: the step's tensors as one grouped allreduce */
    const char *plot_path; /* --plot FILE.png, or NULL */
    int verbose;           /* iteration counts, spread and page faults as comments */
    int64_t wait_ms;       /* bound of each wait on a request */
    int poll;              /* complete by polling hvd_request_test instead of a blocking wait */
    int bind;              /* pin the process to one CPU (by local rank) before hvd_init */
    int shared_mem;        /* -R 1: tensors in hvd_mem_alloc memory */
    int cuda;              /* --device cuda: tensors in CUDA device memory */
    /* --autotune-from F,C,K: fusion threshold (bytes), cycle time (ms) and cache capacity the
     * search starts from (set at run time, so not held); autotune_from[0] < 0: not given */
    double autotune_from[3];
} bench_options_t;

/* Parses argv into *o. Returns 0 on success, 1 after printing the usage for -h, 2 after
 * printing what was wrong (to stderr, only when `speak` is non-zero). */
int bench_parse_options(int argc, char **argv, int speak, bench_options_t *o);

const char *bench_coll_name(bench_coll_t coll);
/* Takes a reduce op (allreduce, reducescatter). */
int bench_coll_reduces(bench_coll_t coll);
/* The library allocates the output: alltoall, reducescatter, and allgather out of place
 * (hvd_allgather_enqueue); in place, allgather gathers into the caller's buffer
 * (hvd_allgather_into_enqueue) with this rank's input at its own block. */
int bench_owns_output(const bench_options_t *o);
/* Allgather in place: tensor k's output is n blocks of count elements, its input this
 * rank's block of them. */
int bench_gathers_in_place(const bench_options_t *o);

/* "8", "4K", "64M", "1G", "1.5M" (binary multipliers, optional trailing B); 0 on error. */
size_t bench_parse_size(const char *s);

#endif /* HVD_BENCH_OPTIONS_H_ */
