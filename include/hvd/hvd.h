/* SPDX-License-Identifier: Apache-2.0 */
/* libhvd — the C ABI, version 1.
 *
 * Pure C99; includes only <stddef.h> and <stdint.h> (and the generated hvd_version.h).
 *
 * Conventions that hold for every function below unless its comment says otherwise:
 *  - Every function returns an hvd_status_t (or a plain value for queries that cannot fail).
 *    On failure, a readable detail (which rank, which tensor, what disagreed) is stored for the
 *    calling thread and read with hvd_last_error().
 *  - Thread safety: any function may be called from any thread, concurrently, on the same
 *    context. A request handle must not be released by one thread while another waits on it.
 *  - Blocking: only hvd_init, hvd_finalize and hvd_request_wait block, and each is bounded by
 *    a timeout. Enqueue functions never wait for peers.
 *  - Ownership: the library copies every parameter struct, shape and name during the call.
 *    Tensor data stays owned by the caller and must stay valid and untouched until the
 *    request completes. Library-owned outputs live until hvd_request_release.
 *  - The library never calls user code on its own threads.
 *  - Extensible structs: zero them, set the fields you want and set each field's bit in
 *    field_mask; a zeroed struct means defaults; an unknown bit gives HVD_ERR_UNSUPPORTED.
 */
#ifndef HVD_H_
#define HVD_H_

#include <stddef.h>
#include <stdint.h>

#include "hvd/hvd_version.h"

#if defined(__GNUC__)
#define HVD_API __attribute__((visibility("default")))
#else
#define HVD_API
#endif

#ifdef __cplusplus
#define HVD_NOEXCEPT noexcept
extern "C" {
#else
#define HVD_NOEXCEPT
#endif

#define HVD_BIT(i) (UINT64_C(1) << (i))

/* ---------------------------------------------------------------- status */

/* Values are ABI: append only, never renumber. 0 is success, 1 "not finished", negative an
 * error. */
typedef enum hvd_status {
    HVD_OK = 0,
    HVD_INPROGRESS = 1,       /* not an error: the op, or a bounded wait, has not finished */
    HVD_ERR_INVALID_ARG = -1, /* caught on this rank alone, before anything was queued */
    HVD_ERR_NO_MEMORY = -2,
    HVD_ERR_UNSUPPORTED = -3,  /* unknown field_mask bit, dtype, device or op */
    HVD_ERR_VERSION = -4,      /* header / library ABI mismatch */
    HVD_ERR_NOT_READY = -5,    /* context not initialised or finalising */
    HVD_ERR_BUSY = -6,         /* e.g. release of a request another thread waits on */
    HVD_ERR_MISMATCH = -7,     /* ranks disagree on shape / dtype / op / root ... */
    HVD_ERR_TIMED_OUT = -8,    /* the operation itself exceeded its timeout */
    HVD_ERR_ABORTED = -9,      /* context aborted (hvd_abort or an earlier fatal error) */
    HVD_ERR_PEER_FAILED = -10, /* a peer process died or became unreachable */
    HVD_ERR_DEVICE = -11,      /* CUDA / NCCL error */
    HVD_ERR_TRANSPORT = -12,   /* UCX / socket error */
    HVD_ERR_INTERNAL = -13     /* a bug in libhvd, including a caught C++ exception */
} hvd_status_t;

/* A one-line English description of a status. Never NULL (unknown values get
 * "unknown status"). Pure; thread-safe. */
HVD_API const char *hvd_strerror(hvd_status_t status) HVD_NOEXCEPT;

/* The enumerator's name, e.g. "HVD_ERR_MISMATCH". Never NULL. Pure; thread-safe. */
HVD_API const char *hvd_status_name(hvd_status_t status) HVD_NOEXCEPT;

/* The detail of the last failed call made by this thread, e.g.
 * "allreduce 'grad.w1': rank 1 has shape [4,3], rank 0 has [4,2]". Works like snprintf:
 * writes at most len bytes including the terminating NUL (buf may be NULL when len is 0) and
 * returns the length of the whole message. A successful call does not clear it. */
HVD_API size_t hvd_last_error(char *buf, size_t len) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- version and features */

/* HVD_VERSION_CODE of the loaded library (may differ from the header's). */
HVD_API uint32_t hvd_version(void) HVD_NOEXCEPT;
/* "MAJOR.MINOR.PATCH" of the loaded library; static storage. */
HVD_API const char *hvd_version_string(void) HVD_NOEXCEPT;
/* HVD_FEATURE_* bits of what this build of the library can do; a bit is set only for what the
 * build really does. The first call loads the GPU module (libhvd-nccl.so.1), if there is one,
 * to see what it finds. Thread-safe; never fails. */
HVD_API uint64_t hvd_features(void) HVD_NOEXCEPT;
/* Set: collectives between processes run over UCX (shared memory between the ranks of one
 * host is always built in and has no bit). */
#define HVD_FEATURE_UCX HVD_BIT(0)
/* Set: CUDA tensors work here: the GPU module loaded (HVD_GPU_MODULE, else libhvd-nccl.so.1
 * beside libhvd.so or on the library path) and found a CUDA device. Without it a CUDA tensor
 * is refused with HVD_ERR_UNSUPPORTED, the message saying what was searched and what failed. */
#define HVD_FEATURE_CUDA HVD_BIT(1)
/* Set: HVD_FEATURE_CUDA, and the module loaded NCCL (HVD_NCCL_LIBRARY, else libnccl.so.2):
 * collectives on CUDA tensors can run on NCCL (HVD_GPU_OPERATIONS). */
#define HVD_FEATURE_NCCL HVD_BIT(2)
/* Set: hwloc read this host's topology (packages, NUMA nodes, cores, NICs and GPUs): each rank's
 * shared-memory slots and hvd_mem_alloc memory are bound to its NUMA node where it runs within
 * one of several. */
#define HVD_FEATURE_HWLOC HVD_BIT(3)

/* ---------------------------------------------------------------- handles and enums */

typedef struct hvd_context *hvd_context_h;         /* one per hvd_init */
typedef struct hvd_process_set *hvd_process_set_h; /* NULL means all ranks */
typedef struct hvd_request *hvd_request_h;         /* one per enqueued collective */

/* Enum values travel in int32_t fields: the width of a C enum is not a stable ABI. */
typedef enum {
    HVD_DTYPE_UINT8 = 0,
    HVD_DTYPE_INT8 = 1,
    HVD_DTYPE_UINT16 = 2,
    HVD_DTYPE_INT16 = 3,
    HVD_DTYPE_INT32 = 4,
    HVD_DTYPE_INT64 = 5,
    HVD_DTYPE_FLOAT16 = 6,
    HVD_DTYPE_FLOAT32 = 7,
    HVD_DTYPE_FLOAT64 = 8,
    HVD_DTYPE_BOOL = 9, /* one byte, 0 or 1; Sum/Max = or, Min/Product = and */
    HVD_DTYPE_BFLOAT16 = 10
} hvd_dtype_t;

typedef enum { HVD_DEVICE_CPU = 1, HVD_DEVICE_CUDA = 2 } hvd_device_type_t; /* DLPack codes */

/* Horovod's numbering. Average = Sum, then multiplied by 1/size (after postscale). */
typedef enum {
    HVD_OP_AVERAGE = 0,
    HVD_OP_SUM = 1,
    HVD_OP_ADASUM = 2,
    HVD_OP_MIN = 3,
    HVD_OP_MAX = 4,
    HVD_OP_PRODUCT = 5
} hvd_reduce_op_t;

/* ---------------------------------------------------------------- tensors and parameters */

/* CUDA tensors only (HVD_ERR_INVALID_ARG on a host tensor): ready_event is waited for on the
 * library's stream before the data is read, so the caller need not synchronise first. */
enum { HVD_TENSOR_FIELD_READY_EVENT = HVD_BIT(0) };

/* A tensor the caller owns. Only the optional fields have bits in field_mask. */
typedef struct hvd_tensor {
    uint64_t field_mask;
    void *data;           /* contiguous, row-major; valid until the request completes */
    int32_t dtype;        /* hvd_dtype_t */
    int32_t ndim;         /* 0 = scalar; at most HVD_MAX_NDIM */
    const int64_t *shape; /* ndim entries, each >= 0; copied during the call */
    int32_t device_type;  /* hvd_device_type_t; 0 is taken as HVD_DEVICE_CPU. CUDA: data must
                             be memory of device device_id, aligned to the element size
                             (both checked at enqueue: HVD_ERR_INVALID_ARG) */
    int32_t device_id;
    void *ready_event; /* cudaEvent_t: the data is valid once it has completed; the event
                          must stay alive (not destroyed, not re-recorded) until the request
                          completes, since the engine waits on it later than enqueue. Given
                          ready events, an op writes the caller's output once they have
                          completed and is ordered after nothing else: the events must also
                          follow earlier work that uses the output's memory */
} hvd_tensor_t;
#define HVD_MAX_NDIM 32

enum {
    HVD_OP_FIELD_NAME = HVD_BIT(0),
    HVD_OP_FIELD_PROCESS_SET = HVD_BIT(1),
    HVD_OP_FIELD_REDUCE_OP = HVD_BIT(2),
    HVD_OP_FIELD_SCALE = HVD_BIT(3),
    HVD_OP_FIELD_ROOT = HVD_BIT(4),
    HVD_OP_FIELD_SPLITS = HVD_BIT(5),
    HVD_OP_FIELD_TIMEOUT = HVD_BIT(6),
    HVD_OP_FIELD_STREAM = HVD_BIT(7) /* ops on CUDA tensors only (HVD_ERR_INVALID_ARG
                                        otherwise) */
};

/* Parameters of one collective; NULL means all defaults. */
typedef struct hvd_op_params {
    uint64_t field_mask;
    const char *name;              /* cross-rank matching key, at most HVD_MAX_NAME bytes;
                                      copied. Default: "<op>.noname.<n>", n counting per op
                                      type on this context, so ranks that enqueue unnamed ops
                                      in the same order match. */
    hvd_process_set_h process_set; /* default: all ranks */
    int32_t reduce_op;             /* hvd_reduce_op_t; default HVD_OP_SUM */
    int32_t root_rank;             /* broadcast root, a rank of the process set (as hvd_rank
                                      reports it for that set); default 0 */
    double prescale, postscale;    /* default 1.0 each */
    const int32_t *splits;         /* alltoall: rows sent to each rank of the set, in set
                                      order; copied. Default: an even split. */
    int64_t timeout_ms;            /* < 0 none; default: the context's op timeout. On expiry
                                      the request fails with HVD_ERR_TIMED_OUT and the context
                                      aborts (peers may be stuck inside the collective). */
    void *stream;                  /* cudaStream_t (NULL: CUDA's default stream). Without it
                                      an op on CUDA tensors completes once its output is valid
                                      on the device; with it, the op's work is ordered before
                                      the stream's later work and the request completes
                                      without the host waiting for the device; should that
                                      work fail or outlive the timeout later, the context
                                      aborts and the next request fails saying so. Given no
                                      ready event, the op also reads its inputs only after
                                      the work queued on the stream before the enqueue call,
                                      as an NCCL call on that stream would. A stream of the
                                      tensors' device; cudaStreamPerThread is refused
                                      (HVD_ERR_INVALID_ARG): pass the stream's own handle. A
                                      stream capturing a CUDA graph is refused
                                      (HVD_ERR_UNSUPPORTED): ops cannot be captured. */
    int32_t num_splits;            /* HVD_OP_FIELD_SPLITS: entries in splits (= set size) */
} hvd_op_params_t;
#define HVD_MAX_NAME 1024

/* ---------------------------------------------------------------- lifecycle */

#define HVD_UNIQUE_ID_BYTES 128
/* Opaque; copy its bytes to every rank out of band (a file, MPI_Bcast, a socket ...). */
typedef struct {
    char internal[HVD_UNIQUE_ID_BYTES];
} hvd_unique_id_t;

enum {
    HVD_INIT_FIELD_RANK = HVD_BIT(0),      /* rank + size given here, not by a launcher */
    HVD_INIT_FIELD_UNIQUE_ID = HVD_BIT(1), /* rendezvous through unique_id */
    HVD_INIT_FIELD_TIMEOUT = HVD_BIT(2)
};

typedef struct hvd_init_params {
    uint64_t field_mask;       /* 0: everything from the launcher's environment */
    int32_t rank, size;        /* HVD_INIT_FIELD_RANK */
    hvd_unique_id_t unique_id; /* HVD_INIT_FIELD_UNIQUE_ID; requires HVD_INIT_FIELD_RANK */
    int64_t timeout_ms;        /* HVD_INIT_FIELD_TIMEOUT: bounds init and finalize and is
                                  the default op timeout. Without it: init/finalize
                                  HVD_START_TIMEOUT seconds (default 120), ops
                                  HVD_OP_TIMEOUT seconds (default 1800, < 0 none). */
} hvd_init_params_t;

/* Makes a unique id for a job whose ranks call hvd_init with HVD_INIT_FIELD_RANK |
 * HVD_INIT_FIELD_UNIQUE_ID. Call it on exactly one process: it starts a rendezvous server on a
 * background thread of that process (on HVD_RENDEZVOUS_ADDR if set, else this host's name),
 * which serves that one job and stops by itself once every rank has connected and left, or
 * after the bootstrap timeout when nobody connects. The id also carries the job's secret:
 * only processes holding it can join. Does not block. Errors: HVD_ERR_INVALID_ARG (NULL),
 * HVD_ERR_TRANSPORT (no socket could be bound). */
HVD_API hvd_status_t hvd_get_unique_id(hvd_unique_id_t *id_p) HVD_NOEXCEPT;

/* Creates a context and joins the job. Collective: blocks until every rank has joined or the
 * bootstrap timeout expires (HVD_ERR_TIMED_OUT). params NULL: everything from the launcher
 * environment — hvdrun (HVD_RANK, HVD_SIZE, HVD_RENDEZVOUS_ADDR/PORT, HVD_SECRET), Open MPI
 * (OMPI_COMM_WORLD_*), Slurm (SLURM_PROCID/SLURM_NTASKS), MPICH/PMI (PMI_RANK/PMI_SIZE) or
 * torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Without a rendezvous address,
 * single-host jobs meet through a private file named by the launcher's job id, in a directory
 * only this user can use: $XDG_RUNTIME_DIR, else $TMPDIR/hvd-<uid> (made 0700; one owned by
 * another user or open to group or others is skipped for hvd-<uid>.1, ... .7, and when none
 * will do hvd_init fails with HVD_ERR_TRANSPORT naming them).
 * Every job's rendezvous is authenticated by a secret: HVD_SECRET (hvdrun sets a random one);
 * without it, on a job known to be on one host (no rendezvous address, or the launcher's local
 * size equals the size), rank 0 makes a random secret and hands it to the others through that
 * private file (with its server's address: the launcher's, if any). A job that may span hosts
 * without HVD_SECRET fails with HVD_ERR_INVALID_ARG asking for one (the same random value on
 * every rank), for hvdrun, or for HVD_ALLOW_UNAUTHENTICATED=1, which accepts a secret derived
 * from the job id and address that anyone who knows them can compute (rank 0 logs a
 * warning). Rank 0's server listens on the rendezvous address, not on every interface (unless
 * that address cannot be bound on this host). No message names a secret.
 * Local and cross ranks are computed from the host names the ranks report.
 * Several contexts may live in one process (e.g. one per thread in tests).
 * Errors: HVD_ERR_VERSION, HVD_ERR_INVALID_ARG (bad rank/size, no launcher found),
 * HVD_ERR_UNSUPPORTED (unknown field bit), HVD_ERR_TIMED_OUT, HVD_ERR_TRANSPORT,
 * HVD_ERR_PEER_FAILED, HVD_ERR_MISMATCH (some rank runs a libhvd whose messages between ranks
 * differ from this one's; hvd_last_error names the ranks and their versions). *ctx_p is
 * written only on success. Use hvd_init(). */
HVD_API hvd_status_t hvd_init_versioned(uint32_t abi_version, uint32_t version_code,
                                        const hvd_init_params_t *params,
                                        hvd_context_h *ctx_p) HVD_NOEXCEPT;

static inline hvd_status_t hvd_init(const hvd_init_params_t *params, hvd_context_h *ctx_p) {
    return hvd_init_versioned(HVD_ABI_VERSION, HVD_VERSION_CODE, params, ctx_p);
}

/* Leaves the job and frees the context. Outstanding requests complete with HVD_ERR_ABORTED
 * (their handles must still be released). On a healthy context this waits, bounded by the
 * bootstrap timeout, until every rank has called hvd_finalize; on an aborted context it
 * returns at once without waiting for dead peers. The handle is invalid afterwards, even when
 * an error is returned. NULL is HVD_ERR_INVALID_ARG. */
HVD_API hvd_status_t hvd_finalize(hvd_context_h ctx) HVD_NOEXCEPT;

/* Aborts the context: every outstanding request completes with `reason` (an error status;
 * HVD_ERR_ABORTED if reason is not negative), new enqueues fail at once, and the other
 * ranks' requests fail with HVD_ERR_PEER_FAILED. Does not block. The context must still be
 * finalized. */
HVD_API hvd_status_t hvd_abort(hvd_context_h ctx, hvd_status_t reason) HVD_NOEXCEPT;

/* HVD_OK while the context is healthy; otherwise the first fatal status (its detail goes to
 * this thread's hvd_last_error). */
HVD_API hvd_status_t hvd_context_error(hvd_context_h ctx) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- topology */

/* Rank and size in a process set (NULL: all ranks); the rank is -1 on a rank outside the
 * set. Never block. */
HVD_API hvd_status_t hvd_rank(hvd_context_h ctx, hvd_process_set_h ps,
                              int32_t *rank_p) HVD_NOEXCEPT;
HVD_API hvd_status_t hvd_size(hvd_context_h ctx, hvd_process_set_h ps,
                              int32_t *size_p) HVD_NOEXCEPT;
/* Index among the ranks on this host, and how many ranks this host runs. */
HVD_API hvd_status_t hvd_local_rank(hvd_context_h ctx, int32_t *rank_p) HVD_NOEXCEPT;
HVD_API hvd_status_t hvd_local_size(hvd_context_h ctx, int32_t *size_p) HVD_NOEXCEPT;
/* Horovod's cross communicator: the ranks with the same local rank, one per host. */
HVD_API hvd_status_t hvd_cross_rank(hvd_context_h ctx, int32_t *rank_p) HVD_NOEXCEPT;
HVD_API hvd_status_t hvd_cross_size(hvd_context_h ctx, int32_t *size_p) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- elastic jobs */

/* An elastic job (hvdrun --min-np/--max-np/--host-discovery-script) changes its membership
 * while it runs. hvd_init of such a worker (HVD_ELASTIC_ADDR in its environment) waits,
 * bounded by HVD_ELASTIC_TIMEOUT, for its place in the job's next membership round from
 * hvdrun, and joins it: rank, size and rendezvous come from the round. When a worker dies,
 * the others' requests fail with HVD_ERR_PEER_FAILED; each survivor calls hvd_finalize and
 * hvd_init again and so joins the next round, without the dead one (new ranks and size).
 *
 * hvd_elastic_membership tells a framework whether to do the same because workers were added:
 * *round_p gets the membership round this context joined (1 for the first; -1 when the job is
 * not elastic), *pending_p 1 when workers wait to join a later round (hosts were added), else
 * 0. Horovod's elastic State asks it at each commit and raises HostsUpdatedInterrupt. It asks
 * hvdrun over TCP in an elastic job, blocking up to the bootstrap timeout; it never blocks
 * otherwise. Either pointer may be NULL (not written). HVD_ERR_INVALID_ARG for a NULL context;
 * HVD_ERR_TRANSPORT or HVD_ERR_TIMED_OUT when hvdrun cannot be asked (the detail names its
 * address). Since 1.2 (HVD_1.2 symbol version). */
HVD_API hvd_status_t hvd_elastic_membership(hvd_context_h ctx, int64_t *round_p,
                                            int32_t *pending_p) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- process sets */

/* Creates a process set of the given global ranks (n > 0, each in [0, size), no duplicates;
 * any order, kept sorted). Collective over ALL ranks of the context: every rank calls it, in
 * the same order relative to its other set creations and destructions, with the same ranks
 * (else HVD_ERR_MISMATCH on every rank). Blocks until all ranks agreed (bounded by the op
 * timeout). Ranks outside the set get a handle too (hvd_rank reports -1 for them). Ops of
 * different sets run concurrently; names are per set. The handle stays valid until
 * hvd_process_set_destroy or hvd_finalize. */
HVD_API hvd_status_t hvd_process_set_create(hvd_context_h ctx, const int32_t *ranks, int32_t n,
                                            hvd_process_set_h *ps_p) HVD_NOEXCEPT;

/* Destroys a process set; collective over all ranks like hvd_process_set_create. Ops still
 * queued on the set fail with HVD_ERR_INVALID_ARG. NULL (the global set) is
 * HVD_ERR_INVALID_ARG. The handle is invalid afterwards. */
HVD_API hvd_status_t hvd_process_set_destroy(hvd_context_h ctx, hvd_process_set_h ps) HVD_NOEXCEPT;

/* *included_p = 1 if this rank is a member of ps (NULL: all ranks), else 0. Never blocks. */
HVD_API hvd_status_t hvd_process_set_included(hvd_context_h ctx, hvd_process_set_h ps,
                                              int32_t *included_p) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- collectives */

/* Every enqueue validates its arguments on this rank (HVD_ERR_INVALID_ARG: NULL pointers, bad
 * dtype/ndim/shape, a name already in flight on this context; HVD_ERR_UNSUPPORTED: unknown
 * field bit, device or op; HVD_ERR_NOT_READY / the abort cause on a dead context), queues
 * the op and returns a request in *req_p (written only on success). It never waits for
 * peers. Ranks match ops by name, so they may enqueue in different orders. Disagreement
 * between ranks (dtype, shape, op, root, scale factors) completes the request on every rank
 * with HVD_ERR_MISMATCH and a message naming the ranks and what differs.
 * Sizes: a shape is bad (HVD_ERR_INVALID_ARG at enqueue, the message naming the dimension)
 * when a dimension is negative or when its size in bytes, the product of its non-zero
 * dimensions and the element size, passes INT64_MAX; data may be NULL only when the tensor
 * has no elements. An output put together from several ranks whose size would pass INT64_MAX
 * (an allgather's sum of first dimensions, the rows an alltoall member receives) completes
 * the request on every rank with HVD_ERR_INVALID_ARG naming the op.
 * CUDA tensors (device_type HVD_DEVICE_CUDA) go through every collective; all ranks of the
 * op must pass the same device type (else HVD_ERR_MISMATCH), an op's tensors must be on one
 * device, and library-owned outputs are then device memory (hvd_request_output reports the
 * device). Data moves on NCCL where every member has its own GPU and NCCL; otherwise, or with
 * HVD_GPU_OPERATIONS=host, through pinned host memory and the host collectives. Results are
 * the same on both paths, except that NCCL sums float16/bfloat16 in their own precision (as
 * Horovod's NCCL path does), so such a sum may round differently, or overflow to infinity
 * where the host path's float32 sum does not (an Average is a sum, then scaled). A CUDA or
 * NCCL failure is HVD_ERR_DEVICE with their message. */

/* Elementwise reduction over all ranks of the set. in and out have the same dtype and shape;
 * out->data == in->data is in place, otherwise in and out must not overlap (HVD_ERR_INVALID_ARG
 * at enqueue). Result = postscale * op_r(prescale * in_r), Average
 * dividing by the set size. Integers are scaled in float64 and truncated toward zero (a factor
 * of exactly 1/n, as an Average with postscale 1 has, divides by n, so exact quotients stay exact);
 * float16/bfloat16 are reduced (on host memory) and scaled in float32; Average of bool is
 * HVD_ERR_UNSUPPORTED.
 * Adasum (Maleki et al.: pairwise combination (1 - a.b/2|a|^2) a + (1 - a.b/2|b|^2) b over log2(n)
 * levels) needs a float dtype and a power-of-two set size, else HVD_ERR_UNSUPPORTED at enqueue. */
HVD_API hvd_status_t hvd_allreduce_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                           const hvd_tensor_t *out, const hvd_op_params_t *params,
                                           hvd_request_h *req_p) HVD_NOEXCEPT;

/* Concatenation along the first dimension, in rank order. The first dimension may differ
 * between ranks (ragged); the other dimensions and the dtype must agree; ndim >= 1. The
 * library owns the output: read it with hvd_request_output(req, 0, ...). */
HVD_API hvd_status_t hvd_allgather_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                           const hvd_op_params_t *params,
                                           hvd_request_h *req_p) HVD_NOEXCEPT;

/* Allgather into a caller-owned output (as NCCL's ncclAllGather, torch's
 * all_gather_into_tensor): out has in's dtype and dimensions beyond the first, and its first
 * dimension is the sum of every member's first dimension (ragged allowed); member r's rows
 * follow those of members 0..r-1. In place: in->data is this rank's rows inside out (the same
 * memory), which then stay where they are and are not copied; otherwise in and out must not
 * overlap. The caller keeps both buffers alive and untouched until the request completes;
 * hvd_request_output returns out. HVD_ERR_INVALID_ARG at enqueue: dtype or trailing
 * dimensions differ, out has fewer rows than in, in overlaps out without being whole rows of
 * it. HVD_ERR_INVALID_ARG on every rank of the set, at completion: some rank's out does not
 * have exactly the sum of the first dimensions, or its in lies inside its out at other rows
 * than its own (the message names the rank). Since 1.1 (HVD_1.1 symbol version). */
HVD_API hvd_status_t hvd_allgather_into_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                                const hvd_tensor_t *out,
                                                const hvd_op_params_t *params,
                                                hvd_request_h *req_p) HVD_NOEXCEPT;

/* Copies the root's tensor to every rank (root: params->root_rank, a rank of the set).
 * out->data == in->data is in place, otherwise in and out must not overlap (HVD_ERR_INVALID_ARG
 * at enqueue); on the root, out receives a copy of in. */
HVD_API hvd_status_t hvd_broadcast_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                           const hvd_tensor_t *out, const hvd_op_params_t *params,
                                           hvd_request_h *req_p) HVD_NOEXCEPT;

/* Each rank sends rows of its tensor to every rank of the set: splits[j] consecutive rows
 * (first dimension) to rank j, in set order (params->splits with num_splits = set size;
 * default: an even split, the first dimension must then divide by the set size). The output
 * (library-owned, hvd_request_output) concatenates the rows received from each rank in set
 * order; hvd_request_received_splits tells how many came from each. Rows beyond the sum of
 * the splits are not sent. HVD_ERR_INVALID_ARG at enqueue: wrong number of splits, a
 * negative split, a sum larger than the first dimension, ndim 0, an even split of more than
 * INT32_MAX rows per rank (splits are int32). */
HVD_API hvd_status_t hvd_alltoall_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                          const hvd_op_params_t *params,
                                          hvd_request_h *req_p) HVD_NOEXCEPT;

/* Reduces the tensors of all ranks of the set (Sum or Average only, with prescale and
 * postscale as for allreduce) and leaves rank r with its block of rows of the result: the
 * first dimension d0 is split so that the first d0 % n ranks get d0 / n + 1 rows and the
 * others d0 / n. Output library-owned (hvd_request_output). HVD_ERR_INVALID_ARG at enqueue:
 * a scalar (ndim 0); HVD_ERR_UNSUPPORTED: an op other than Sum or Average. */
HVD_API hvd_status_t hvd_reducescatter_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                               const hvd_op_params_t *params,
                                               hvd_request_h *req_p) HVD_NOEXCEPT;

/* Completes once every rank of the set has enqueued this barrier (matched by name like any
 * op; other named ops may stay pending). Moves no data. */
HVD_API hvd_status_t hvd_barrier_enqueue(hvd_context_h ctx, const hvd_op_params_t *params,
                                         hvd_request_h *req_p) HVD_NOEXCEPT;

/* Says this rank has no more data for this epoch (Horovod's join, for uneven numbers of
 * steps per rank). Until every rank of the set has joined, a joined rank takes part in the
 * other ranks' allreduces with zeros (Average still divides by the full set size), while
 * allgather, broadcast, alltoall and reducescatter fail on the ranks that enqueued them with
 * HVD_ERR_INVALID_ARG naming the joined rank. Completes when all ranks of the set joined;
 * hvd_request_value then gives the rank (in the set) that joined last. */
HVD_API hvd_status_t hvd_join_enqueue(hvd_context_h ctx, const hvd_op_params_t *params,
                                      hvd_request_h *req_p) HVD_NOEXCEPT;

/* Grouped variants: n tensors (arrays of pointers, never of structs) negotiated and completed
 * as one unit under one name (params->name or an auto-name; member i is "<name>.<i>"). The
 * parameters apply to every member. The request completes when all members have, with the
 * first member's error if any; hvd_request_output(req, i, ...) is member i's output. The
 * members of a grouped allreduce may share only memory that the op reads (an input read by two
 * members, adjacent pieces of one buffer): a member's output overlapping another member's
 * input or output (the same tensor twice in place, say) is HVD_ERR_INVALID_ARG at enqueue. */
HVD_API hvd_status_t hvd_grouped_allreduce_enqueue(hvd_context_h ctx,
                                                   const hvd_tensor_t *const *ins,
                                                   const hvd_tensor_t *const *outs, int32_t n,
                                                   const hvd_op_params_t *params,
                                                   hvd_request_h *req_p) HVD_NOEXCEPT;
HVD_API hvd_status_t hvd_grouped_allgather_enqueue(hvd_context_h ctx,
                                                   const hvd_tensor_t *const *ins, int32_t n,
                                                   const hvd_op_params_t *params,
                                                   hvd_request_h *req_p) HVD_NOEXCEPT;
HVD_API hvd_status_t hvd_grouped_reducescatter_enqueue(hvd_context_h ctx,
                                                       const hvd_tensor_t *const *ins, int32_t n,
                                                       const hvd_op_params_t *params,
                                                       hvd_request_h *req_p) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- shared tensor memory */

/* Allocates at least `bytes` bytes (rounded up to whole pages; page aligned, zero-filled) that
 * the other ranks of a single-host job can read and write in place. An allreduce whose inputs
 * and outputs (every tensor of a fused one) lie in such memory on every rank needs no staging
 * copies, above 16 KiB (HVD_SHM_MAPPED_MIN_BYTES, rank 0's value): each rank reduces its share
 * from all ranks' buffers straight into all of them (2 ranks: 1 MiB 3.6x, 64 MiB 3.1x faster
 * than malloc'd buffers); allgather and broadcast blocks in it are copied through the same
 * mappings. Like MPI_Alloc_mem or ncclMemAlloc.
 * Conditions, else the usual paths run, with the same results: the job's shared-memory
 * collectives are on (HVD_SHM), the op is in the global process set, every rank may read every
 * other's memory (same user or ptrace rights: Linux >= 5.6 pidfd_getfd, as for cross-memory
 * attach; HVD_LOG_LEVEL=debug says at init whether the path is on), allreduces have no
 * prescale and are not Adasum, and one op touches at most 16 allocations per rank.
 * The memory is a shared mapping of an anonymous file: a fork()ed child shares it with the
 * parent (no copy on write), and each allocation holds one file descriptor.
 * Needs no context: memory may be allocated before hvd_init and outlives hvd_finalize.
 * Its pages are reserved at once (shared memory, charged as such). Thread-safe; not collective.
 * The caller owns the memory until hvd_mem_free. Other ranks write into it only while one of
 * this rank's collectives on it runs; after a failed collective its contents are undefined.
 * Errors: HVD_ERR_INVALID_ARG (NULL ptr_p, 0 bytes), HVD_ERR_NO_MEMORY (no memory or no
 * file descriptor left; hvd_last_error() says which call failed). *ptr_p is written only on
 * success. */
HVD_API hvd_status_t hvd_mem_alloc(size_t bytes, void **ptr_p) HVD_NOEXCEPT;

/* Frees memory from hvd_mem_alloc; ptr must be the pointer it returned, and no collective
 * enqueued on that memory may still be in flight. NULL is a no-op. Peer ranks that mapped it
 * keep the pages (and so the memory) until they next map a new allocation of this rank, drop
 * it from their cache (16 per rank) or finalize. Thread-safe.
 * Errors: HVD_ERR_INVALID_ARG (a pointer not from hvd_mem_alloc, or freed already). */
HVD_API hvd_status_t hvd_mem_free(void *ptr) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- diagnostics */

/* Starts recording this rank's timeline into path (truncated): a Chrome trace (JSON) with a
 * row per tensor name and, for each op, QUEUE, NEGOTIATE_<OP> and <OP> spans with activity
 * sub-spans (memcpy into/out of the fusion buffer, the transport op); mark_cycles != 0 adds a
 * marker per engine cycle. HVD_TIMELINE=path does the same on rank 0 at init. Not collective.
 * Errors: HVD_ERR_INVALID_ARG (NULL, unopenable path), HVD_ERR_BUSY (already recording). */
HVD_API hvd_status_t hvd_timeline_start(hvd_context_h ctx, const char *path,
                                        int32_t mark_cycles) HVD_NOEXCEPT;

/* Stops recording; the file is then complete, valid JSON. No-op when not recording. */
HVD_API hvd_status_t hvd_timeline_stop(hvd_context_h ctx) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- runtime configuration */

/* Knobs that may change while a context runs. Each starts from its environment variable
 * (HVD_<NAME> or Horovod's HOROVOD_<NAME>) and can then be read and changed here. */
typedef enum {
    HVD_CONFIG_FUSION_THRESHOLD = 0,    /* bytes: allreduces fused into one collective, at most
                                           this many bytes together (a tensor over 1 MiB runs
                                           alone, in place); 0 disables fusion.
                                           HVD_FUSION_THRESHOLD, default 134217728 (128 MiB) */
    HVD_CONFIG_CYCLE_TIME = 1,          /* ms: how long the engine may hold newly enqueued ops to
                                           report them together (it never waits when 0).
                                           HVD_CYCLE_TIME, default 0 */
    HVD_CONFIG_STALL_CHECK_TIME = 2,    /* s: the stall inspector warns about ops some ranks have
                                           not enqueued after this long; 0 turns it off.
                                           HVD_STALL_CHECK_TIME_SECONDS, default 60 */
    HVD_CONFIG_STALL_SHUTDOWN_TIME = 3, /* s: such ops then fail with HVD_ERR_TIMED_OUT and the
                                           job aborts; 0 never. HVD_STALL_SHUTDOWN_TIME_SECONDS */
    HVD_CONFIG_AUTOTUNE = 4,            /* 1: rank 0 tunes fusion threshold, cycle time, the
                                           response cache's on/off switch and (across hosts)
                                           hierarchical allreduce online by Bayesian
                                           optimisation (HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES
                                           points, samples of HVD_AUTOTUNE_STEPS_PER_SAMPLE ops
                                           after HVD_AUTOTUNE_WARMUP_SAMPLES discarded at the
                                           start, then the best point; settings set explicitly
                                           are held) and every rank follows; samples are
                                           logged as CSV to HVD_AUTOTUNE_LOG, what each rank
                                           adopted to HVD_AUTOTUNE_LOG.<rank>. HVD_AUTOTUNE,
                                           default 0 */
    HVD_CONFIG_CACHE_CAPACITY = 5       /* entries of the response cache, per process set: an
                                           op of a set that ran once is negotiated again by one
                                           exchange of bit vectors among the ranks, without the
                                           coordinator, while its name and parameters stay the
                                           same; least recently used entries are evicted. Rank
                                           0's value governs the job; 0 turns the cache off.
                                           HVD_CACHE_CAPACITY, default 1024, at most 65536 */
} hvd_config_key_t;

/* Sets a knob of ctx, or with ctx NULL the process-wide default that contexts created later
 * start from. Fusion and autotune decisions are made by rank 0 (the coordinator) for the whole
 * job, so set those knobs alike on every rank, or at least on rank 0. Thread-safe; takes effect
 * at the engine's next step. Errors: HVD_ERR_INVALID_ARG (unknown key, value out of range,
 * e.g. a negative time). */
HVD_API hvd_status_t hvd_config_set(hvd_context_h ctx, int32_t key, double value) HVD_NOEXCEPT;

/* Reads a knob of ctx (NULL: the process-wide default) into *value_p, in the unit above; with
 * autotune on, the values rank 0 chose last. Thread-safe. Errors: HVD_ERR_INVALID_ARG (NULL
 * value_p, unknown key). */
HVD_API hvd_status_t hvd_config_get(hvd_context_h ctx, int32_t key, double *value_p) HVD_NOEXCEPT;

/* ---------------------------------------------------------------- completion */

/* HVD_INPROGRESS while running, else the final status. Never blocks. */
HVD_API hvd_status_t hvd_request_test(hvd_request_h req) HVD_NOEXCEPT;

/* Blocks until the request completes or timeout_ms passes (< 0: no limit of its own; the op
 * timeout still applies). Returns the final status, or HVD_INPROGRESS when this wait's own
 * timeout ran out and the request is still live. While it waits, the calling thread may run
 * the library's engine itself (rather than sleep while the engine thread works, which saves a
 * thread wake-up per op); a collective it has started then runs to its end, so such a wait
 * can return after timeout_ms, but never after that collective's op timeout. */
HVD_API hvd_status_t hvd_request_wait(hvd_request_h req, int64_t timeout_ms) HVD_NOEXCEPT;

/* Output i (0 for a single-tensor op) of a request that completed with HVD_OK: data, dtype,
 * shape. For library-owned outputs (allgather, alltoall, reducescatter) the data and shape stay
 * valid until hvd_request_release (an output of no elements may have NULL data); for
 * caller-owned outputs it describes the caller's tensor.
 * A library-owned output in CUDA memory, of an op given a stream (HVD_OP_FIELD_STREAM) that
 * succeeded, is freed by the release in order on that stream: once the work queued there
 * before the release has run (reads queued there need no host wait; reads on another stream
 * the caller orders before the release, as for cudaFreeAsync; released before the op ended,
 * it is freed there when the op ends, so the stream must live until then). Otherwise, and on
 * a device without memory pools, the release first waits on the host for the work queued on
 * the device, as cudaFree does.
 * Returns HVD_INPROGRESS while the request runs, the request's error status if it failed,
 * HVD_ERR_INVALID_ARG for a NULL pointer or an index out of range. */
HVD_API hvd_status_t hvd_request_output(hvd_request_h req, int32_t i,
                                        hvd_tensor_t *out_p) HVD_NOEXCEPT;

/* Alltoall: writes the rows received from each rank of the set into splits[0..n) (n = set
 * size) once the request completed with HVD_OK. HVD_INPROGRESS while it runs; the request's
 * error if it failed; HVD_ERR_INVALID_ARG for NULL, a wrong n or another kind of request. */
HVD_API hvd_status_t hvd_request_received_splits(hvd_request_h req, int32_t *splits,
                                                 int32_t n) HVD_NOEXCEPT;

/* The integer result of a completed request: for a join, the rank (in its set) that joined
 * last. HVD_INPROGRESS while it runs; the request's error if it failed;
 * HVD_ERR_INVALID_ARG for NULL or a request kind without a value. */
HVD_API hvd_status_t hvd_request_value(hvd_request_h req, int64_t *value_p) HVD_NOEXCEPT;

/* The request's error detail (empty when it succeeded), snprintf-like. */
HVD_API size_t hvd_request_message(hvd_request_h req, char *buf, size_t len) HVD_NOEXCEPT;

/* Frees the request. Exactly once per request; allowed while it runs (the op still finishes
 * and its result is discarded, but the caller's buffers must stay valid until it does).
 * HVD_ERR_BUSY while another thread waits on it. */
HVD_API hvd_status_t hvd_request_release(hvd_request_h req) HVD_NOEXCEPT;

#ifdef __cplusplus
}
#endif
#endif /* HVD_H_ */
