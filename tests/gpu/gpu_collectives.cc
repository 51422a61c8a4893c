// SPDX-License-Identifier: Apache-2.0
// Collectives on CUDA tensors, checked against references computed on the host: every dtype x
// reduction, scaling, fusion of many small tensors, large allreduces and broadcasts (the host
// path's chunks), a joined rank, ragged allgather, broadcast, alltoall with splits, uneven
// reducescatter, grouped allreduce, Adasum, ready events and the caller's stream. Runs under
// hvdrun on any number of ranks; on NCCL where each rank has its own GPU, through host memory
// where they share one (or HVD_GPU_OPERATIONS=host). Exits 77 (skipped) where no CUDA device is
// usable.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "../mp/mp_check.h"
}

namespace {

void cuda_ok(cudaError_t e, const char *what) {
    if (e != cudaSuccess) mp_die("%s: %s", what, cudaGetErrorString(e));
}

int g_device = 0;

struct DeviceTensor {
    void *ptr = nullptr;
    size_t bytes = 0;
    explicit DeviceTensor(size_t n) : bytes(n) {
        cuda_ok(cudaMalloc(&ptr, n > 0 ? n : 1), "cudaMalloc");
    }
    ~DeviceTensor() { cudaFree(ptr); }
    // A copy from pageable memory may return before it lands, and the library's stream does
    // not wait for the default stream: without a ready event the caller synchronises first.
    void upload(const std::vector<char> &host) {
        cuda_ok(cudaMemcpy(ptr, host.data(), bytes, cudaMemcpyHostToDevice), "upload");
        cuda_ok(cudaDeviceSynchronize(), "upload");
    }
    std::vector<char> download() const {
        std::vector<char> host(bytes);
        cuda_ok(cudaMemcpy(host.data(), ptr, bytes, cudaMemcpyDeviceToHost), "download");
        return host;
    }
};

hvd_tensor_t cuda_tensor(void *data, int32_t dtype, int32_t ndim, const int64_t *shape) {
    hvd_tensor_t t = mp_tensor(data, dtype, ndim, shape);
    t.device_type = HVD_DEVICE_CUDA;
    t.device_id = g_device;
    return t;
}

std::vector<char> host_values(int32_t dtype, size_t n, int32_t rank) {
    std::vector<char> h(n * mp_dtype_size(dtype));
    for (size_t i = 0; i < n; ++i)
        mp_set(dtype, h.data(), i, mp_value(dtype, rank, i));
    return h;
}

void check_close(const char *what, int32_t dtype, const void *got, size_t i, double want) {
    double g = mp_get(dtype, got, i);
    if (std::fabs(g - want) > mp_tolerance(dtype, want))
        mp_die("%s (%s): element %zu is %g, want %g", what, mp_dtype_name(dtype), i, g, want);
}

const int32_t kDtypes[] = {HVD_DTYPE_UINT8,   HVD_DTYPE_INT8,  HVD_DTYPE_UINT16,  HVD_DTYPE_INT16,
                           HVD_DTYPE_INT32,   HVD_DTYPE_INT64, HVD_DTYPE_FLOAT16, HVD_DTYPE_FLOAT32,
                           HVD_DTYPE_FLOAT64, HVD_DTYPE_BOOL,  HVD_DTYPE_BFLOAT16};
const int32_t kOps[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};

void test_allreduce_every_dtype_and_op() {
    const size_t n = 1000;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    for (int32_t dtype : kDtypes) {
        for (int32_t op : kOps) {
            if (op == HVD_OP_AVERAGE && dtype == HVD_DTYPE_BOOL) continue;
            for (int in_place = 0; in_place < 2; ++in_place) {
                size_t bytes = n * mp_dtype_size(dtype);
                DeviceTensor in(bytes), out(bytes);
                in.upload(host_values(dtype, n, mp_rank));
                hvd_tensor_t ti = cuda_tensor(in.ptr, dtype, 1, shape);
                hvd_tensor_t to = cuda_tensor(in_place ? in.ptr : out.ptr, dtype, 1, shape);
                std::string name = std::string("ar.") + mp_dtype_name(dtype) + "." +
                                   std::to_string(op) + (in_place ? ".inplace" : "");
                hvd_op_params_t p = mp_reduce_params(name.c_str(), op);
                hvd_request_h req;
                if (hvd_allreduce_enqueue(mp_ctx, &ti, &to, &p, &req) != HVD_OK)
                    mp_die("enqueue %s", name.c_str());
                if (mp_wait(req) != HVD_OK) mp_die("%s failed", name.c_str());
                hvd_request_release(req);
                std::vector<char> got = (in_place ? in : out).download();
                for (size_t i = 0; i < n; ++i)
                    check_close(name.c_str(), dtype, got.data(), i, mp_reference(dtype, op, i));
                if (!in_place) {  // the input is untouched
                    std::vector<char> orig = in.download();
                    for (size_t i = 0; i < n; ++i)
                        check_close("allreduce input", dtype, orig.data(), i,
                                    mp_value(dtype, mp_rank, i));
                }
            }
        }
    }
}

void test_scaling() {
    const size_t n = 257;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    DeviceTensor t(n * sizeof(float));
    t.upload(host_values(HVD_DTYPE_FLOAT32, n, mp_rank));
    hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_reduce_params("scaled", HVD_OP_SUM);
    p.field_mask |= HVD_OP_FIELD_SCALE;
    p.prescale = 0.5;
    p.postscale = 3.0;
    hvd_request_h req;
    if (hvd_allreduce_enqueue(mp_ctx, &d, &d, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("scaled allreduce");
    hvd_request_release(req);
    std::vector<char> got = t.download();
    for (size_t i = 0; i < n; ++i)
        check_close("scaled", HVD_DTYPE_FLOAT32, got.data(), i,
                    1.5 * mp_reference(HVD_DTYPE_FLOAT32, HVD_OP_SUM, i));
}

// Many small tensors enqueued before any wait: fused on the device.
void test_fusion() {
    const int k = 150;
    std::vector<DeviceTensor *> ts;
    std::vector<hvd_request_h> reqs(k);
    for (int j = 0; j < k; ++j) {
        size_t n = 1 + static_cast<size_t>(j % 7) * 33;
        int64_t shape[1] = {static_cast<int64_t>(n)};
        ts.push_back(new DeviceTensor(n * sizeof(double)));
        std::vector<char> h = host_values(HVD_DTYPE_FLOAT64, n, mp_rank + j);
        ts.back()->upload(h);
        hvd_tensor_t d = cuda_tensor(ts.back()->ptr, HVD_DTYPE_FLOAT64, 1, shape);
        std::string name = "fused." + std::to_string(j);
        hvd_op_params_t p = mp_reduce_params(name.c_str(), HVD_OP_AVERAGE);
        if (hvd_allreduce_enqueue(mp_ctx, &d, &d, &p, &reqs[j]) != HVD_OK) mp_die("fused enqueue");
    }
    for (int j = 0; j < k; ++j) {
        if (mp_wait(reqs[j]) != HVD_OK) mp_die("fused %d failed", j);
        hvd_request_release(reqs[j]);
        std::vector<char> got = ts[j]->download();
        size_t n = got.size() / sizeof(double);
        for (size_t i = 0; i < n; ++i) {
            double sum = 0;
            for (int r = 0; r < mp_size; ++r)
                sum += mp_value(HVD_DTYPE_FLOAT64, r + j, i);
            check_close("fused average", HVD_DTYPE_FLOAT64, got.data(), i, sum / mp_size);
        }
        delete ts[j];
    }
}

// Rank r's element i of tensor t in the large tests: -3..3, so sums are exact, and without a
// period, so a chunk copied to or from the wrong place cannot match by chance.
double large_value(int r, size_t t, size_t i) {
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull + (t + 1) * 0xBF58476D1CE4E5B9ull +
                 static_cast<uint64_t>(r) * 0x94D049BB133111EBull;
    return static_cast<double>(static_cast<int>((h >> 37) % 7) - 3);
}

std::vector<char> large_values(int32_t dtype, size_t n, size_t t, int r) {
    std::vector<char> h(n * mp_dtype_size(dtype));
    for (size_t i = 0; i < n; ++i)
        mp_set(dtype, h.data(), i, large_value(r, t, i));
    return h;
}

// The sum over ranks `from`..mp_size-1 of tensor t's element i.
double large_sum(size_t t, size_t i, int from = 0) {
    double sum = 0;
    for (int r = from; r < mp_size; ++r)
        sum += large_value(r, t, i);
    return sum;
}

// Allreduces large enough for the host path to pipeline in chunks through its four slots
// (engine/staged_allreduce.h): 40 MiB and 12 bytes is five chunks of 8 MiB and one of 12
// bytes, in place and out of place, Sum and Average; then a grouped allreduce of five tensors
// (one run of 59 MiB: eight chunks, tensors ending inside them, two members out of place).
// On NCCL the same sizes check its large path.
void test_large_allreduce() {
    const size_t n = (size_t{40} << 20) / 4 + 3;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    const std::vector<char> h = large_values(HVD_DTYPE_FLOAT32, n, 0, mp_rank);
    for (int32_t op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
        for (int in_place = 0; in_place < 2; ++in_place) {
            DeviceTensor in(n * 4), out(n * 4);
            in.upload(h);
            hvd_tensor_t ti = cuda_tensor(in.ptr, HVD_DTYPE_FLOAT32, 1, shape);
            hvd_tensor_t to = cuda_tensor(in_place ? in.ptr : out.ptr, HVD_DTYPE_FLOAT32, 1, shape);
            std::string name = "large." + std::to_string(op) + (in_place ? ".inplace" : "");
            hvd_op_params_t p = mp_reduce_params(name.c_str(), op);
            hvd_request_h req;
            if (hvd_allreduce_enqueue(mp_ctx, &ti, &to, &p, &req) != HVD_OK ||
                mp_wait(req) != HVD_OK)
                mp_die("%s", name.c_str());
            hvd_request_release(req);
            std::vector<char> got = (in_place ? in : out).download();
            const double div = op == HVD_OP_AVERAGE ? mp_size : 1;
            for (size_t i = 0; i < n; ++i)
                check_close(name.c_str(), HVD_DTYPE_FLOAT32, got.data(), i, large_sum(0, i) / div);
            if (!in_place && in.download() != h) mp_die("%s changed its input", name.c_str());
        }
    }
    const int k = 5;
    const size_t sizes[k] = {(size_t{5} << 19) + 7, (size_t{3} << 20) + 1, 5, size_t{1} << 20,
                             (size_t{7} << 17) + 3};  // float64 elements
    std::vector<DeviceTensor *> ins, outs;
    std::vector<hvd_tensor_t> in_descs(k), out_descs(k);
    std::vector<const hvd_tensor_t *> in_ptrs(k), out_ptrs(k);
    int64_t shapes[k][1];
    for (int j = 0; j < k; ++j) {
        const size_t t = static_cast<size_t>(j) + 1;
        shapes[j][0] = static_cast<int64_t>(sizes[j]);
        ins.push_back(new DeviceTensor(sizes[j] * 8));
        ins.back()->upload(large_values(HVD_DTYPE_FLOAT64, sizes[j], t, mp_rank));
        const bool separate = j == 1 || j == 3;
        outs.push_back(separate ? new DeviceTensor(sizes[j] * 8) : nullptr);
        in_descs[j] = cuda_tensor(ins.back()->ptr, HVD_DTYPE_FLOAT64, 1, shapes[j]);
        out_descs[j] =
            separate ? cuda_tensor(outs.back()->ptr, HVD_DTYPE_FLOAT64, 1, shapes[j]) : in_descs[j];
        in_ptrs[j] = &in_descs[j];
        out_ptrs[j] = &out_descs[j];
    }
    hvd_op_params_t p = mp_reduce_params("large.grouped", HVD_OP_SUM);
    hvd_request_h req;
    if (hvd_grouped_allreduce_enqueue(mp_ctx, in_ptrs.data(), out_ptrs.data(), k, &p, &req) !=
            HVD_OK ||
        mp_wait(req) != HVD_OK)
        mp_die("large grouped allreduce");
    hvd_request_release(req);
    for (int j = 0; j < k; ++j) {
        const size_t t = static_cast<size_t>(j) + 1;
        std::vector<char> got = (outs[j] != nullptr ? outs[j] : ins[j])->download();
        for (size_t i = 0; i < sizes[j]; ++i)
            check_close("large grouped", HVD_DTYPE_FLOAT64, got.data(), i, large_sum(t, i));
        delete ins[j];
        delete outs[j];
    }
}

// A broadcast large enough for the host path to pipeline (six chunks) from the last rank, in
// place and out of place, each rank choosing for itself (an output of its own: the input is
// left as it was).
void test_large_broadcast() {
    const size_t n = (size_t{40} << 20) / 4 + 5;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    const int root = mp_size - 1;
    const std::vector<char> mine = large_values(HVD_DTYPE_FLOAT32, n, 7, mp_rank);
    const std::vector<char> roots = large_values(HVD_DTYPE_FLOAT32, n, 7, root);
    for (int round = 0; round < 3; ++round) {
        const int in_place = round < 2 ? round : mp_rank % 2;
        DeviceTensor in(n * 4), out(n * 4);
        in.upload(mine);
        hvd_tensor_t ti = cuda_tensor(in.ptr, HVD_DTYPE_FLOAT32, 1, shape);
        hvd_tensor_t to = cuda_tensor(in_place ? in.ptr : out.ptr, HVD_DTYPE_FLOAT32, 1, shape);
        std::string name = "large.broadcast." + std::to_string(round);
        hvd_op_params_t p = mp_params(NULL);
        p.field_mask |= HVD_OP_FIELD_NAME | HVD_OP_FIELD_ROOT;
        p.name = name.c_str();
        p.root_rank = root;
        hvd_request_h req;
        if (hvd_broadcast_enqueue(mp_ctx, &ti, &to, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
            mp_die("%s", name.c_str());
        hvd_request_release(req);
        if ((in_place ? in : out).download() != roots)
            mp_die("%s: the output is not rank %d's input", name.c_str(), root);
        if (!in_place && in.download() != mine) mp_die("%s changed its input", name.c_str());
    }
}

// Rank 0 joins at once; the others allreduce a large CUDA tensor (through host memory in six
// chunks: a joined rank keeps NCCL out), rank 0 taking part with zeros in the same chunks.
void test_join_during_large_allreduce() {
    if (mp_size < 2) return;
    hvd_request_h join;
    if (mp_rank == 0 && hvd_join_enqueue(mp_ctx, nullptr, &join) != HVD_OK) mp_die("join");
    if (mp_rank != 0) {
        const size_t n = (size_t{40} << 20) / 4 + 1;
        int64_t shape[1] = {static_cast<int64_t>(n)};
        DeviceTensor t(n * 4);
        t.upload(large_values(HVD_DTYPE_FLOAT32, n, 9, mp_rank));
        hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_FLOAT32, 1, shape);
        hvd_op_params_t p = mp_reduce_params("large.while.joined", HVD_OP_SUM);
        hvd_request_h req;
        if (hvd_allreduce_enqueue(mp_ctx, &d, &d, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
            mp_die("allreduce while rank 0 is joined");
        hvd_request_release(req);
        std::vector<char> got = t.download();
        for (size_t i = 0; i < n; ++i)
            check_close("allreduce while rank 0 is joined", HVD_DTYPE_FLOAT32, got.data(), i,
                        large_sum(9, i, 1));
        if (hvd_join_enqueue(mp_ctx, nullptr, &join) != HVD_OK) mp_die("join");
    }
    if (mp_wait(join) != HVD_OK) mp_die("join failed");
    hvd_request_release(join);
}

// Rank r contributes r + 1 rows of 3 int32 values 1000 r + 10 row + col.
void test_allgather_ragged() {
    const int64_t rows = mp_rank + 1, cols = 3;
    int64_t shape[2] = {rows, cols};
    std::vector<char> h(static_cast<size_t>(rows * cols) * 4);
    for (int64_t i = 0; i < rows * cols; ++i)
        mp_set(HVD_DTYPE_INT32, h.data(), i, 1000.0 * mp_rank + 10 * (i / cols) + i % cols);
    DeviceTensor in(h.size());
    in.upload(h);
    hvd_tensor_t t = cuda_tensor(in.ptr, HVD_DTYPE_INT32, 2, shape);
    hvd_op_params_t p = mp_params(NULL);
    hvd_request_h req;
    if (hvd_allgather_enqueue(mp_ctx, &t, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("allgather");
    hvd_tensor_t out;
    if (hvd_request_output(req, 0, &out) != HVD_OK) mp_die("allgather output");
    if (out.device_type != HVD_DEVICE_CUDA || out.device_id != g_device)
        mp_die("allgather output on device type %d id %d", out.device_type, out.device_id);
    int64_t total = static_cast<int64_t>(mp_size) * (mp_size + 1) / 2;
    if (out.ndim != 2 || out.shape[0] != total || out.shape[1] != cols) mp_die("allgather shape");
    std::vector<char> got(static_cast<size_t>(total * cols) * 4);
    cuda_ok(cudaMemcpy(got.data(), out.data, got.size(), cudaMemcpyDeviceToHost), "copy");
    size_t i = 0;
    for (int r = 0; r < mp_size; ++r)
        for (int64_t row = 0; row <= r; ++row)
            for (int64_t c = 0; c < cols; ++c, ++i)
                check_close("allgather", HVD_DTYPE_INT32, got.data(), i, 1000.0 * r + 10 * row + c);
    hvd_request_release(req);
}

void test_broadcast() {
    const size_t n = 4099;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    const int32_t root = mp_size - 1;
    DeviceTensor t(n * 2);
    t.upload(host_values(HVD_DTYPE_BFLOAT16, n, mp_rank));
    hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_BFLOAT16, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask |= HVD_OP_FIELD_ROOT;
    p.root_rank = root;
    hvd_request_h req;
    if (hvd_broadcast_enqueue(mp_ctx, &d, &d, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("broadcast");
    hvd_request_release(req);
    std::vector<char> got = t.download();
    for (size_t i = 0; i < n; ++i)
        check_close("broadcast", HVD_DTYPE_BFLOAT16, got.data(), i,
                    mp_value(HVD_DTYPE_BFLOAT16, root, i));
}

// Rank r sends per (j + 1) rows to rank j, each row cols float32 values 100 r + j.
void alltoall_rows(int64_t per, int64_t cols) {
    std::vector<int32_t> splits(mp_size);
    int64_t rows = 0;
    for (int j = 0; j < mp_size; ++j)
        rows += splits[j] = static_cast<int32_t>(per * (j + 1));
    int64_t shape[2] = {rows, cols};
    std::vector<char> h(static_cast<size_t>(rows * cols) * 4);
    size_t i = 0;
    for (int j = 0; j < mp_size; ++j)
        for (int64_t k = 0; k < cols * per * (j + 1); ++k)
            mp_set(HVD_DTYPE_FLOAT32, h.data(), i++, 100.0 * mp_rank + j);
    DeviceTensor in(h.size());
    in.upload(h);
    hvd_tensor_t t = cuda_tensor(in.ptr, HVD_DTYPE_FLOAT32, 2, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask |= HVD_OP_FIELD_SPLITS;
    p.splits = splits.data();
    p.num_splits = mp_size;
    hvd_request_h req;
    if (hvd_alltoall_enqueue(mp_ctx, &t, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("alltoall");
    hvd_tensor_t out;
    if (hvd_request_output(req, 0, &out) != HVD_OK || out.device_type != HVD_DEVICE_CUDA)
        mp_die("alltoall output");
    if (out.shape[0] != static_cast<int64_t>(mp_size) * per * (mp_rank + 1))
        mp_die("alltoall rows");
    std::vector<char> got(static_cast<size_t>(out.shape[0] * cols) * 4);
    cuda_ok(cudaMemcpy(got.data(), out.data, got.size(), cudaMemcpyDeviceToHost), "copy");
    i = 0;
    for (int r = 0; r < mp_size; ++r)
        for (int64_t k = 0; k < cols * per * (mp_rank + 1); ++k)
            check_close("alltoall", HVD_DTYPE_FLOAT32, got.data(), i++, 100.0 * r + mp_rank);
    hvd_request_release(req);
}

// Rows of 2 values, and rows of 1 MiB + 4 bytes, 3 (j + 1) of them to rank j (9 MiB and more
// between ranks: several chunks on the host path).
void test_alltoall() {
    alltoall_rows(1, 2);
    alltoall_rows(3, (int64_t{1} << 18) + 1);
}

// A reduce-scatter (Average) of d0 rows of cols float32, checked against the reference.
void reducescatter_rows(int64_t d0, int64_t cols) {
    int64_t shape[2] = {d0, cols};
    const size_t n = static_cast<size_t>(d0 * cols);
    DeviceTensor in(n * 4);
    in.upload(host_values(HVD_DTYPE_FLOAT32, n, mp_rank));
    hvd_tensor_t t = cuda_tensor(in.ptr, HVD_DTYPE_FLOAT32, 2, shape);
    hvd_op_params_t p = mp_reduce_params("rs", HVD_OP_AVERAGE);
    hvd_request_h req;
    if (hvd_reducescatter_enqueue(mp_ctx, &t, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("reducescatter");
    hvd_tensor_t out;
    if (hvd_request_output(req, 0, &out) != HVD_OK || out.device_type != HVD_DEVICE_CUDA)
        mp_die("reducescatter output");
    int64_t my_rows = d0 / mp_size + (mp_rank < d0 % mp_size ? 1 : 0);
    int64_t first_row = 0;
    for (int r = 0; r < mp_rank; ++r)
        first_row += d0 / mp_size + (r < d0 % mp_size ? 1 : 0);
    if (out.shape[0] != my_rows) mp_die("reducescatter rows %lld", (long long)out.shape[0]);
    std::vector<char> got(static_cast<size_t>(my_rows * cols) * 4);
    cuda_ok(cudaMemcpy(got.data(), out.data, got.size(), cudaMemcpyDeviceToHost), "copy");
    for (size_t i = 0; i < got.size() / 4; ++i)
        check_close("reducescatter", HVD_DTYPE_FLOAT32, got.data(), i,
                    mp_reference(HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE,
                                 static_cast<size_t>(first_row * cols) + i));
    hvd_request_release(req);
}

// 2 n + 1 rows: uneven for n > 1 (the first member gets a row more); 4 n + 1 rows of 2 MiB
// (18 MiB and more: several chunks on the host path).
void test_reducescatter() {
    for (const int64_t cols : {int64_t{5}, int64_t{1} << 19})
        reducescatter_rows((cols == 5 ? 2 : 4) * mp_size + 1, cols);
}

void test_grouped_allreduce() {
    const int k = 5;
    std::vector<DeviceTensor *> ts;
    std::vector<hvd_tensor_t> descs(k);
    std::vector<const hvd_tensor_t *> ptrs(k);
    int64_t shapes[k][1];
    for (int j = 0; j < k; ++j) {
        shapes[j][0] = 10 + j;
        ts.push_back(new DeviceTensor(static_cast<size_t>(shapes[j][0]) * 8));
        ts.back()->upload(host_values(HVD_DTYPE_INT64, static_cast<size_t>(shapes[j][0]), mp_rank));
        descs[j] = cuda_tensor(ts.back()->ptr, HVD_DTYPE_INT64, 1, shapes[j]);
        ptrs[j] = &descs[j];
    }
    hvd_op_params_t p = mp_reduce_params("grouped", HVD_OP_MAX);
    hvd_request_h req;
    if (hvd_grouped_allreduce_enqueue(mp_ctx, ptrs.data(), ptrs.data(), k, &p, &req) != HVD_OK ||
        mp_wait(req) != HVD_OK)
        mp_die("grouped allreduce");
    hvd_request_release(req);
    for (int j = 0; j < k; ++j) {
        std::vector<char> got = ts[j]->download();
        for (size_t i = 0; i < got.size() / 8; ++i)
            check_close("grouped", HVD_DTYPE_INT64, got.data(), i,
                        mp_reference(HVD_DTYPE_INT64, HVD_OP_MAX, i));
        delete ts[j];
    }
}

// Allreduce `op` of d in place, its result promised on `stream`; the request completes at
// once. `what` names the op in the failure.
void allreduce_on_stream(hvd_tensor_t *d, const char *name, int32_t op, void *stream,
                         const char *what) {
    hvd_op_params_t p = mp_reduce_params(name, op);
    p.field_mask |= HVD_OP_FIELD_STREAM;
    p.stream = stream;
    hvd_request_h req;
    if (hvd_allreduce_enqueue(mp_ctx, d, d, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("%s", what);
    hvd_request_release(req);
}

// The input is written on the caller's stream and marked by a ready event; the result is read
// on that stream with no host synchronisation before it.
void test_ready_event_and_stream() {
    const size_t n = 1 << 20;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    cudaStream_t s;
    cudaEvent_t ready;
    cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    cuda_ok(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "event");
    std::vector<char> h = host_values(HVD_DTYPE_FLOAT32, n, mp_rank);
    std::vector<char> back(h.size());
    DeviceTensor t(h.size());
    cuda_ok(cudaMemcpyAsync(t.ptr, h.data(), h.size(), cudaMemcpyHostToDevice, s), "upload");
    cuda_ok(cudaEventRecord(ready, s), "record");
    hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_FLOAT32, 1, shape);
    d.field_mask |= HVD_TENSOR_FIELD_READY_EVENT;
    d.ready_event = ready;
    allreduce_on_stream(&d, "streamed", HVD_OP_SUM, s, "allreduce with a ready event and a stream");
    cuda_ok(cudaMemcpyAsync(back.data(), t.ptr, back.size(), cudaMemcpyDeviceToHost, s), "read");
    cuda_ok(cudaStreamSynchronize(s), "sync");
    for (size_t i = 0; i < n; i += 997)
        check_close("streamed", HVD_DTYPE_FLOAT32, back.data(), i,
                    mp_reference(HVD_DTYPE_FLOAT32, HVD_OP_SUM, i));
    cudaEventDestroy(ready);
    cudaStreamDestroy(s);
}

// The input is written on the caller's stream and no ready event is given: the op reads it
// after that work, as an NCCL call on the stream would, and the result is read on the stream.
void test_stream_without_ready_event() {
    const size_t n = 1 << 20;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    cudaStream_t s;
    cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    void *pinned = nullptr;  // pinned: the upload is queued, not done before the call returns
    cuda_ok(cudaMallocHost(&pinned, n * 4), "cudaMallocHost");
    std::vector<char> h = host_values(HVD_DTYPE_FLOAT32, n, mp_rank);
    std::memcpy(pinned, h.data(), h.size());
    DeviceTensor t(h.size());
    cuda_ok(cudaMemsetAsync(t.ptr, 0, h.size(), s), "memset");
    cuda_ok(cudaMemcpyAsync(t.ptr, pinned, h.size(), cudaMemcpyHostToDevice, s), "upload");
    hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_FLOAT32, 1, shape);
    allreduce_on_stream(&d, "stream.no_event", HVD_OP_SUM, s,
                        "allreduce on a stream without a ready event");
    cuda_ok(cudaMemcpyAsync(pinned, t.ptr, h.size(), cudaMemcpyDeviceToHost, s), "read");
    cuda_ok(cudaStreamSynchronize(s), "sync");
    for (size_t i = 0; i < n; i += 997)
        check_close("stream.no_event", HVD_DTYPE_FLOAT32, pinned, i,
                    mp_reference(HVD_DTYPE_FLOAT32, HVD_OP_SUM, i));
    cudaFreeHost(pinned);
    cudaStreamDestroy(s);
}

// cudaStreamPerThread names the caller thread's own stream, which the library's thread
// cannot reach: refused at enqueue on every rank alike, and nothing is left in flight.
void test_per_thread_stream_refused() {
    DeviceTensor t(64 * 4);
    int64_t shape[1] = {64};
    hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_reduce_params("per_thread_stream", HVD_OP_SUM);
    p.field_mask |= HVD_OP_FIELD_STREAM;
    p.stream = cudaStreamPerThread;
    hvd_request_h req = nullptr;
    hvd_status_t s = hvd_allreduce_enqueue(mp_ctx, &d, &d, &p, &req);
    if (s != HVD_ERR_INVALID_ARG || req != nullptr)
        mp_die("cudaStreamPerThread: status %d, expected HVD_ERR_INVALID_ARG", s);
    char why[512];
    hvd_last_error(why, sizeof why);
    if (std::strstr(why, "cudaStreamPerThread") == nullptr)
        mp_die("cudaStreamPerThread refused with '%s'", why);
}

// An op given a stream that is capturing a CUDA graph is refused at enqueue, and the capture
// stays valid (nothing of the op's was queued on the stream).
void test_capturing_stream_refused() {
    DeviceTensor t(64 * 4);
    int64_t shape[1] = {64};
    hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_FLOAT32, 1, shape);
    cudaStream_t st;
    cuda_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    hvd_op_params_t p = mp_reduce_params("capturing_stream", HVD_OP_SUM);
    p.field_mask |= HVD_OP_FIELD_STREAM;
    p.stream = st;
    cuda_ok(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
    hvd_request_h req = nullptr;
    hvd_status_t s = hvd_allreduce_enqueue(mp_ctx, &d, &d, &p, &req);
    char why[512];
    hvd_last_error(why, sizeof why);
    cudaGraph_t graph = nullptr;
    cuda_ok(cudaStreamEndCapture(st, &graph), "cudaStreamEndCapture (the capture was broken)");
    if (graph != nullptr) cuda_ok(cudaGraphDestroy(graph), "cudaGraphDestroy");
    cuda_ok(cudaStreamDestroy(st), "cudaStreamDestroy");
    if (s != HVD_ERR_UNSUPPORTED || req != nullptr)
        mp_die("a capturing stream: status %d, expected HVD_ERR_UNSUPPORTED", s);
    if (std::strstr(why, "capturing a CUDA graph") == nullptr)
        mp_die("a capturing stream refused with '%s'", why);
}

// More ops on the caller's stream than the library watches per device (256), each completing
// at once with its work still queued: the later ones wait for the oldest, and every one runs
// in order on the same tensor (the first averages the ranks' values, the rest keep them).
void test_many_streamed_ops() {
    const size_t n = 4096;
    const int ops = 300;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    cudaStream_t s;
    cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    DeviceTensor t(n * 4);
    t.upload(host_values(HVD_DTYPE_FLOAT32, n, mp_rank));
    hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_FLOAT32, 1, shape);
    for (int k = 0; k < ops; ++k) {
        char what[64];
        std::snprintf(what, sizeof what, "allreduce %d of %d on the caller's stream", k, ops);
        allreduce_on_stream(&d, "streamed.many", HVD_OP_AVERAGE, s, what);
    }
    std::vector<char> back(n * 4);
    cuda_ok(cudaMemcpyAsync(back.data(), t.ptr, back.size(), cudaMemcpyDeviceToHost, s), "read");
    cuda_ok(cudaStreamSynchronize(s), "sync");
    for (size_t i = 0; i < n; i += 31)
        check_close("streamed.many", HVD_DTYPE_FLOAT32, back.data(), i,
                    mp_reference(HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE, i));
    cudaStreamDestroy(s);
}

void test_adasum() {
    if ((mp_size & (mp_size - 1)) != 0) return;  // Adasum needs a power-of-two set
    const size_t n = 64;
    int64_t shape[1] = {static_cast<int64_t>(n)};
    DeviceTensor t(n * 4);
    std::vector<char> h(n * 4);
    for (size_t i = 0; i < n; ++i)  // the same vector on every rank: Adasum returns it
        mp_set(HVD_DTYPE_FLOAT32, h.data(), i, 1.0 + static_cast<double>(i % 5));
    t.upload(h);
    hvd_tensor_t d = cuda_tensor(t.ptr, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_reduce_params("adasum", HVD_OP_ADASUM);
    hvd_request_h req;
    if (hvd_allreduce_enqueue(mp_ctx, &d, &d, &p, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("adasum");
    hvd_request_release(req);
    std::vector<char> got = t.download();
    for (size_t i = 0; i < n; ++i)
        check_close("adasum", HVD_DTYPE_FLOAT32, got.data(), i, 1.0 + static_cast<double>(i % 5));
}

}  // namespace

int main() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("skipped: no CUDA device\n");
        return 77;
    }
    mp_init();
    if (!(hvd_features() & HVD_FEATURE_CUDA)) mp_die("CUDA devices exist but libhvd has no CUDA");
    // The NCCL run of the GPU check must not pass on the host path for want of NCCL.
    const char *expect_nccl = std::getenv("GPU_CHECK_EXPECT_NCCL");
    if (expect_nccl != nullptr && std::strcmp(expect_nccl, "1") == 0 &&
        !(hvd_features() & HVD_FEATURE_NCCL))
        mp_die(
            "GPU_CHECK_EXPECT_NCCL=1, but libhvd loaded no NCCL (HVD_NCCL_LIBRARY, "
            "libnccl.so.2): the NCCL path cannot be checked");
    const char *local = std::getenv("HVD_LOCAL_RANK");
    g_device = (local != nullptr ? std::atoi(local) : 0) % count;
    cuda_ok(cudaSetDevice(g_device), "cudaSetDevice");
    test_allreduce_every_dtype_and_op();
    test_scaling();
    test_fusion();
    test_large_allreduce();
    test_large_broadcast();
    test_join_during_large_allreduce();
    test_allgather_ragged();
    test_broadcast();
    test_alltoall();
    test_reducescatter();
    test_grouped_allreduce();
    test_ready_event_and_stream();
    test_stream_without_ready_event();
    test_per_thread_stream_refused();
    test_capturing_stream_refused();
    test_many_streamed_ops();
    test_adasum();
    std::printf("rank %d: every collective on CUDA device %d is right (%s)\n", mp_rank, g_device,
                (hvd_features() & HVD_FEATURE_NCCL) ? "NCCL loaded" : "no NCCL");
    mp_finalize();
    return 0;
}
