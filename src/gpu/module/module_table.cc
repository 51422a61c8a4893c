// SPDX-License-Identifier: Apache-2.0
// libhvd-nccl.so.1: the table of gpu_module_api.h over the CUDA runtime (linked statically)
// and NCCL (nccl_table.h). Every function reports a failure with the CUDA or NCCL message.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "gpu/gpu_module_api.h"
#include "gpu/module/nccl_table.h"
#include "gpu/module/scale_kernels.h"
#include "hvd/hvd.h"

namespace hvd::gpu_module {
namespace {

void fill(char *dst, const std::string &s) {
    std::snprintf(dst, HVD_GPU_ERR_LEN, "%s", s.c_str());
}

__attribute__((format(printf, 2, 3))) int fail(hvd_gpu_err_t *err, const char *fmt, ...) {
    if (err != nullptr) {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(err->text, HVD_GPU_ERR_LEN, fmt, ap);
        va_end(ap);
    }
    return 1;
}

int cuda_check(cudaError_t e, const char *what, hvd_gpu_err_t *err) {
    if (e == cudaSuccess) return 0;
    cudaGetLastError();  // a sticky error stays; a non-sticky one is cleared for the next call
    return fail(err, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

// Whether the calling thread has a current CUDA context (the driver's cuCtxGetCurrent, found
// through the runtime); true where that cannot be told. cudaGetDevice says 0 on a thread
// without one, and making device 0 current there would create its context.
bool thread_has_context() {
    using CtxGetCurrent = int (*)(void **);  // CUresult cuCtxGetCurrent(CUcontext *)
    static const CtxGetCurrent get_current = [] {
        void *fn = nullptr;
#if CUDART_VERSION >= 12050
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        cudaError_t e = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000,
                                                         cudaEnableDefault, &found);
#elif CUDART_VERSION >= 12000
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        cudaError_t e = cudaGetDriverEntryPoint("cuCtxGetCurrent", &fn, cudaEnableDefault, &found);
#else
        cudaError_t e = cudaGetDriverEntryPoint("cuCtxGetCurrent", &fn, cudaEnableDefault);
        const bool found_ok = true;
#endif
#if CUDART_VERSION >= 12000
        const bool found_ok = found == cudaDriverEntryPointSuccess;
#endif
        if (e != cudaSuccess || !found_ok || fn == nullptr) {
            cudaGetLastError();
            return CtxGetCurrent{nullptr};
        }
        return reinterpret_cast<CtxGetCurrent>(fn);
    }();
    if (get_current == nullptr) return true;
    void *context = nullptr;
    return get_current(&context) != 0 || context != nullptr;
}

// Puts the calling thread in relaxed stream-capture mode for the scope, restoring its mode
// after. In the default (global) mode, while any other thread of the process captures a CUDA
// graph in global mode (torch.cuda.graph does), calls such as cudaEventQuery, cudaHostAlloc
// or cudaMalloc fail and invalidate that capture; none of the module's calls touch a
// capturing stream (the enqueue refuses one), so relaxed mode is safe for them.
class RelaxedCapture {
  public:
    RelaxedCapture() { changed_ = cudaThreadExchangeStreamCaptureMode(&mode_) == cudaSuccess; }
    ~RelaxedCapture() {
        if (changed_) cudaThreadExchangeStreamCaptureMode(&mode_);
    }
    RelaxedCapture(const RelaxedCapture &) = delete;
    RelaxedCapture &operator=(const RelaxedCapture &) = delete;

  private:
    cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // then the thread's own
    bool changed_ = false;
};

// Makes `device` current for the scope and restores the caller's current device after: the
// engine runs on callers' threads too, whose frameworks rely on their current device. A
// thread without a context (the engine's own, a caller's that never used CUDA) keeps
// `device`: restoring "device 0" there would create a context on device 0 for every rank.
// The thread is in relaxed capture mode for the scope (RelaxedCapture), switched only once it
// has a context, so that the switch cannot be what creates one.
class DeviceScope {
  public:
    // device < 0: the current device stays.
    explicit DeviceScope(int32_t device) {
        if (device >= 0) {
            if (!thread_has_context() || cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
            result_ = previous_ == device ? cudaSuccess : cudaSetDevice(device);
        }
        if (device >= 0 ? result_ == cudaSuccess : thread_has_context()) relaxed_.emplace();
    }
    ~DeviceScope() {
        relaxed_.reset();
        if (previous_ >= 0 && result_ == cudaSuccess) cudaSetDevice(previous_);
    }
    cudaError_t result() const { return result_; }

  private:
    std::optional<RelaxedCapture> relaxed_;
    int previous_ = -1;
    cudaError_t result_ = cudaSuccess;
};

#define CUDA_TRY(call, what)                                       \
    do {                                                           \
        if (int rc_ = cuda_check((call), (what), err)) return rc_; \
    } while (0)

// Makes `device` current until the end of the enclosing function (DeviceScope; device < 0:
// nothing changes), returning cudaSetDevice's error through `err` when that fails.
#define ON_DEVICE(device)              \
    DeviceScope device_scope_(device); \
    CUDA_TRY(device_scope_.result(), "cudaSetDevice")

NcclTable nccl;

// The device of each communicator (from its init), so that every NCCL call on it runs with that
// device current: NCCL saves and restores the thread's device around its work, and on a thread
// without a context that would create device 0's.
class CommDevices {
  public:
    void add(void *comm, int32_t device) {
        std::lock_guard<std::mutex> lock(mu_);
        devices_[comm] = device;
    }
    void remove(void *comm) {
        std::lock_guard<std::mutex> lock(mu_);
        devices_.erase(comm);
    }
    int32_t of(void *comm) const {  // -1: unknown
        std::lock_guard<std::mutex> lock(mu_);
        auto it = devices_.find(comm);
        return it == devices_.end() ? -1 : it->second;
    }

  private:
    mutable std::mutex mu_;
    std::unordered_map<void *, int32_t> devices_;
};
CommDevices comm_devices;
// The device of the last communicator this thread queued work on: the one a group's end
// launches that work on (NCCL groups are per thread).
thread_local int32_t group_device = -1;
hvd_gpu_info_t opened_info;
int opened_rc = -1;
std::string opened_error;
std::once_flag open_once;

int nccl_check(ncclResult_t r, const char *what, ncclComm_t comm, hvd_gpu_err_t *err) {
    if (r == ncclSuccess || r == ncclInProgress) return 0;
    const char *last = nccl.GetLastError != nullptr ? nccl.GetLastError(comm) : nullptr;
    return fail(err, "%s: %s%s%s", what, nccl.GetErrorString(r),
                last != nullptr && last[0] != '\0' ? ": " : "", last != nullptr ? last : "");
}

int need_nccl(hvd_gpu_err_t *err) {
    return nccl.handle != nullptr ? 0
                                  : fail(err, "NCCL is not loaded: %s", opened_info.nccl_problem);
}

#define NCCL_TRY(call, what, comm)                                         \
    do {                                                                   \
        if (int rc_ = need_nccl(err)) return rc_;                          \
        if (int rc_ = nccl_check((call), (what), (comm), err)) return rc_; \
    } while (0)

bool nccl_dtype(int32_t dtype, ncclDataType_t *out) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            *out = ncclUint8;
            return true;
        case HVD_DTYPE_INT8:
            *out = ncclInt8;
            return true;
        case HVD_DTYPE_INT32:
            *out = ncclInt32;
            return true;
        case HVD_DTYPE_INT64:
            *out = ncclInt64;
            return true;
        case HVD_DTYPE_FLOAT16:
            *out = ncclFloat16;
            return true;
        case HVD_DTYPE_FLOAT32:
            *out = ncclFloat32;
            return true;
        case HVD_DTYPE_FLOAT64:
            *out = ncclFloat64;
            return true;
        case HVD_DTYPE_BFLOAT16:
            *out = ncclBfloat16;
            return true;
        default:
            return false;
    }
}

bool nccl_op(int32_t op, ncclRedOp_t *out) {
    switch (op) {
        case HVD_OP_SUM:
            *out = ncclSum;
            return true;
        case HVD_OP_MIN:
            *out = ncclMin;
            return true;
        case HVD_OP_MAX:
            *out = ncclMax;
            return true;
        case HVD_OP_PRODUCT:
            *out = ncclProd;
            return true;
        default:
            return false;
    }
}

int reduction_args(int32_t dtype, int32_t op, ncclDataType_t *t, ncclRedOp_t *o,
                   hvd_gpu_err_t *err) {
    if (!nccl_dtype(dtype, t)) return fail(err, "NCCL has no dtype for hvd dtype %d", dtype);
    if (!nccl_op(op, o)) return fail(err, "NCCL has no reduction for hvd op %d", op);
    return 0;
}

// Whether NCCL_COMM_BLOCKING=1 (as NCCL parses it) would make every communicator blocking,
// whatever the module asks: NCCL's calls would then wait for the peers with no deadline, no
// abort and no progress of libhvd's own connections, which the peers may be waiting on. NCCL
// also sets it from its configuration files (NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf) once
// it has initialised, so communicator creation asks again.
bool nccl_blocking_forced() {
    const char *v = std::getenv("NCCL_COMM_BLOCKING");
    return v != nullptr && std::strtoll(v, nullptr, 0) == 1;
}
constexpr const char *kBlockingForced =
    "NCCL_COMM_BLOCKING=1 is set (in the environment or an NCCL configuration file), which "
    "makes NCCL's calls block until every peer arrives; libhvd bounds each wait with its own "
    "deadline and aborts when a peer fails, so it needs non-blocking communicators: unset "
    "NCCL_COMM_BLOCKING (or set it to 0) to use NCCL";

void open_module(const char *nccl_library) {
    hvd_gpu_info_t info{};
    cudaRuntimeGetVersion(&info.runtime_version);
    if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) info.driver_version = 0;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        fill(info.cuda_problem, std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) + " (" +
                                    cudaGetErrorName(e) + ")");
        cudaGetLastError();
        count = 0;
    } else if (count == 0) {
        fill(info.cuda_problem, "cudaGetDeviceCount found no CUDA device");
    }
    info.device_count = count;
    std::string problem;
    if (nccl_blocking_forced()) {
        fill(info.nccl_problem, kBlockingForced);
    } else if (load_nccl(nccl_library != nullptr ? nccl_library : "", &nccl, &problem)) {
        info.nccl_version = nccl.version;
        fill(info.nccl_path, nccl.path);
    } else {
        fill(info.nccl_problem, problem);
    }
    opened_info = info;
    opened_rc = 0;
}

// ---- the table's functions

int m_open(const char *nccl_library, hvd_gpu_info_t *info, hvd_gpu_err_t *err) {
    std::call_once(open_once, open_module, nccl_library);
    if (opened_rc != 0) return fail(err, "%s", opened_error.c_str());
    *info = opened_info;
    return 0;
}

int m_device_uuid(int32_t device, uint8_t uuid[16], hvd_gpu_err_t *err) {
    cudaDeviceProp prop{};
    CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    std::memcpy(uuid, prop.uuid.bytes, 16);
    return 0;
}

int m_pointer_device(int32_t expected, const void *ptr, int32_t *is_device, int32_t *device,
                     hvd_gpu_err_t *err) {
    ON_DEVICE(expected);
    cudaPointerAttributes a{};
    CUDA_TRY(cudaPointerGetAttributes(&a, ptr), "cudaPointerGetAttributes");
    *is_device = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
    *device = a.device;
    return 0;
}

// The library's memory pool on `device` (current), made on first use; null where the device
// has no memory pools (some drivers and virtual GPUs) or one cannot be made: cudaMalloc and
// cudaFree serve there. A pool of its own, not the device's default one that frameworks
// allocate from, and one that never reuses a block freed on another stream by making the
// allocating stream wait for that one: neither the frameworks' allocations nor the library's
// ever wait on each other's streams (where NCCL kernels may wait on peers). It keeps up to
// kPoolKeepBytes of freed memory mapped: with CUDA's default of 0, every synchronisation (a
// framework reading a loss, say) would hand freed blocks back to the driver, and the next
// library-owned output would map its memory anew. Decided once per device, so that memory is
// always freed the way it was allocated.
constexpr uint64_t kPoolKeepBytes = uint64_t{256} << 20;

cudaMemPool_t library_pool(int32_t device) {
    static std::mutex mu;
    static std::unordered_map<int32_t, cudaMemPool_t> pools;
    std::lock_guard<std::mutex> lock(mu);
    auto it = pools.find(device);
    if (it != pools.end()) return it->second;
    cudaMemPool_t pool = nullptr;
    int supported = 0;
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) ==
            cudaSuccess &&
        supported != 0) {
        cudaMemPoolProps props{};
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = device;
        int no = 0;
        uint64_t keep = kPoolKeepBytes;
        if (cudaMemPoolCreate(&pool, &props) != cudaSuccess ||
            cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess ||
            cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &no) != cudaSuccess ||
            cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no) !=
                cudaSuccess) {
            if (pool != nullptr) cudaMemPoolDestroy(pool);
            pool = nullptr;
        }
    }
    cudaGetLastError();  // a failed query or creation is not the next call's error
    pools[device] = pool;
    return pool;
}

int m_device_alloc(int32_t device, size_t bytes, void *stream, void **ptr, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    const size_t n = bytes > 0 ? bytes : 1;
    if (cudaMemPool_t pool = library_pool(device)) {
        CUDA_TRY(cudaMallocFromPoolAsync(ptr, n, pool, static_cast<cudaStream_t>(stream)),
                 "cudaMallocFromPoolAsync");
    } else {
        CUDA_TRY(cudaMalloc(ptr, n), "cudaMalloc");
    }
    return 0;
}

int m_device_free(int32_t device, void *ptr, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    // cudaFree waits for the device itself only for cudaMalloc's memory: pool memory is freed
    // at once, so the wait is explicit. Where the wait fails (an earlier error), the free is
    // still tried; the wait's error is the one reported.
    const cudaError_t waited = cudaDeviceSynchronize();
    const cudaError_t freed = cudaFree(ptr);
    CUDA_TRY(waited, "cudaDeviceSynchronize (before cudaFree)");
    CUDA_TRY(freed, "cudaFree");
    return 0;
}

int m_device_free_on(int32_t device, void *ptr, void *stream, hvd_gpu_err_t *err) {
    if (library_pool(device) == nullptr) return m_device_free(device, ptr, err);
    ON_DEVICE(device);
    CUDA_TRY(cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream)), "cudaFreeAsync");
    return 0;
}

int m_host_alloc(int32_t device, size_t bytes, void **ptr, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    CUDA_TRY(cudaHostAlloc(ptr, bytes > 0 ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc");
    return 0;
}

int m_host_free(int32_t device, void *ptr, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    CUDA_TRY(cudaFreeHost(ptr), "cudaFreeHost");
    return 0;
}

int m_stream_create(int32_t device, void **stream, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    cudaStream_t s = nullptr;
    CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    *stream = s;
    return 0;
}

int m_stream_destroy(int32_t device, void *stream, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    CUDA_TRY(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy");
    return 0;
}

int m_event_create(int32_t device, void **event, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    cudaEvent_t e = nullptr;
    CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    *event = e;
    return 0;
}

int m_event_destroy(int32_t device, void *event, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    CUDA_TRY(cudaEventDestroy(static_cast<cudaEvent_t>(event)), "cudaEventDestroy");
    return 0;
}

int m_event_record(int32_t device, void *event, void *stream, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
             "cudaEventRecord");
    return 0;
}

int m_event_query(int32_t device, void *event, int32_t *done, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (e == cudaErrorNotReady) {
        // Not an error, but the runtime keeps it as the thread's last error, which the next
        // kernel launch's check (cudaGetLastError) would then report as its own failure.
        cudaGetLastError();
        *done = 0;
        return 0;
    }
    CUDA_TRY(e, "cudaEventQuery");
    *done = 1;
    return 0;
}

int m_stream_capturing(int32_t device, void *stream, int32_t *capturing, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t e = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status);
    if (e == cudaErrorStreamCaptureImplicit) {
        // The legacy default stream, while a blocking stream of the device captures: work
        // queued on it now would join that capture, so it counts as capturing.
        cudaGetLastError();
        *capturing = 1;
        return 0;
    }
    CUDA_TRY(e, "cudaStreamIsCapturing");
    *capturing = status != cudaStreamCaptureStatusNone;
    return 0;
}

int m_stream_wait_event(int32_t device, void *stream, void *event, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    CUDA_TRY(
        cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
        "cudaStreamWaitEvent");
    return 0;
}

int m_copy_async(int32_t device, void *dst, const void *src, size_t bytes, void *stream,
                 hvd_gpu_err_t *err) {
    if (bytes == 0) return 0;
    ON_DEVICE(device);
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)),
             "cudaMemcpyAsync");
    return 0;
}

int m_copy_batch_async(int32_t device, const hvd_gpu_copy_t *copies, size_t n, int32_t dtype,
                       double factor, void *stream, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    CUDA_TRY(launch_copy_batch(copies, n, dtype, factor, static_cast<cudaStream_t>(stream)),
             "batched copy kernel");
    return 0;
}

int m_scale_async(int32_t device, void *dst, const void *src, size_t count, int32_t dtype,
                  double factor, void *stream, hvd_gpu_err_t *err) {
    ON_DEVICE(device);
    CUDA_TRY(launch_scale(dst, src, count, dtype, factor, static_cast<cudaStream_t>(stream)),
             "scale kernel");
    return 0;
}

int m_zero_async(int32_t device, void *dst, size_t bytes, void *stream, hvd_gpu_err_t *err) {
    if (bytes == 0) return 0;
    ON_DEVICE(device);
    CUDA_TRY(cudaMemsetAsync(dst, 0, bytes, static_cast<cudaStream_t>(stream)), "cudaMemsetAsync");
    return 0;
}

int m_nccl_unique_id(uint8_t id[HVD_GPU_NCCL_ID_BYTES], hvd_gpu_err_t *err) {
    static_assert(sizeof(ncclUniqueId) == HVD_GPU_NCCL_ID_BYTES, "NCCL's unique id size");
    ncclUniqueId u;
    NCCL_TRY(nccl.GetUniqueId(&u), "ncclGetUniqueId", nullptr);
    std::memcpy(id, u.internal, HVD_GPU_NCCL_ID_BYTES);
    return 0;
}

int m_nccl_comm_init(int32_t device, int32_t nranks, int32_t rank,
                     const uint8_t id[HVD_GPU_NCCL_ID_BYTES], void **comm, hvd_gpu_err_t *err) {
    if (int rc = need_nccl(err)) return rc;
    if (nccl_blocking_forced()) return fail(err, "%s", kBlockingForced);
    ON_DEVICE(device);
    ncclUniqueId u;
    std::memcpy(u.internal, id, HVD_GPU_NCCL_ID_BYTES);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // libhvd polls with its own deadline, and aborts on a peer's failure
    ncclComm_t c = nullptr;
    if (int rc = nccl_check(nccl.CommInitRankConfig(&c, nranks, u, rank, &config),
                            "ncclCommInitRankConfig", c, err)) {
        // A communicator NCCL made before failing is ended here: the caller never gets it.
        if (c != nullptr) (void)nccl.CommAbort(c);
        return rc;
    }
    comm_devices.add(c, device);
    *comm = c;
    return 0;
}

int m_nccl_comm_status(void *comm, int32_t *in_progress, hvd_gpu_err_t *err) {
    if (int rc = need_nccl(err)) return rc;
    ncclResult_t state = ncclSuccess;
    ncclComm_t c = static_cast<ncclComm_t>(comm);
    ON_DEVICE(comm_devices.of(comm));
    if (int rc = nccl_check(nccl.CommGetAsyncError(c, &state), "ncclCommGetAsyncError", c, err))
        return rc;
    *in_progress = state == ncclInProgress;
    return nccl_check(state, "NCCL communicator", c, err);
}

int m_nccl_comm_destroy(void *comm, hvd_gpu_err_t *err) {
    DeviceScope scope(comm_devices.of(comm));
    comm_devices.remove(comm);
    NCCL_TRY(nccl.CommDestroy(static_cast<ncclComm_t>(comm)), "ncclCommDestroy", nullptr);
    return 0;
}

int m_nccl_comm_abort(void *comm, hvd_gpu_err_t *err) {
    DeviceScope scope(comm_devices.of(comm));
    comm_devices.remove(comm);
    NCCL_TRY(nccl.CommAbort(static_cast<ncclComm_t>(comm)), "ncclCommAbort", nullptr);
    return 0;
}

int m_nccl_supports(int32_t dtype, int32_t reduce_op) {
    ncclDataType_t t;
    ncclRedOp_t o;
    return nccl_dtype(dtype, &t) && nccl_op(reduce_op, &o);
}

int m_nccl_group_start(hvd_gpu_err_t *err) {
    group_device = -1;
    NCCL_TRY(nccl.GroupStart(), "ncclGroupStart", nullptr);
    return 0;
}

// The group's work is launched here: on its communicators' device, in relaxed capture mode.
// The group ends even where that device cannot be made current, so that it never stays open
// on the thread.
int m_nccl_group_end(hvd_gpu_err_t *err) {
    DeviceScope scope(group_device);
    NCCL_TRY(nccl.GroupEnd(), "ncclGroupEnd", nullptr);
    return 0;
}

int m_nccl_allreduce(const void *send, void *recv, size_t count, int32_t dtype, int32_t op,
                     void *comm, void *stream, hvd_gpu_err_t *err) {
    ncclDataType_t t;
    ncclRedOp_t o;
    if (int rc = reduction_args(dtype, op, &t, &o, err)) return rc;
    ncclComm_t c = static_cast<ncclComm_t>(comm);
    ON_DEVICE(group_device = comm_devices.of(comm));
    NCCL_TRY(nccl.AllReduce(send, recv, count, t, o, c, static_cast<cudaStream_t>(stream)),
             "ncclAllReduce", c);
    return 0;
}

int m_nccl_reduce(const void *send, void *recv, size_t count, int32_t dtype, int32_t op,
                  int32_t root, void *comm, void *stream, hvd_gpu_err_t *err) {
    ncclDataType_t t;
    ncclRedOp_t o;
    if (int rc = reduction_args(dtype, op, &t, &o, err)) return rc;
    ncclComm_t c = static_cast<ncclComm_t>(comm);
    ON_DEVICE(group_device = comm_devices.of(comm));
    NCCL_TRY(nccl.Reduce(send, recv, count, t, o, root, c, static_cast<cudaStream_t>(stream)),
             "ncclReduce", c);
    return 0;
}

int m_nccl_reducescatter(const void *send, void *recv, size_t recv_count, int32_t dtype, int32_t op,
                         void *comm, void *stream, hvd_gpu_err_t *err) {
    ncclDataType_t t;
    ncclRedOp_t o;
    if (int rc = reduction_args(dtype, op, &t, &o, err)) return rc;
    ncclComm_t c = static_cast<ncclComm_t>(comm);
    ON_DEVICE(group_device = comm_devices.of(comm));
    NCCL_TRY(nccl.ReduceScatter(send, recv, recv_count, t, o, c, static_cast<cudaStream_t>(stream)),
             "ncclReduceScatter", c);
    return 0;
}

int m_nccl_broadcast(const void *send, void *recv, size_t bytes, int32_t root, void *comm,
                     void *stream, hvd_gpu_err_t *err) {
    ncclComm_t c = static_cast<ncclComm_t>(comm);
    ON_DEVICE(group_device = comm_devices.of(comm));
    NCCL_TRY(
        nccl.Broadcast(send, recv, bytes, ncclUint8, root, c, static_cast<cudaStream_t>(stream)),
        "ncclBroadcast", c);
    return 0;
}

int m_nccl_allgather(const void *send, void *recv, size_t send_bytes, void *comm, void *stream,
                     hvd_gpu_err_t *err) {
    ncclComm_t c = static_cast<ncclComm_t>(comm);
    ON_DEVICE(group_device = comm_devices.of(comm));
    NCCL_TRY(
        nccl.AllGather(send, recv, send_bytes, ncclUint8, c, static_cast<cudaStream_t>(stream)),
        "ncclAllGather", c);
    return 0;
}

int m_nccl_send(const void *send, size_t bytes, int32_t peer, void *comm, void *stream,
                hvd_gpu_err_t *err) {
    ncclComm_t c = static_cast<ncclComm_t>(comm);
    ON_DEVICE(group_device = comm_devices.of(comm));
    NCCL_TRY(nccl.Send(send, bytes, ncclUint8, peer, c, static_cast<cudaStream_t>(stream)),
             "ncclSend", c);
    return 0;
}

int m_nccl_recv(void *recv, size_t bytes, int32_t peer, void *comm, void *stream,
                hvd_gpu_err_t *err) {
    ncclComm_t c = static_cast<ncclComm_t>(comm);
    ON_DEVICE(group_device = comm_devices.of(comm));
    NCCL_TRY(nccl.Recv(recv, bytes, ncclUint8, peer, c, static_cast<cudaStream_t>(stream)),
             "ncclRecv", c);
    return 0;
}

const hvd_gpu_module_t kTable = {
    HVD_GPU_MODULE_ABI_VERSION,
    sizeof(hvd_gpu_module_t),
    m_open,
    m_device_uuid,
    m_pointer_device,
    m_device_alloc,
    m_device_free,
    m_device_free_on,
    m_host_alloc,
    m_host_free,
    m_stream_create,
    m_stream_destroy,
    m_event_create,
    m_event_destroy,
    m_event_record,
    m_event_query,
    m_stream_wait_event,
    m_copy_async,
    m_copy_batch_async,
    m_scale_async,
    m_zero_async,
    m_nccl_unique_id,
    m_nccl_comm_init,
    m_nccl_comm_status,
    m_nccl_comm_destroy,
    m_nccl_comm_abort,
    m_nccl_supports,
    m_nccl_group_start,
    m_nccl_group_end,
    m_nccl_allreduce,
    m_nccl_reduce,
    m_nccl_reducescatter,
    m_nccl_broadcast,
    m_nccl_allgather,
    m_nccl_send,
    m_nccl_recv,
    m_stream_capturing,
};

}  // namespace
}  // namespace hvd::gpu_module

extern "C" __attribute__((visibility("default"))) const hvd_gpu_module_t *hvd_gpu_module_get(
    uint32_t abi_version, uint32_t *module_abi) {
    if (module_abi != nullptr) *module_abi = HVD_GPU_MODULE_ABI_VERSION;
    return abi_version == HVD_GPU_MODULE_ABI_VERSION ? &hvd::gpu_module::kTable : nullptr;
}
