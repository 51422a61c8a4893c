/* SPDX-License-Identifier: Apache-2.0 */
/* The interface between libhvd.so and its GPU module, libhvd-nccl.so.1: a table of plain C
 * functions that libhvd.so finds with dlsym(HVD_GPU_MODULE_ENTRY) after dlopen of the module.
 * The module is the only part of libhvd linked against CUDA (its runtime, statically) and the
 * only part that calls NCCL (loaded by the module with dlopen), so libhvd.so loads and runs
 * where neither exists.
 *
 * Versioning: the entry takes the ABI version libhvd.so speaks and returns its table only if
 * it speaks that version; a table's struct_size lets a newer module append functions. A module
 * and libhvd.so from different builds refuse each other with a message naming both versions.
 *
 * Conventions: every function returning int returns 0 on success and nonzero on failure, with
 * a NUL-terminated message in *err (HVD_GPU_ERR_LEN bytes). Pointers to device memory,
 * streams, events and communicators travel as void*. Dtypes are hvd_dtype_t codes, reduce
 * ops hvd_reduce_op_t codes (never Average: libhvd sums and scales). Thread-safe as the
 * CUDA runtime and NCCL are: libhvd calls a context's functions from its engine thread, or
 * from a caller's thread driving the engine; a function that works on a device restores the
 * calling thread's current device before it returns. */
#ifndef HVD_GPU_MODULE_API_H
#define HVD_GPU_MODULE_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HVD_GPU_MODULE_ABI_VERSION 3
#define HVD_GPU_MODULE_ENTRY "hvd_gpu_module_get"
#define HVD_GPU_ERR_LEN 512
#define HVD_GPU_NCCL_ID_BYTES 128
#define HVD_GPU_COPY_BATCH 64 /* copies one batched-copy launch takes */

typedef struct {
    char text[HVD_GPU_ERR_LEN];
} hvd_gpu_err_t;

/* What the module found when it was opened. */
typedef struct {
    int32_t device_count;               /* CUDA devices visible to this process; 0 when none */
    int32_t runtime_version;            /* CUDA runtime the module carries, e.g. 13000 */
    int32_t driver_version;             /* CUDA driver's version; 0 when no driver */
    int32_t nccl_version;               /* e.g. 22807; 0 when NCCL did not load */
    char cuda_problem[HVD_GPU_ERR_LEN]; /* why device_count is 0 ("" otherwise) */
    char nccl_path[HVD_GPU_ERR_LEN];    /* the NCCL library loaded */
    char nccl_problem[HVD_GPU_ERR_LEN]; /* why NCCL did not load: every place searched */
} hvd_gpu_info_t;

/* One copy of a batched copy: `bytes` bytes from src to dst, both device memory. */
typedef struct {
    void *dst;
    const void *src;
    uint64_t bytes;
} hvd_gpu_copy_t;

typedef struct hvd_gpu_module {
    uint32_t abi_version; /* HVD_GPU_MODULE_ABI_VERSION */
    uint32_t struct_size; /* sizeof(hvd_gpu_module_t) of the module's build */

    /* Opens the module once per process: checks the CUDA driver and devices, then loads NCCL
     * from nccl_library (NULL or "": "libnccl.so.2" through the system's loader). Missing
     * devices or NCCL are not failures: *info says what is there and why not. Fails only
     * when the module itself is unusable. Call before anything else; later calls return the
     * first result. */
    int (*open)(const char *nccl_library, hvd_gpu_info_t *info, hvd_gpu_err_t *err);

    /* Devices and memory. */
    int (*device_uuid)(int32_t device, uint8_t uuid[16], hvd_gpu_err_t *err);
    /* *is_device: 1 when ptr is device (or managed) memory of *device, 0 for host memory.
     * `expected`: the device the caller takes it for, made current for the call (as below). */
    int (*pointer_device)(int32_t expected, const void *ptr, int32_t *is_device, int32_t *device,
                          hvd_gpu_err_t *err);
    /* Device memory, allocated in stream order on `stream` (stream NULL: the device's default
     * stream): from the module's own memory pool of the device (cudaMallocFromPoolAsync) where
     * the device has memory pools, else cudaMalloc. Work queued on `stream` after the call
     * may use it; work on another stream only once ordered after that (an event, or the host
     * having seen `stream` reach the call). */
    int (*device_alloc)(int32_t device, size_t bytes, void *stream, void **ptr, hvd_gpu_err_t *err);
    /* Frees device_alloc's memory once every work queued on the device so far has completed:
     * waits on the host for the whole device, as cudaFree does. */
    int (*device_free)(int32_t device, void *ptr, hvd_gpu_err_t *err);
    /* Frees device_alloc's memory in stream order (cudaFreeAsync): once the work queued on
     * `stream` so far has run, with no wait on the host nor on other streams. The caller
     * orders every other use before it. Where the device has no memory pools, as device_free. */
    int (*device_free_on)(int32_t device, void *ptr, void *stream, hvd_gpu_err_t *err);
    /* Pinned host memory. Every call here that names a device makes it current for the call
     * (and leaves it current on a thread that had no CUDA context); every NCCL call on a
     * communicator does so with the communicator's device: no thread of the library ever
     * creates a context on a device it does not use (device 0, say). */
    int (*host_alloc)(int32_t device, size_t bytes, void **ptr, hvd_gpu_err_t *err);
    int (*host_free)(int32_t device, void *ptr, hvd_gpu_err_t *err);

    /* Streams and events, created on a device; non-blocking streams, events without timing. */
    int (*stream_create)(int32_t device, void **stream, hvd_gpu_err_t *err);
    int (*stream_destroy)(int32_t device, void *stream, hvd_gpu_err_t *err);
    int (*event_create)(int32_t device, void **event, hvd_gpu_err_t *err);
    int (*event_destroy)(int32_t device, void *event, hvd_gpu_err_t *err);
    int (*event_record)(int32_t device, void *event, void *stream, hvd_gpu_err_t *err);
    /* *done: 1 once every work the event captured has completed. Never blocks. */
    int (*event_query)(int32_t device, void *event, int32_t *done, hvd_gpu_err_t *err);
    /* stream NULL: the device's default stream. */
    int (*stream_wait_event)(int32_t device, void *stream, void *event, hvd_gpu_err_t *err);

    /* Work queued on a stream of `device` (asynchronous to the host). */
    int (*copy_async)(int32_t device, void *dst, const void *src, size_t bytes, void *stream,
                      hvd_gpu_err_t *err);
    /* Up to HVD_GPU_COPY_BATCH device-to-device copies in one kernel; each element is scaled
     * by `factor` on the way as scale_async scales it (1.0: a plain copy). */
    int (*copy_batch_async)(int32_t device, const hvd_gpu_copy_t *copies, size_t n, int32_t dtype,
                            double factor, void *stream, hvd_gpu_err_t *err);
    /* dst[i] = src[i] * factor for count elements (in place when dst == src), with the host's
     * rules (reduce/scale.cc): float16/bfloat16 scaled in float, integers in float64, divided
     * by n where factor is exactly 1/n (reduce/integer_divisor.h). */
    int (*scale_async)(int32_t device, void *dst, const void *src, size_t count, int32_t dtype,
                       double factor, void *stream, hvd_gpu_err_t *err);
    /* Zeroes bytes of device memory. */
    int (*zero_async)(int32_t device, void *dst, size_t bytes, void *stream, hvd_gpu_err_t *err);

    /* NCCL (only after open found it). Communicators are non-blocking: a call may leave work
     * in progress, which comm_status reports. */
    int (*nccl_unique_id)(uint8_t id[HVD_GPU_NCCL_ID_BYTES], hvd_gpu_err_t *err);
    int (*nccl_comm_init)(int32_t device, int32_t nranks, int32_t rank,
                          const uint8_t id[HVD_GPU_NCCL_ID_BYTES], void **comm, hvd_gpu_err_t *err);
    /* *in_progress: 1 while the communicator still works on its last call (init included);
     * an asynchronous NCCL error is a failure with NCCL's message. */
    int (*nccl_comm_status)(void *comm, int32_t *in_progress, hvd_gpu_err_t *err);
    int (*nccl_comm_destroy)(void *comm, hvd_gpu_err_t *err);
    /* Ends every NCCL operation of the communicator without waiting for peers. */
    int (*nccl_comm_abort)(void *comm, hvd_gpu_err_t *err);
    /* Whether NCCL reduces this dtype with this op (int16, uint16 and bool it does not). */
    int (*nccl_supports)(int32_t dtype, int32_t reduce_op);
    int (*nccl_group_start)(hvd_gpu_err_t *err);
    int (*nccl_group_end)(hvd_gpu_err_t *err);
    int (*nccl_allreduce)(const void *send, void *recv, size_t count, int32_t dtype,
                          int32_t reduce_op, void *comm, void *stream, hvd_gpu_err_t *err);
    int (*nccl_reduce)(const void *send, void *recv, size_t count, int32_t dtype, int32_t reduce_op,
                       int32_t root, void *comm, void *stream, hvd_gpu_err_t *err);
    int (*nccl_reducescatter)(const void *send, void *recv, size_t recv_count, int32_t dtype,
                              int32_t reduce_op, void *comm, void *stream, hvd_gpu_err_t *err);
    /* Bytes, not elements: data movement needs no dtype. */
    int (*nccl_broadcast)(const void *send, void *recv, size_t bytes, int32_t root, void *comm,
                          void *stream, hvd_gpu_err_t *err);
    int (*nccl_allgather)(const void *send, void *recv, size_t send_bytes, void *comm, void *stream,
                          hvd_gpu_err_t *err);
    int (*nccl_send)(const void *send, size_t bytes, int32_t peer, void *comm, void *stream,
                     hvd_gpu_err_t *err);
    int (*nccl_recv)(void *recv, size_t bytes, int32_t peer, void *comm, void *stream,
                     hvd_gpu_err_t *err);

    /* *capturing: 1 where `stream` (NULL: the device's default stream) is capturing a CUDA
     * graph (cudaStreamIsCapturing), else 0. Never blocks. */
    int (*stream_capturing)(int32_t device, void *stream, int32_t *capturing, hvd_gpu_err_t *err);
} hvd_gpu_module_t;

/* The module's one exported symbol: its table when it speaks abi_version, else NULL with
 * *module_abi set to the version it speaks. */
typedef const hvd_gpu_module_t *(*hvd_gpu_module_get_fn)(uint32_t abi_version,
                                                         uint32_t *module_abi);

#ifdef __cplusplus
}
#endif

#endif /* HVD_GPU_MODULE_API_H */
