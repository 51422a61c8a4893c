// SPDX-License-Identifier: Apache-2.0
// What the tests of the GPU paths on the test module (fake_gpu_device.cc) share: its table and
// test hooks, opened by load_fake_device; device arrays; every rank's input values and the
// references computed from them; a rank's context and op parameters; every NCCL dtype x op of
// allreduce checked against those references.
#pragma once

#include <cmocka.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dtype_elements.h"
#include "gpu/gpu_module_api.h"
#include "hvd/hvd.h"
#include "inprocess_job.h"

namespace fake_device_job {

inline const hvd_gpu_module_t *g_device = nullptr;  // the fake module's own table, for the test
inline uint64_t (*g_rounds)() = nullptr;            // NCCL rounds the fake module ran so far
inline uint64_t (*g_nccl_calls)(const char *) = nullptr;        // NCCL calls of a kind, all ranks
inline size_t (*g_misuses)(char *, size_t) = nullptr;           // its device work on freed memory
inline void (*g_fail_rounds)(int, const char *) = nullptr;      // makes its next NCCL calls fail
inline void (*g_gate)(int32_t, void *, const int *) = nullptr;  // blocks a stream until opened
inline uint64_t (*g_pinned_allocs)() = nullptr;                 // pinned host buffers it made
inline void (*g_slow_copies)(int) = nullptr;                    // makes large copies take longer
inline void (*g_capture)(void *, int) = nullptr;  // marks a stream as capturing a CUDA graph
// Which host each rank of a job of several hosts runs on (one letter per rank; empty: one).
inline std::string g_layout;

// ------------------------------------------------------------------ device memory and values

inline void *device_alloc(int32_t device, size_t bytes) {
    void *p = nullptr;
    hvd_gpu_err_t err;
    if (g_device->device_alloc(device, bytes, nullptr, &p, &err) != 0) std::abort();
    return p;
}

inline void device_free(int32_t device, void *p) {
    hvd_gpu_err_t err;
    g_device->device_free(device, p, &err);
}

// Device memory of one tensor, freed with it.
struct DeviceArray {
    DeviceArray(int32_t device_, int32_t dtype_, std::vector<int64_t> shape_)
        : device(device_), dtype(dtype_), shape(std::move(shape_)) {
        count = 1;
        for (int64_t d : shape)
            count *= static_cast<size_t>(d);
        data = device_alloc(device, count * hvd::dtype_size(dtype));
    }
    DeviceArray(const DeviceArray &) = delete;
    DeviceArray &operator=(const DeviceArray &) = delete;
    ~DeviceArray() { device_free(device, data); }

    hvd_tensor_t tensor() const {
        hvd_tensor_t t =
            inprocess_job::tensor(data, dtype, static_cast<int32_t>(shape.size()), shape.data());
        t.device_type = HVD_DEVICE_CUDA;
        t.device_id = device;
        return t;
    }

    int32_t device, dtype;
    std::vector<int64_t> shape;
    size_t count = 0;
    void *data = nullptr;
};

using dtype_elements::load;
using dtype_elements::store;

inline bool is_float(int32_t dtype) {
    return dtype == HVD_DTYPE_FLOAT16 || dtype == HVD_DTYPE_BFLOAT16 ||
           dtype == HVD_DTYPE_FLOAT32 || dtype == HVD_DTYPE_FLOAT64;
}

// Element i of rank r's tensor t: small integers, exact in every dtype and in every sum and
// product of up to four ranks; negative ones for signed dtypes.
inline double value(int32_t dtype, int32_t op, int32_t r, size_t i, int t = 0) {
    if (op == HVD_OP_PRODUCT) return 1 + static_cast<double>((static_cast<size_t>(r) + i) % 2);
    if (dtype == HVD_DTYPE_BOOL) return static_cast<double>((static_cast<size_t>(r) + i) % 3 == 0);
    const double v = static_cast<double>((static_cast<size_t>(r) * 7 + i * 3 + t * 5) % 11) + 1;
    const bool is_unsigned = dtype == HVD_DTYPE_UINT8 || dtype == HVD_DTYPE_UINT16;
    return is_unsigned ? v : v - 5;
}

// op over the ranks' values of element i, scaled as the library does: floats by prescale and
// postscale (Average by 1/n), integers by Average's 1/n in float64, truncated.
inline double reference(int32_t dtype, int32_t op, int32_t n, size_t i, double pre = 1.0,
                        double post = 1.0, int t = 0) {
    double acc = 0;
    for (int32_t r = 0; r < n; ++r) {
        const double v = value(dtype, op, r, i, t) * pre;
        if (r == 0)
            acc = v;
        else if (op == HVD_OP_MIN)
            acc = std::min(acc, v);
        else if (op == HVD_OP_MAX)
            acc = std::max(acc, v);
        else if (op == HVD_OP_PRODUCT)
            acc *= v;
        else
            acc += v;
    }
    if (op == HVD_OP_AVERAGE) post /= n;
    return is_float(dtype) ? acc * post : std::trunc(acc * post);
}

// "" or the first element of `got` (count elements) that is not want(i).
inline std::string compare(const std::string &what, int32_t dtype, const void *got, size_t count,
                           const std::function<double(size_t)> &want) {
    const double tol = dtype == HVD_DTYPE_BFLOAT16  ? 1e-2
                       : dtype == HVD_DTYPE_FLOAT16 ? 2e-3
                       : dtype == HVD_DTYPE_FLOAT32 ? 1e-6
                                                    : 1e-12;
    for (size_t i = 0; i < count; ++i) {
        const double g = load(dtype, got, i), w = want(i);
        if (std::fabs(g - w) > tol * std::max(1.0, std::fabs(w)))
            return what + " (dtype " + std::to_string(dtype) + "): element " + std::to_string(i) +
                   " is " + std::to_string(g) + ", not " + std::to_string(w);
    }
    return "";
}

// ------------------------------------------------------------------ a rank

struct Rank {
    hvd_context_h ctx = nullptr;
    int32_t rank = 0, size = 0, device = 0;
};

// An op's parameters and the name they point at.
struct Params : hvd_op_params_t {
    explicit Params(std::string n) {
        std::memset(static_cast<hvd_op_params_t *>(this), 0, sizeof(hvd_op_params_t));
        field_mask = HVD_OP_FIELD_NAME;
        rename(std::move(n));
    }
    Params(const Params &) = delete;
    Params &operator=(const Params &) = delete;
    void rename(std::string n) {
        label = std::move(n);
        name = label.c_str();
    }
    std::string label;
};

// Waits for req and releases it; "" or what failed.
inline std::string finish(hvd_request_h req, const std::string &what) {
    hvd_status_t s = hvd_request_wait(req, 60000);
    std::string out;
    if (s != HVD_OK) {
        char msg[512];
        hvd_request_message(req, msg, sizeof msg);
        out = what + ": " + hvd_status_name(s) + ": " + msg;
    }
    hvd_request_release(req);
    return out;
}

inline std::string enqueue_failed(const std::string &what) {
    char msg[512];
    hvd_last_error(msg, sizeof msg);
    return what + ": enqueue failed: " + msg;
}

// A stream of the caller, the event that tells when its work so far has run.
struct CallerStream {
    explicit CallerStream(int32_t device_) : device(device_) {
        hvd_gpu_err_t err;
        g_device->stream_create(device, &stream, &err);
        g_device->event_create(device, &event, &err);
    }
    ~CallerStream() {
        hvd_gpu_err_t err;
        g_device->stream_destroy(device, stream, &err);
        g_device->event_destroy(device, event, &err);
    }
    void copy(void *dst, const void *src, size_t bytes) {
        hvd_gpu_err_t err;
        g_device->copy_async(device, dst, src, bytes, stream, &err);
    }
    bool sync() {  // the host waits for the stream's work so far
        hvd_gpu_err_t err;
        g_device->event_record(device, event, stream, &err);
        for (int i = 0; i < 600000; ++i) {
            int32_t done = 0;
            g_device->event_query(device, event, &done, &err);
            if (done) return true;
            usleep(100);
        }
        return false;
    }
    int32_t device;
    void *stream = nullptr, *event = nullptr;
};

// ------------------------------------------------------------------ allreduce

inline const int32_t kNcclDtypes[] = {HVD_DTYPE_UINT8,   HVD_DTYPE_INT8,    HVD_DTYPE_INT32,
                                      HVD_DTYPE_INT64,   HVD_DTYPE_FLOAT16, HVD_DTYPE_BFLOAT16,
                                      HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT64};
inline const int32_t kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT, HVD_OP_AVERAGE};

// Every dtype x op, out of place, all enqueued before any is waited for (those of one dtype and
// op fuse); then every float dtype in place with prescale and postscale.
inline std::string allreduce_everything(Rank &me, const std::vector<int32_t> &dtypes) {
    struct Case {
        int32_t dtype, op;
        std::unique_ptr<DeviceArray> in, out;
        hvd_request_h req = nullptr;
    };
    std::vector<Case> cases;
    const size_t n = 37;
    for (int32_t dtype : dtypes)
        for (int32_t op : kOps) {
            Case c{dtype, op,
                   std::make_unique<DeviceArray>(me.device, dtype, std::vector<int64_t>{37}),
                   std::make_unique<DeviceArray>(me.device, dtype, std::vector<int64_t>{37})};
            for (size_t i = 0; i < n; ++i)
                store(dtype, c.in->data, i, value(dtype, op, me.rank, i));
            cases.push_back(std::move(c));
        }
    for (Case &c : cases) {
        const std::string name = "ar." + std::to_string(c.dtype) + "." + std::to_string(c.op);
        Params p(name);
        p.field_mask |= HVD_OP_FIELD_REDUCE_OP;
        p.reduce_op = c.op;
        hvd_tensor_t in = c.in->tensor(), out = c.out->tensor();
        if (hvd_allreduce_enqueue(me.ctx, &in, &out, &p, &c.req) != HVD_OK)
            return enqueue_failed(name);
    }
    for (Case &c : cases) {
        const std::string what =
            "allreduce dtype " + std::to_string(c.dtype) + " op " + std::to_string(c.op);
        std::string err = finish(c.req, what);
        if (err.empty())
            err = compare(what, c.dtype, c.out->data, n,
                          [&](size_t i) { return reference(c.dtype, c.op, me.size, i); });
        if (!err.empty()) return err;
    }
    for (int32_t dtype : dtypes) {
        if (!is_float(dtype)) continue;
        DeviceArray x(me.device, dtype, {5, 3});
        for (size_t i = 0; i < x.count; ++i)
            store(dtype, x.data, i, value(dtype, HVD_OP_SUM, me.rank, i));
        const std::string name = "ar.scaled." + std::to_string(dtype);
        Params p(name);
        p.field_mask |= HVD_OP_FIELD_SCALE;
        p.prescale = 0.5;
        p.postscale = 3.0;
        hvd_tensor_t t = x.tensor();
        hvd_request_h req;
        if (hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &req) != HVD_OK) return enqueue_failed(name);
        std::string err = finish(req, name);
        if (err.empty())
            err = compare(name, dtype, x.data, x.count, [&](size_t i) {
                return reference(dtype, HVD_OP_SUM, me.size, i, 0.5, 3.0);
            });
        if (!err.empty()) return err;
    }
    return "";
}
// ------------------------------------------------------------------ allgather

// A library-owned output (the request's output `index`): its shape, and "" or what differs from
// want(row, column).
inline std::string check_outstore(hvd_request_h req, const std::string &what, int32_t dtype,
                                  int64_t rows, int64_t cols,
                                  const std::function<double(int64_t, int64_t)> &want,
                                  int32_t index = 0) {
    hvd_tensor_t out;
    if (hvd_request_output(req, index, &out) != HVD_OK) return what + ": no output";
    if (out.device_type != HVD_DEVICE_CUDA) return what + ": the output is not device memory";
    if (out.shape[0] != rows)
        return what + ": " + std::to_string(out.shape[0]) + " rows, not " + std::to_string(rows);
    return compare(what, dtype, out.data, static_cast<size_t>(rows * cols), [&](size_t i) {
        return want(static_cast<int64_t>(i) / cols, static_cast<int64_t>(i) % cols);
    });
}

inline std::string wait_only(hvd_request_h req, const std::string &what) {
    hvd_status_t s = hvd_request_wait(req, 60000);
    if (s == HVD_OK) return "";
    char msg[512];
    hvd_request_message(req, msg, sizeof msg);
    hvd_request_release(req);
    return what + ": " + hvd_status_name(s) + ": " + msg;
}

// Ragged rows (rank r has r + 1) go through broadcasts, even ones through an ncclAllGather,
// both into library-owned outputs: enqueued apart (fused or not, as the engine finds them),
// then as one grouped allgather (one run, one NCCL group). Every rank makes 2 ncclAllGather
// calls and 2 * size ncclBroadcast calls on the NCCL path.
inline std::string allgathers(Rank &me) {
    const int64_t cols = 3;
    DeviceArray ragged(me.device, HVD_DTYPE_INT32, {me.rank + 1, cols});
    for (size_t i = 0; i < ragged.count; ++i)
        store(HVD_DTYPE_INT32, ragged.data, i, 100 * me.rank + static_cast<double>(i));
    DeviceArray even(me.device, HVD_DTYPE_INT32, {2, cols});
    for (size_t i = 0; i < even.count; ++i)
        store(HVD_DTYPE_INT32, even.data, i, -100.0 * me.rank - static_cast<double>(i));
    const int64_t rows = static_cast<int64_t>(me.size) * (me.size + 1) / 2;
    auto ragged_at = [&](int64_t row, int64_t col) {
        int64_t r = 0, first = 0;
        while (first + r + 1 <= row)
            first += ++r;
        return 100.0 * r + static_cast<double>((row - first) * cols + col);
    };
    auto even_at = [&](int64_t row, int64_t col) {
        return -100.0 * static_cast<double>(row / 2) - static_cast<double>((row % 2) * cols + col);
    };
    Params p1("ag.ragged"), p2("ag.even"), p3("ag.grouped");
    hvd_tensor_t t1 = ragged.tensor(), t2 = even.tensor();
    hvd_request_h r1, r2, r3;
    if (hvd_allgather_enqueue(me.ctx, &t1, &p1, &r1) != HVD_OK) return enqueue_failed("ragged");
    if (hvd_allgather_enqueue(me.ctx, &t2, &p2, &r2) != HVD_OK) return enqueue_failed("even");
    std::string err = wait_only(r1, "ragged allgather");
    if (!err.empty()) return err;
    err = check_outstore(r1, "ragged allgather", HVD_DTYPE_INT32, rows, cols, ragged_at);
    hvd_request_release(r1);
    if (!err.empty()) return err;
    err = wait_only(r2, "even allgather");
    if (!err.empty()) return err;
    err = check_outstore(r2, "even allgather", HVD_DTYPE_INT32, 2 * me.size, cols, even_at);
    hvd_request_release(r2);
    if (!err.empty()) return err;
    const hvd_tensor_t *both[2] = {&t1, &t2};
    if (hvd_grouped_allgather_enqueue(me.ctx, both, 2, &p3, &r3) != HVD_OK)
        return enqueue_failed("grouped");
    err = wait_only(r3, "grouped allgather");
    if (!err.empty()) return err;
    err = check_outstore(r3, "grouped allgather, ragged", HVD_DTYPE_INT32, rows, cols, ragged_at);
    if (err.empty())
        err = check_outstore(r3, "grouped allgather, even", HVD_DTYPE_INT32, 2 * me.size, cols,
                             even_at, 1);
    hvd_request_release(r3);
    return err;
}

// Allgathers into the caller's outputs: float64 rows of every rank (rank r has (r * 5) % 4
// rows, some none), out of place and in place (the rank's rows already in its output), and a
// large uint8 one (rank r has (r + 1) * mib_per_rank MiB: staged through host memory, in
// chunks that split ranks' rows and, above 32 MiB in all, reuse the staging slots) on the
// caller's stream, read back there.
inline std::string allgathers_into(Rank &me, size_t mib_per_rank) {
    auto rows_of = [](int32_t r) { return static_cast<int64_t>((r * 5) % 4); };
    int64_t total = 0, before = 0;
    for (int32_t r = 0; r < me.size; ++r) {
        if (r == me.rank) before = total;
        total += rows_of(r);
    }
    const int64_t cols = 3;
    auto want = [&](int64_t row, int64_t col) {
        int32_t r = 0;
        int64_t first = 0;
        while (first + rows_of(r) <= row)
            first += rows_of(r++);
        return 1000.0 * r + static_cast<double>((row - first) * cols + col);
    };
    DeviceArray in(me.device, HVD_DTYPE_FLOAT64, {rows_of(me.rank), cols});
    DeviceArray out(me.device, HVD_DTYPE_FLOAT64, {total, cols});
    DeviceArray whole(me.device, HVD_DTYPE_FLOAT64, {total, cols});
    for (size_t i = 0; i < in.count; ++i) {
        const double v = 1000.0 * me.rank + static_cast<double>(i);
        store(HVD_DTYPE_FLOAT64, in.data, i, v);
        store(HVD_DTYPE_FLOAT64, whole.data, static_cast<size_t>(before * cols) + i, v);
    }
    hvd_tensor_t ti = in.tensor(), to = out.tensor(), tw = whole.tensor();
    hvd_tensor_t mine = whole.tensor();  // this rank's rows inside `whole`
    mine.data = static_cast<double *>(whole.data) + before * cols;
    const int64_t my_shape[2] = {rows_of(me.rank), cols};
    mine.shape = my_shape;
    Params p1("agi.apart"), p2("agi.in_place");
    hvd_request_h r1, r2;
    if (hvd_allgather_into_enqueue(me.ctx, &ti, &to, &p1, &r1) != HVD_OK)
        return enqueue_failed("agi.apart");
    if (hvd_allgather_into_enqueue(me.ctx, &mine, &tw, &p2, &r2) != HVD_OK)
        return enqueue_failed("agi.in_place");
    std::string err = finish(r1, "allgather into an output");
    if (err.empty()) err = finish(r2, "allgather in place");
    for (size_t i = 0; err.empty() && i < out.count; ++i) {
        const double w = want(static_cast<int64_t>(i) / cols, static_cast<int64_t>(i) % cols);
        for (const DeviceArray *a : {&out, &whole})
            if (load(HVD_DTYPE_FLOAT64, a->data, i) != w)
                err = std::string(a == &out ? "allgather into an output" : "allgather in place") +
                      ": element " + std::to_string(i) + " is " +
                      std::to_string(load(HVD_DTYPE_FLOAT64, a->data, i)) + ", not " +
                      std::to_string(w);
    }
    if (!err.empty()) return err;
    const size_t mib = mib_per_rank << 20;
    size_t big_total = 0;
    for (int32_t r = 0; r < me.size; ++r)
        big_total += (r + 1) * mib;
    DeviceArray big(me.device, HVD_DTYPE_UINT8, {static_cast<int64_t>((me.rank + 1) * mib)});
    DeviceArray big_out(me.device, HVD_DTYPE_UINT8, {static_cast<int64_t>(big_total)});
    std::memset(big.data, 7 + me.rank, big.count);
    CallerStream s(me.device);
    std::vector<uint8_t> back(big_total, 0);
    Params p3("agi.stream");
    p3.field_mask |= HVD_OP_FIELD_STREAM;
    p3.stream = s.stream;
    hvd_tensor_t tb = big.tensor(), tbo = big_out.tensor();
    hvd_request_h r3;
    if (hvd_allgather_into_enqueue(me.ctx, &tb, &tbo, &p3, &r3) != HVD_OK)
        return enqueue_failed("agi.stream");
    err = finish(r3, "allgather on the caller's stream");
    s.copy(back.data(), big_out.data, big_total);
    if (!s.sync()) return "the caller's stream did not finish";
    if (!err.empty()) return err;
    size_t at = 0;
    for (int32_t r = 0; r < me.size; ++r)
        for (size_t i = 0; i < (r + 1) * mib; ++i, ++at)
            if (back[at] != 7 + r)
                return "allgather on the stream: byte " + std::to_string(at) + " is " +
                       std::to_string(back[at]);
    return "";
}

// A grouped allgather (one fused run) of int32 rows of 3 (rank r has (r * 5) % 4 rows) and
// float32 rows of 5 (none on host b of g_layout, else r % 3 + 1) into library-owned outputs.
inline std::string grouped_allgather(Rank &me) {
    auto rows_a = [](int32_t r) { return static_cast<int64_t>((r * 5) % 4); };
    auto rows_b = [](int32_t r) {
        const size_t ur = static_cast<size_t>(r);
        return ur < g_layout.size() && g_layout[ur] == 'b' ? int64_t{0} : int64_t{r % 3 + 1};
    };
    const int64_t cols[2] = {3, 5};
    const int32_t dtypes[2] = {HVD_DTYPE_INT32, HVD_DTYPE_FLOAT32};
    const std::function<int64_t(int32_t)> rows_of[2] = {rows_a, rows_b};
    std::vector<std::unique_ptr<DeviceArray>> xs;
    std::vector<hvd_tensor_t> ts(2);
    std::vector<const hvd_tensor_t *> pts(2);
    for (int t = 0; t < 2; ++t) {
        xs.push_back(std::make_unique<DeviceArray>(
            me.device, dtypes[t], std::vector<int64_t>{rows_of[t](me.rank), cols[t]}));
        for (size_t i = 0; i < xs[t]->count; ++i)
            store(dtypes[t], xs[t]->data, i, 100.0 * me.rank + static_cast<double>(i) + t);
        ts[t] = xs[t]->tensor();
        pts[t] = &ts[t];
    }
    Params p("grouped.ag");
    hvd_request_h req;
    if (hvd_grouped_allgather_enqueue(me.ctx, pts.data(), 2, &p, &req) != HVD_OK)
        return enqueue_failed("grouped.ag");
    std::string err = wait_only(req, "grouped allgather");
    if (!err.empty()) return err;
    for (int t = 0; t < 2 && err.empty(); ++t) {
        int64_t total = 0;
        for (int32_t r = 0; r < me.size; ++r)
            total += rows_of[t](r);
        err = check_outstore(
            req, "grouped allgather tensor " + std::to_string(t), dtypes[t], total, cols[t],
            [&](int64_t row, int64_t col) {
                int32_t r = 0;
                int64_t first = 0;
                while (first + rows_of[t](r) <= row)
                    first += rows_of[t](r++);
                return 100.0 * r + static_cast<double>((row - first) * cols[t] + col) + t;
            },
            t);
    }
    hvd_request_release(req);
    return err;
}

// Opens the test module at `path` (also the GPU module libhvd loads: HVD_GPU_MODULE) and its
// test hooks; false (with a message on stderr) where it cannot.
inline bool load_fake_device(const char *path) {
    setenv("HVD_GPU_MODULE", path, 1);
    void *h = dlopen(path, RTLD_NOW);
    if (h == nullptr) {
        std::fprintf(stderr, "cannot open %s: %s\n", path, dlerror());
        return false;
    }
    auto get = reinterpret_cast<hvd_gpu_module_get_fn>(dlsym(h, HVD_GPU_MODULE_ENTRY));
    uint32_t abi = 0;
    g_device = get != nullptr ? get(HVD_GPU_MODULE_ABI_VERSION, &abi) : nullptr;
    g_rounds = reinterpret_cast<uint64_t (*)()>(dlsym(h, "fake_gpu_device_rounds"));
    g_misuses = reinterpret_cast<size_t (*)(char *, size_t)>(dlsym(h, "fake_gpu_device_misuses"));
    g_fail_rounds =
        reinterpret_cast<void (*)(int, const char *)>(dlsym(h, "fake_gpu_device_fail_rounds"));
    g_pinned_allocs = reinterpret_cast<uint64_t (*)()>(dlsym(h, "fake_gpu_device_pinned_allocs"));
    g_gate =
        reinterpret_cast<void (*)(int32_t, void *, const int *)>(dlsym(h, "fake_gpu_device_gate"));
    g_slow_copies = reinterpret_cast<void (*)(int)>(dlsym(h, "fake_gpu_device_slow_copies"));
    g_capture = reinterpret_cast<void (*)(void *, int)>(dlsym(h, "fake_gpu_device_capture"));
    g_nccl_calls =
        reinterpret_cast<uint64_t (*)(const char *)>(dlsym(h, "fake_gpu_device_nccl_calls"));
    if (g_device == nullptr || g_rounds == nullptr || g_misuses == nullptr ||
        g_fail_rounds == nullptr || g_pinned_allocs == nullptr || g_gate == nullptr ||
        g_slow_copies == nullptr || g_capture == nullptr || g_nccl_calls == nullptr) {
        std::fprintf(stderr, "%s is not the test GPU module\n", path);
        return false;
    }
    hvd_gpu_info_t info;
    hvd_gpu_err_t err;
    return g_device->open(nullptr, &info, &err) == 0;
}

}  // namespace fake_device_job
