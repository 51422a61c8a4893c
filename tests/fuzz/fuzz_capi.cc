// SPDX-License-Identifier: Apache-2.0
// The public C API on a context of one rank, called with argument structs made of the input:
// dtypes, ndim, shapes, field masks, names, reduce ops, roots, scale factors, splits, timeouts,
// grouped counts, process sets, request queries. A tensor's data points at a buffer as large
// as its shape says whenever that size is valid and small; an input whose valid tensors would
// need more is skipped. Bad arguments must be refused with a status and a message; every
// request returned must complete within a bound, and then answers its queries.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "hvd/hvd.h"

namespace {

constexpr int64_t kMaxTensorBytes = 64 << 10;
constexpr int64_t kWaitMs = 20000;  // a request still running after this is a hang
constexpr int32_t kMaxGroup = 4;
constexpr int32_t kMaxList = 8;  // splits, set ranks, received splits

hvd_context_h g_ctx = nullptr;
hvd_process_set_h g_set = nullptr;  // a set of rank 0, made at init

[[noreturn]] void die(const char *what, hvd_status_t st) {
    char msg[512];
    hvd_last_error(msg, sizeof msg);
    std::fprintf(stderr, "fuzz_capi: %s: %s (%s)\n", what, hvd_status_name(st), msg);
    std::abort();
}

void finalize() {
    if (g_ctx) hvd_finalize(g_ctx);
    g_ctx = nullptr;
    g_set = nullptr;
}

void init() {
    hvd_unique_id_t id;
    hvd_status_t st = hvd_get_unique_id(&id);
    if (st != HVD_OK) die("hvd_get_unique_id", st);
    hvd_init_params_t ip;
    std::memset(&ip, 0, sizeof ip);
    ip.field_mask = HVD_INIT_FIELD_RANK | HVD_INIT_FIELD_UNIQUE_ID | HVD_INIT_FIELD_TIMEOUT;
    ip.rank = 0;
    ip.size = 1;
    ip.unique_id = id;
    ip.timeout_ms = 30000;
    if ((st = hvd_init(&ip, &g_ctx)) != HVD_OK) die("hvd_init", st);
    int32_t member = 0;
    if ((st = hvd_process_set_create(g_ctx, &member, 1, &g_set)) != HVD_OK)
        die("hvd_process_set_create", st);
}

// Element sizes of the dtypes; an unknown dtype is sized as the largest.
int64_t element_size(int32_t dtype) {
    static const int64_t kSizes[] = {1, 1, 2, 2, 4, 8, 2, 4, 8, 1, 2};
    return dtype >= 0 && dtype <= HVD_DTYPE_BFLOAT16 ? kSizes[dtype] : 8;
}

// A tensor with its shape and data storage.
struct Tensor {
    hvd_tensor_t t{};
    std::vector<int64_t> shape;
    std::vector<unsigned char> data;
};

// Fills a tensor from the input. Returns false when its size is valid but over the bound.
bool make_tensor(fuzz::Input &in, Tensor *x) {
    uint8_t flags = in.take<uint8_t>();
    std::memset(&x->t, 0, sizeof x->t);
    x->t.field_mask = (flags & 1) ? in.take<uint64_t>() : 0;
    x->t.dtype = (flags & 2) ? in.take<int32_t>() : in.take<uint8_t>() % 12;
    x->t.ndim = (flags & 4) ? in.take<int32_t>() : in.take<uint8_t>() % 5;
    x->t.device_type = (flags & 8) ? in.take<int32_t>() : HVD_DEVICE_CPU;
    size_t n = x->t.ndim < 0 ? 0 : x->t.ndim > HVD_MAX_NDIM ? HVD_MAX_NDIM + 1 : x->t.ndim;
    x->shape.resize(n);
    for (int64_t &d : x->shape)
        d = (flags & 16) ? in.take<int64_t>() : in.take<uint8_t>() % 9;
    x->t.shape = (flags & 32) || n > 0 ? x->shape.data() : nullptr;
    // The size the library computes: non-zero dimensions times the element size, checked.
    bool bad = x->t.ndim < 0 || x->t.ndim > HVD_MAX_NDIM;
    int64_t bytes = element_size(x->t.dtype);
    for (size_t i = 0; !bad && i < n; ++i) {
        int64_t d = x->shape[i];
        if (d < 0 || (d > 0 && __builtin_mul_overflow(bytes, d, &bytes))) bad = true;
    }
    if (!bad && bytes > kMaxTensorBytes) return false;
    x->data.assign(bad ? 8 : static_cast<size_t>(bytes), 0x3c);
    x->t.data = (flags & 64) ? nullptr : x->data.data();
    return true;
}

struct Params {
    hvd_op_params_t p{};
    std::string name;
    std::vector<int32_t> splits;
    bool null = false;
};

void make_params(fuzz::Input &in, Params *x) {
    uint8_t flags = in.take<uint8_t>();
    std::memset(&x->p, 0, sizeof x->p);
    x->null = flags & 1;
    x->p.field_mask = (flags & 2) ? in.take<uint64_t>() : in.take<uint8_t>() & 0x7f;
    x->name = in.str(HVD_MAX_NAME + 8);
    x->p.name = (flags & 4) ? nullptr : x->name.c_str();
    x->p.process_set = (flags & 8) ? g_set : nullptr;
    x->p.reduce_op = (flags & 16) ? in.take<int32_t>() : in.take<uint8_t>() % 7;
    x->p.root_rank = in.take<int8_t>();
    x->p.prescale = in.take<double>();
    x->p.postscale = in.take<double>();
    x->p.num_splits = in.take<int8_t>() % (kMaxList + 2);
    x->splits.resize(x->p.num_splits > 0 ? x->p.num_splits : 0);
    for (int32_t &s : x->splits)
        s = in.take<int32_t>();
    x->p.splits = (flags & 32) ? nullptr : x->splits.data();
    // A zero or tiny op timeout aborts the context (the op's documented fate): kept rare.
    x->p.timeout_ms = (flags & 64) ? in.take<int64_t>() : 30000;
}

// Waits for a request, reads what a caller may read from it, releases it.
void finish(fuzz::Input &in, hvd_request_h req) {
    hvd_status_t st = hvd_request_wait(req, kWaitMs);
    if (st == HVD_INPROGRESS) die("request still running (hang)", st);
    hvd_tensor_t out;
    hvd_request_output(req, in.take<int8_t>(), &out);
    hvd_request_output(req, 0, nullptr);
    int32_t n = in.take<uint8_t>() % (kMaxList + 1);
    std::vector<int32_t> splits(static_cast<size_t>(n));
    hvd_request_received_splits(req, splits.data(), n);
    int64_t value = 0;
    hvd_request_value(req, &value);
    std::vector<char> msg(in.take<uint8_t>());
    hvd_request_message(req, msg.data(), msg.size());
    if ((st = hvd_request_release(req)) != HVD_OK) die("hvd_request_release", st);
}

// A process set of ranks from the input; destroyed again when made.
void process_set(fuzz::Input &in) {
    int32_t n = in.take<uint8_t>() % (kMaxList + 2) - 1;
    std::vector<int32_t> ranks(n > 0 ? n : 0);
    for (int32_t &r : ranks)
        r = in.take<int8_t>();
    hvd_process_set_h ps = nullptr;
    if (hvd_process_set_create(g_ctx, n > 0 ? ranks.data() : nullptr, n, &ps) != HVD_OK) return;
    int32_t v = 0;
    hvd_rank(g_ctx, ps, &v);
    hvd_size(g_ctx, ps, &v);
    hvd_process_set_included(g_ctx, ps, &v);
    hvd_status_t st = hvd_process_set_destroy(g_ctx, ps);
    if (st != HVD_OK) die("hvd_process_set_destroy", st);
}

void memory(fuzz::Input &in) {
    void *p = nullptr;
    if (hvd_mem_alloc(in.take<uint16_t>(), &p) == HVD_OK) {
        if (hvd_mem_free(p) != HVD_OK) die("hvd_mem_free", HVD_ERR_INTERNAL);
        if (hvd_mem_free(p) == HVD_OK) die("hvd_mem_free of a freed pointer", HVD_OK);
    }
    int64_t local = 0;
    if (hvd_mem_free(&local) == HVD_OK) die("hvd_mem_free of a stack pointer", HVD_OK);
}

// One call. Returns false when the input's tensors are too large to back.
bool one_call(fuzz::Input &in) {
    uint8_t op = in.take<uint8_t>() % 13;
    if (op == 11) return process_set(in), true;
    if (op == 12) return memory(in), true;
    Tensor a[kMaxGroup], b[kMaxGroup];
    Params params;
    int32_t group = 1;
    if (op >= 8) group = in.take<uint8_t>() % (kMaxGroup + 2) - 1;  // -1 .. kMaxGroup
    int32_t tensors = op <= 5 ? 1 : op >= 8 ? group : 0;            // barrier and join take none
    for (int32_t i = 0; i < tensors; ++i)
        if (!make_tensor(in, &a[i]) || !make_tensor(in, &b[i])) return false;
    uint8_t flags = in.take<uint8_t>();
    make_params(in, &params);
    const hvd_op_params_t *pp = params.null ? nullptr : &params.p;
    const hvd_tensor_t *ta = (flags & 1) ? nullptr : &a[0].t;
    // In place: out is in; for allgather_into, in's rows inside out when they fit.
    const hvd_tensor_t *tb = (flags & 2) ? ta : (flags & 4) ? nullptr : &b[0].t;
    if (op == 2 && (flags & 8) && b[0].t.data && a[0].data.size() <= b[0].data.size()) {
        a[0].t.data = b[0].data.data() + (b[0].data.size() - a[0].data.size());
        tb = &b[0].t;
    }
    const hvd_tensor_t *ins[kMaxGroup], *outs[kMaxGroup];
    for (int32_t i = 0; i < kMaxGroup; ++i) {
        ins[i] = (flags & (16 << (i % 4))) ? nullptr : &a[i].t;
        outs[i] = &b[i].t;
    }
    const hvd_tensor_t *const *pins = group < 0 || (flags & 8) ? nullptr : ins;
    hvd_request_h req = nullptr;
    hvd_status_t st = HVD_OK;
    switch (op) {
        case 0:
            st = hvd_allreduce_enqueue(g_ctx, ta, tb, pp, &req);
            break;
        case 1:
            st = hvd_allgather_enqueue(g_ctx, ta, pp, &req);
            break;
        case 2:
            st = hvd_allgather_into_enqueue(g_ctx, ta, tb, pp, &req);
            break;
        case 3:
            st = hvd_broadcast_enqueue(g_ctx, ta, tb, pp, &req);
            break;
        case 4:
            st = hvd_alltoall_enqueue(g_ctx, ta, pp, &req);
            break;
        case 5:
            st = hvd_reducescatter_enqueue(g_ctx, ta, pp, &req);
            break;
        case 6:
            st = hvd_barrier_enqueue(g_ctx, pp, &req);
            break;
        case 7:
            st = hvd_join_enqueue(g_ctx, pp, &req);
            break;
        case 8:
            st = hvd_grouped_allreduce_enqueue(g_ctx, pins, (flags & 4) ? nullptr : outs, group, pp,
                                               &req);
            break;
        case 9:
            st = hvd_grouped_allgather_enqueue(g_ctx, pins, group, pp, &req);
            break;
        default:
            st = hvd_grouped_reducescatter_enqueue(g_ctx, pins, group, pp, &req);
            break;
    }
    if (st != HVD_OK) {
        char msg[64];
        if (req != nullptr) die("a refused enqueue wrote a request", st);
        if (hvd_last_error(msg, sizeof msg) == 0) die("a refused enqueue without a message", st);
        return true;
    }
    if (req == nullptr) die("an enqueue returned HVD_OK without a request", st);
    finish(in, req);
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (g_ctx == nullptr) {
        init();
        std::atexit(finalize);
    }
    fuzz::Input in(data, size);
    for (int calls = 0; calls < 4 && !in.empty(); ++calls)
        if (!one_call(in)) break;
    // An op whose own timeout expired aborts the context, as documented: start a fresh one.
    if (hvd_context_error(g_ctx) != HVD_OK) {
        finalize();
        init();
    }
    return 0;
}
