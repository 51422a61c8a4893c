// SPDX-License-Identifier: Apache-2.0
// The enqueue functions: local validation, then a Request handed to the engine.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <tuple>

#include "capi/guard.h"
#include "capi/handles.h"
#include "common/dtype.h"
#include "gpu/cuda_tensor.h"
#include "reduce/reduce.h"

using hvd::Error;
using hvd::strprintf;
using hvd::capi::guarded;
using hvd::engine::OpType;
using hvd::engine::Request;
using hvd::engine::TensorRef;

namespace {

// The fields this build honours. The ready event and the stream are for CUDA tensors only.
constexpr uint64_t kKnownTensorFields = HVD_TENSOR_FIELD_READY_EVENT;
constexpr uint64_t kKnownOpFields =
    HVD_OP_FIELD_NAME | HVD_OP_FIELD_PROCESS_SET | HVD_OP_FIELD_REDUCE_OP | HVD_OP_FIELD_SCALE |
    HVD_OP_FIELD_ROOT | HVD_OP_FIELD_SPLITS | HVD_OP_FIELD_TIMEOUT | HVD_OP_FIELD_STREAM;

[[noreturn]] void invalid(const char *fn, const std::string &what) {
    throw Error(HVD_ERR_INVALID_ARG, strprintf("%s: %s", fn, what.c_str()));
}

TensorRef read_tensor(const char *fn, const char *which, const hvd_tensor_t *t) {
    if (t == nullptr) invalid(fn, strprintf("%s tensor is NULL", which));
    if (t->field_mask & ~kKnownTensorFields)
        throw Error(
            HVD_ERR_UNSUPPORTED,
            strprintf("%s: unknown field_mask bits 0x%llx in the %s tensor", fn,
                      static_cast<unsigned long long>(t->field_mask & ~kKnownTensorFields), which));
    TensorRef ref;
    ref.device_type = t->device_type == 0 ? HVD_DEVICE_CPU : t->device_type;
    if (ref.device_type != HVD_DEVICE_CPU && ref.device_type != HVD_DEVICE_CUDA)
        throw Error(HVD_ERR_UNSUPPORTED,
                    strprintf("%s: unknown device type %d", fn, t->device_type));
    if (!hvd::dtype_valid(t->dtype)) invalid(fn, strprintf("unknown dtype %d", t->dtype));
    if (t->ndim < 0 || t->ndim > HVD_MAX_NDIM)
        invalid(fn, strprintf("ndim %d is outside [0, %d]", t->ndim, HVD_MAX_NDIM));
    if (t->ndim > 0 && t->shape == nullptr) invalid(fn, strprintf("%s shape is NULL", which));
    ref.dtype = t->dtype;
    ref.device_id = t->device_id;
    ref.data = t->data;
    ref.shape.assign(t->shape, t->shape + t->ndim);
    // Every size the engine later computes from this shape (elements, bytes, a row's bytes)
    // is a product of some of its dimensions: checked here once, they are all in range.
    const int64_t esz = static_cast<int64_t>(hvd::dtype_size(ref.dtype));
    int64_t bytes = 0;
    size_t bad = hvd::util::checked_size(ref.shape.begin(), ref.shape.end(), esz, &bytes);
    if (bad != hvd::util::kSizeFits && ref.shape[bad] < 0)
        invalid(fn, strprintf("%s dimension %zu is negative (%lld)", which, bad,
                              static_cast<long long>(ref.shape[bad])));
    if (bad != hvd::util::kSizeFits)
        invalid(fn, strprintf("%s shape %s is too large: its size in bytes (elements of %lld "
                              "bytes) overflows a 64-bit integer at dimension %zu (%lld)",
                              which, hvd::engine::shape_string(ref.shape).c_str(),
                              static_cast<long long>(esz), bad,
                              static_cast<long long>(ref.shape[bad])));
    if (t->field_mask & HVD_TENSOR_FIELD_READY_EVENT) {
        if (ref.device_type != HVD_DEVICE_CUDA)
            invalid(fn, strprintf("HVD_TENSOR_FIELD_READY_EVENT in the %s tensor, which is in "
                                  "host memory (ready events are for CUDA tensors)",
                                  which));
        ref.ready_event = t->ready_event;
    }
    if (ref.data == nullptr && bytes > 0)
        invalid(fn, strprintf("%s data is NULL for a tensor of shape %s (%lld bytes)", which,
                              hvd::engine::shape_string(ref.shape).c_str(),
                              static_cast<long long>(bytes)));
    uintptr_t end;
    if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(ref.data), static_cast<uintptr_t>(bytes),
                               &end))
        invalid(fn, strprintf("%s data at %p with %lld bytes wraps around the address space", which,
                              ref.data, static_cast<long long>(bytes)));
    return ref;
}

// Parameters after defaults; copied once.
struct OpParams {
    std::string_view name;  // the caller's string, valid for the call
    // The op's process set: the context's global set (which lives as long as the context),
    // or one a handle named, kept alive by `keep` (no reference count touched per op on the
    // global set).
    const hvd::engine::ProcessSetInfo *set = nullptr;
    hvd::engine::ProcessSetPtr keep;
    std::vector<int32_t> splits;
    bool has_splits = false;
    int32_t reduce_op = HVD_OP_SUM;
    int32_t root = 0;
    double prescale = 1.0;
    double postscale = 1.0;
    int64_t timeout_ms = 0;
    void *stream = nullptr;  // a cudaStream_t, for ops on CUDA tensors (null: the default one)
    bool has_stream = false;
};

OpParams read_params(const char *fn, hvd_context_h ctx, const hvd_op_params_t *p) {
    OpParams o;
    hvd::engine::Context &c = *ctx->ctx;
    o.timeout_ms = c.op_timeout_ms();
    o.set = c.process_sets().global().get();
    if (p == nullptr) return o;
    if (p->field_mask & ~kKnownOpFields)
        throw Error(HVD_ERR_UNSUPPORTED,
                    strprintf("%s: unknown field_mask bits 0x%llx in hvd_op_params_t", fn,
                              static_cast<unsigned long long>(p->field_mask & ~kKnownOpFields)));
    if (p->field_mask & HVD_OP_FIELD_NAME) {
        if (p->name == nullptr || p->name[0] == '\0') invalid(fn, "name is NULL or empty");
        size_t len = strnlen(p->name, HVD_MAX_NAME + 1);
        if (len > HVD_MAX_NAME)
            invalid(fn, strprintf("name is longer than %d bytes", HVD_MAX_NAME));
        o.name = std::string_view(p->name, len);
    }
    if (p->field_mask & HVD_OP_FIELD_PROCESS_SET) {
        o.keep = ctx->process_set(p->process_set, fn);
        o.set = o.keep.get();
        if (o.set->my_index < 0)
            invalid(fn,
                    strprintf("rank %d is not a member of process set %u", c.rank(), o.set->id));
    }
    if (p->field_mask & HVD_OP_FIELD_SPLITS) {
        if (p->num_splits != o.set->size())
            invalid(fn, strprintf("%d splits for a process set of %d ranks", p->num_splits,
                                  o.set->size()));
        if (p->splits == nullptr) invalid(fn, "splits is NULL");
        o.splits.assign(p->splits, p->splits + p->num_splits);
        o.has_splits = true;
        for (int32_t v : o.splits)
            if (v < 0) invalid(fn, strprintf("split %d is negative", v));
    }
    if (p->field_mask & HVD_OP_FIELD_REDUCE_OP) o.reduce_op = p->reduce_op;
    if (p->field_mask & HVD_OP_FIELD_ROOT) o.root = p->root_rank;
    if (p->field_mask & HVD_OP_FIELD_SCALE) {
        if (!std::isfinite(p->prescale) || !std::isfinite(p->postscale))
            invalid(fn, "prescale and postscale must be finite");
        o.prescale = p->prescale;
        o.postscale = p->postscale;
    }
    if (p->field_mask & HVD_OP_FIELD_TIMEOUT) o.timeout_ms = p->timeout_ms;
    if (p->field_mask & HVD_OP_FIELD_STREAM) {
        o.stream = p->stream;
        o.has_stream = true;
    }
    return o;
}

std::string device_name(const TensorRef &t) {
    return t.device_type == HVD_DEVICE_CUDA ? strprintf("CUDA device %d", t.device_id) : "host";
}

void check_same_dtype(const char *fn, const TensorRef &in, const TensorRef &out) {
    if (out.dtype != in.dtype)
        invalid(fn, strprintf("output dtype %s differs from input dtype %s",
                              hvd::dtype_name(out.dtype), hvd::dtype_name(in.dtype)));
}

void check_same_layout(const char *fn, const TensorRef &in, const TensorRef &out) {
    check_same_dtype(fn, in, out);
    if (out.shape != in.shape)
        invalid(fn, strprintf("output shape %s differs from input shape %s",
                              hvd::engine::shape_string(out.shape).c_str(),
                              hvd::engine::shape_string(in.shape).c_str()));
}

// An output of the input's size is the input (in place) or lies apart from it: a partial
// overlap would have the op read what it already wrote, on either device.
void check_apart(const char *fn, const TensorRef &in, const TensorRef &out) {
    const auto a = reinterpret_cast<uintptr_t>(in.data), b = reinterpret_cast<uintptr_t>(out.data);
    const size_t bytes = in.bytes();
    if (a != b && bytes > 0 && a < b + bytes && b < a + bytes)
        invalid(fn, strprintf("the output (%p) overlaps the input (%p, %zu bytes) without being "
                              "it: pass the same data pointer for an op in place",
                              out.data, in.data, bytes));
}

// The members of a group with caller-owned outputs (grouped allreduce) may share memory only
// where nothing is written: no member's output may overlap another member's input or output
// (a fused or chunked run would read what it already wrote). Outputs in place, and inputs
// overlapping other inputs, are fine. One pass per device over the ranges sorted by address,
// keeping the furthest ends reached by two different members, for writes and for everything.
void check_group_apart(const char *fn, const std::vector<std::shared_ptr<Request>> &members) {
    struct Range {
        int32_t device_type, device_id;
        uintptr_t begin, end;
        size_t member;
        bool written;
        const char *what;  // "input", "output" or "tensor (in place)"
    };
    std::vector<Range> ranges;
    ranges.reserve(members.size() * 2);
    for (size_t i = 0; i < members.size(); ++i) {
        const TensorRef &in = members[i]->input, &out = members[i]->output;
        const auto a = reinterpret_cast<uintptr_t>(in.data);
        const auto b = reinterpret_cast<uintptr_t>(out.data);
        if (in.bytes() > 0)
            ranges.push_back({in.device_type, in.device_id, a, a + in.bytes(), i, a == b,
                              a == b ? "tensor (in place)" : "input"});
        if (b != a && out.bytes() > 0)
            ranges.push_back(
                {out.device_type, out.device_id, b, b + out.bytes(), i, true, "output"});
    }
    std::sort(ranges.begin(), ranges.end(), [](const Range &x, const Range &y) {
        return std::tie(x.device_type, x.device_id, x.begin) <
               std::tie(y.device_type, y.device_id, y.begin);
    });
    // The two furthest ends of different members among a device's ranges so far.
    struct Reach {
        const Range *first = nullptr, *second = nullptr;
        void add(const Range &r) {
            if (first == nullptr || r.member == first->member) {
                if (first == nullptr || r.end > first->end) first = &r;
            } else if (r.end > first->end) {
                second = first;
                first = &r;
            } else if (second == nullptr || r.end > second->end) {
                second = &r;
            }
        }
        // The furthest range of a member other than m, if any.
        const Range *other_than(size_t m) const {
            return first != nullptr && first->member != m ? first : second;
        }
    } any, writes;
    for (size_t i = 0; i < ranges.size(); ++i) {
        const Range &r = ranges[i];
        if (i > 0 &&
            (r.device_type != ranges[i - 1].device_type || r.device_id != ranges[i - 1].device_id))
            any = writes = Reach{};
        const Range *o = (r.written ? any : writes).other_than(r.member);
        if (o != nullptr && o->end > r.begin) {
            const Range &a = o->member < r.member ? *o : r, &b = o->member < r.member ? r : *o;
            invalid(fn, strprintf("member %zu's %s (%p, %zu bytes) overlaps member %zu's %s (%p, "
                                  "%zu bytes), and the op writes there: members of a group may "
                                  "share only memory they read",
                                  b.member, b.what, reinterpret_cast<void *>(b.begin),
                                  static_cast<size_t>(b.end - b.begin), a.member, a.what,
                                  reinterpret_cast<void *>(a.begin),
                                  static_cast<size_t>(a.end - a.begin)));
        }
        any.add(r);
        if (r.written) writes.add(r);
    }
}

hvd::engine::Context &live_context(const char *fn, hvd_context_h ctx) {
    if (ctx == nullptr) invalid(fn, "ctx is NULL");
    hvd::engine::Context &c = *ctx->ctx;
    hvd::engine::AbortState &a = c.abort_state();
    if (a.aborted()) throw Error(a.status(), a.detail());
    return c;
}

// Adasum combines float vectors pairwise in log2(n) levels: float dtypes, power-of-two sets.
void check_adasum(const char *fn, int32_t dtype, int32_t set_size) {
    bool float_type = dtype == HVD_DTYPE_FLOAT16 || dtype == HVD_DTYPE_BFLOAT16 ||
                      dtype == HVD_DTYPE_FLOAT32 || dtype == HVD_DTYPE_FLOAT64;
    if (!float_type)
        throw Error(HVD_ERR_UNSUPPORTED,
                    strprintf("%s: Adasum needs float16, bfloat16, float32 or float64, not %s", fn,
                              hvd::dtype_name(dtype)));
    if ((set_size & (set_size - 1)) != 0)
        throw Error(HVD_ERR_UNSUPPORTED,
                    strprintf("%s: Adasum needs a power-of-two number of ranks, the set has %d", fn,
                              set_size));
}

void check_same_device(const char *fn, const TensorRef &in, const TensorRef &out) {
    if (in.device_type != out.device_type || in.device_id != out.device_id)
        invalid(fn, strprintf("the input is in %s memory and the output in %s memory",
                              device_name(in).c_str(), device_name(out).c_str()));
}

// The GPU module's checks of a CUDA input's memory; the device's identity and whether this
// rank can run it on NCCL go to the coordinator.
void check_cuda_input(const char *fn, Request &req) {
    hvd::gpu::CudaTensorInfo info =
        hvd::gpu::check_cuda_tensor(fn, "input", req.input.data, req.input.device_id,
                                    req.input.bytes(), hvd::dtype_size(req.input.dtype));
    req.meta.device_key = info.device_key;
    req.meta.nccl_ok = info.nccl_ok;
}

// A CUDA output through its own descriptor (on the input's device, checked before): memory of
// that device, where it is not the very range the input's check covered.
void check_cuda_output(const char *fn, const Request &req) {
    if (req.output.data != req.input.data || req.output.bytes() != req.input.bytes())
        hvd::gpu::check_cuda_tensor(fn, "output", req.output.data, req.output.device_id,
                                    req.output.bytes(), hvd::dtype_size(req.output.dtype));
}

// The checks every enqueue starts with; out may be NULL for library-owned outputs.
std::shared_ptr<Request> new_request(const char *fn, const hvd_tensor_t *in,
                                     const hvd_tensor_t *out, bool has_output) {
    auto req = hvd::engine::make_request();
    req->input = read_tensor(fn, "input", in);
    const bool own_output = has_output && out != in;
    if (has_output && out == in) {
        req->output = req->input;  // in place, through one descriptor: read and checked once
    } else if (own_output) {
        req->output = read_tensor(fn, "output", out);
        check_same_layout(fn, req->input, req->output);
        check_same_device(fn, req->input, req->output);
        check_apart(fn, req->input, req->output);
    }
    if (req->input.device_type == HVD_DEVICE_CUDA) {
        check_cuda_input(fn, *req);
        if (own_output) check_cuda_output(fn, *req);
    }
    return req;
}

// CUDA's handle for the per-thread default stream (cudaStreamPerThread in driver_types.h).
void *const kCudaStreamPerThread = reinterpret_cast<void *>(0x2);

// Fills in the name and deadline, enqueues and hands out a handle.
void fill_meta(const char *fn, Request &req, const OpParams &o, std::string_view name) {
    req.meta.set_id = o.set->id;
    req.meta.name.assign(name);  // into a reused request's string: no allocation
    req.meta.dtype = req.input.dtype;
    req.meta.shape = req.input.shape;
    req.meta.device_type = req.input.device_type;
    req.deadline = hvd::Deadline::after_ms_coarse(o.timeout_ms);
    if (o.has_stream) {
        if (req.input.device_type != HVD_DEVICE_CUDA)
            invalid(fn, strprintf("'%s': HVD_OP_FIELD_STREAM is only for ops on CUDA tensors",
                                  req.meta.name.c_str()));
        // cudaStreamPerThread names the calling thread's own stream, a different one on the
        // thread that queues the op's work.
        if (o.stream == kCudaStreamPerThread)
            invalid(fn, strprintf("'%s': cudaStreamPerThread names the calling thread's stream, "
                                  "which the library's thread cannot reach: pass that stream's "
                                  "own handle",
                                  req.meta.name.c_str()));
        hvd::gpu::check_not_capturing(fn, req.meta.name.c_str(), req.input.device_id, o.stream);
        req.stream = o.stream;
        req.has_stream = true;
        // Without a ready event, the inputs are what the caller queued on the stream so far.
        if (req.input.ready_event == nullptr && req.output.ready_event == nullptr) {
            try {
                req.stream_mark.record(req.input.device_id, o.stream);
            } catch (const Error &e) {
                throw Error(e.status(),
                            strprintf("%s: '%s': marking the given stream failed (it must be a "
                                      "stream of CUDA device %d, the tensor's): %s",
                                      fn, req.meta.name.c_str(), req.input.device_id, e.what()));
            }
        }
    }
}

// Names the op (o's name, else an automatic one), enqueues it and hands out a handle.
hvd_status_t submit(const char *fn, hvd::engine::Context &c, OpParams &o,
                    std::shared_ptr<Request> req, hvd_request_h *req_p) {
    if (o.name.empty())
        fill_meta(fn, *req, o, c.engine().auto_name(req->meta.type, o.set->id));
    else
        fill_meta(fn, *req, o, o.name);
    auto handle = std::make_unique<hvd_request>();
    handle->engine = c.engine_ref();
    std::string err;
    hvd_status_t s = c.engine().enqueue(req, &err);
    if (s != HVD_OK) throw Error(s, strprintf("%s: %s", fn, err.c_str()));
    handle->req = std::move(req);
    *req_p = handle.release();
    return HVD_OK;
}

// One tensor's request of each kind that can also be grouped (parameters already read).
std::shared_ptr<Request> prepare_allreduce(const char *fn, const hvd_tensor_t *in,
                                           const hvd_tensor_t *out, const OpParams &o) {
    auto req = new_request(fn, in, out, /*has_output=*/true);
    if (o.reduce_op == HVD_OP_ADASUM) check_adasum(fn, req->input.dtype, o.set->size());
    if (o.reduce_op == HVD_OP_AVERAGE && req->input.dtype == HVD_DTYPE_BOOL)
        throw Error(HVD_ERR_UNSUPPORTED,
                    strprintf("%s: Average of bool tensors is undefined; use Sum or Max (logical "
                              "or), Min or Product (logical and)",
                              fn));
    if (o.reduce_op != HVD_OP_AVERAGE && o.reduce_op != HVD_OP_ADASUM &&
        !hvd::reduce::op_supported(o.reduce_op))
        invalid(fn, strprintf("unknown reduce op %d", o.reduce_op));
    req->meta.type = OpType::kAllreduce;
    req->meta.reduce_op = o.reduce_op;
    req->meta.prescale = o.prescale;
    req->meta.postscale = o.postscale;
    return req;
}

std::shared_ptr<Request> prepare_allgather(const char *fn, const hvd_tensor_t *in) {
    auto req = new_request(fn, in, nullptr, /*has_output=*/false);
    if (req->input.shape.empty()) invalid(fn, "allgather needs a tensor of rank >= 1");
    req->meta.type = OpType::kAllgather;
    return req;
}

// Allgather into a caller-owned output: the input's dtype and dimensions beyond the first, at
// least the input's rows (the coordinator checks the exact count). An input that overlaps the
// output must be whole rows inside it: in place, where the coordinator checks that they are
// this rank's rows.
void check_gather_output(const char *fn, Request &req) {
    const TensorRef &in = req.input, &out = req.output;
    check_same_dtype(fn, in, out);
    bool same_rows = out.shape.size() == in.shape.size();
    for (size_t i = 1; same_rows && i < in.shape.size(); ++i)
        same_rows = out.shape[i] == in.shape[i];
    if (!same_rows)
        invalid(fn, strprintf("output shape %s and input shape %s differ beyond the first "
                              "dimension",
                              hvd::engine::shape_string(out.shape).c_str(),
                              hvd::engine::shape_string(in.shape).c_str()));
    if (out.shape[0] < in.shape[0])
        invalid(fn, strprintf("the output has %lld rows, fewer than the input's %lld",
                              static_cast<long long>(out.shape[0]),
                              static_cast<long long>(in.shape[0])));
    req.meta.out_rows = out.shape[0];
    const uintptr_t ib = reinterpret_cast<uintptr_t>(in.data), ie = ib + in.bytes();
    const uintptr_t ob = reinterpret_cast<uintptr_t>(out.data), oe = ob + out.bytes();
    if (ib == ie || ob == oe || ie <= ob || oe <= ib) return;  // no overlap
    const size_t row_bytes = in.bytes() / static_cast<size_t>(in.shape[0]);
    if (ib < ob || ie > oe || (ib - ob) % row_bytes != 0)
        invalid(fn,
                "the input overlaps the output without being whole rows inside it (in "
                "place, the input is this rank's rows of the output)");
    req.meta.in_row = static_cast<int64_t>((ib - ob) / row_bytes);
}

std::shared_ptr<Request> prepare_reducescatter(const char *fn, const hvd_tensor_t *in,
                                               const OpParams &o) {
    auto req = new_request(fn, in, nullptr, /*has_output=*/false);
    if (req->input.shape.empty()) invalid(fn, "reducescatter needs a tensor of rank >= 1");
    if (o.reduce_op != HVD_OP_SUM && o.reduce_op != HVD_OP_AVERAGE)
        throw Error(HVD_ERR_UNSUPPORTED,
                    strprintf("%s: reducescatter supports Sum and Average, not %s", fn,
                              hvd::reduce_op_name(o.reduce_op)));
    req->meta.type = OpType::kReducescatter;
    req->meta.reduce_op = o.reduce_op;
    req->meta.prescale = o.prescale;
    req->meta.postscale = o.postscale;
    return req;
}

// Grouped ops: members named "<group>.<i>", negotiated and completed as one unit; the handle
// is the parent, whose output i is member i's.
template <typename Prepare>
hvd_status_t submit_group(const char *fn, hvd_context_h ctx, int32_t n,
                          const hvd_op_params_t *params, hvd_request_h *req_p, OpType type,
                          Prepare &&prepare) {
    hvd::engine::Context &c = live_context(fn, ctx);
    if (req_p == nullptr) invalid(fn, "req_p is NULL");
    if (n <= 0) invalid(fn, strprintf("a group needs at least one tensor, got %d", n));
    OpParams o = read_params(fn, ctx, params);
    auto parent = hvd::engine::make_request();
    parent->meta.type = type;
    parent->meta.set_id = o.set->id;
    if (o.name.empty())
        parent->meta.name = c.engine().auto_name(type, o.set->id);
    else
        parent->meta.name.assign(o.name);
    parent->deadline = hvd::Deadline::after_ms(o.timeout_ms);
    // "<group>.<i>", built in one string (a printf per member was measurable on a 256-member
    // group).
    std::string member_name = parent->meta.name + '.';
    const size_t stem = member_name.size();
    for (int32_t i = 0; i < n; ++i) {
        std::shared_ptr<Request> m = prepare(i, o);
        char digits[16];
        std::to_chars_result end = std::to_chars(digits, digits + sizeof digits, i);
        member_name.resize(stem);
        member_name.append(digits, end.ptr);
        fill_meta(fn, *m, o, member_name);
        m->meta.group = parent->meta.name;
        m->meta.group_size = n;
        m->parent = parent;
        parent->members.push_back(std::move(m));
    }
    if (type == OpType::kAllreduce) check_group_apart(fn, parent->members);
    auto handle = std::make_unique<hvd_request>();
    handle->req = parent;
    handle->engine = c.engine_ref();
    std::string err;
    hvd_status_t s = c.engine().enqueue_group(parent->members, &err);
    if (s != HVD_OK) throw Error(s, strprintf("%s: %s", fn, err.c_str()));
    *req_p = handle.release();
    return HVD_OK;
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_allreduce_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                           const hvd_tensor_t *out, const hvd_op_params_t *params,
                                           hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_allreduce_enqueue";
    return guarded(fn, [&] {
        hvd::engine::Context &c = live_context(fn, ctx);
        if (req_p == nullptr) invalid(fn, "req_p is NULL");
        OpParams o = read_params(fn, ctx, params);
        return submit(fn, c, o, prepare_allreduce(fn, in, out, o), req_p);
    });
}

HVD_API hvd_status_t hvd_allgather_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                           const hvd_op_params_t *params,
                                           hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_allgather_enqueue";
    return guarded(fn, [&] {
        hvd::engine::Context &c = live_context(fn, ctx);
        if (req_p == nullptr) invalid(fn, "req_p is NULL");
        OpParams o = read_params(fn, ctx, params);
        return submit(fn, c, o, prepare_allgather(fn, in), req_p);
    });
}

HVD_API hvd_status_t hvd_allgather_into_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                                const hvd_tensor_t *out,
                                                const hvd_op_params_t *params,
                                                hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_allgather_into_enqueue";
    return guarded(fn, [&] {
        hvd::engine::Context &c = live_context(fn, ctx);
        if (req_p == nullptr) invalid(fn, "req_p is NULL");
        OpParams o = read_params(fn, ctx, params);
        auto req = prepare_allgather(fn, in);
        req->output = read_tensor(fn, "output", out);
        check_same_device(fn, req->input, req->output);
        if (req->output.device_type == HVD_DEVICE_CUDA) check_cuda_output(fn, *req);
        check_gather_output(fn, *req);
        return submit(fn, c, o, req, req_p);
    });
}

HVD_API hvd_status_t hvd_broadcast_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                           const hvd_tensor_t *out, const hvd_op_params_t *params,
                                           hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_broadcast_enqueue";
    return guarded(fn, [&] {
        hvd::engine::Context &c = live_context(fn, ctx);
        if (req_p == nullptr) invalid(fn, "req_p is NULL");
        auto req = new_request(fn, in, out, /*has_output=*/true);
        OpParams o = read_params(fn, ctx, params);
        if (o.root < 0 || o.root >= o.set->size())
            invalid(fn, strprintf("root rank %d is outside [0, %d)", o.root, o.set->size()));
        req->meta.type = OpType::kBroadcast;
        req->meta.root = o.root;
        return submit(fn, c, o, req, req_p);
    });
}

HVD_API hvd_status_t hvd_alltoall_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                          const hvd_op_params_t *params,
                                          hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_alltoall_enqueue";
    return guarded(fn, [&] {
        hvd::engine::Context &c = live_context(fn, ctx);
        if (req_p == nullptr) invalid(fn, "req_p is NULL");
        auto req = new_request(fn, in, nullptr, /*has_output=*/false);
        if (req->input.shape.empty()) invalid(fn, "alltoall needs a tensor of rank >= 1");
        OpParams o = read_params(fn, ctx, params);
        int64_t d0 = req->input.shape[0];
        int32_t n = o.set->size();
        if (!o.has_splits) {
            if (d0 % n != 0)
                invalid(fn, strprintf("first dimension %lld does not divide evenly among %d "
                                      "ranks; pass splits",
                                      static_cast<long long>(d0), n));
            // Splits are int32 (hvd_op_params_t, hvd_request_received_splits, the wire).
            if (d0 / n > INT32_MAX)
                invalid(fn, strprintf("the even split of first dimension %lld among %d ranks "
                                      "is %lld rows per rank, more than a split holds (%d)",
                                      static_cast<long long>(d0), n, static_cast<long long>(d0 / n),
                                      INT32_MAX));
            o.splits.assign(static_cast<size_t>(n), static_cast<int32_t>(d0 / n));
        }
        int64_t sum = 0;
        for (int32_t v : o.splits)
            sum += v;
        if (sum > d0)
            invalid(fn, strprintf("the splits add up to %lld rows, the tensor has %lld",
                                  static_cast<long long>(sum), static_cast<long long>(d0)));
        req->meta.type = OpType::kAlltoall;
        req->meta.splits = o.splits;
        return submit(fn, c, o, req, req_p);
    });
}

HVD_API hvd_status_t hvd_reducescatter_enqueue(hvd_context_h ctx, const hvd_tensor_t *in,
                                               const hvd_op_params_t *params,
                                               hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_reducescatter_enqueue";
    return guarded(fn, [&] {
        hvd::engine::Context &c = live_context(fn, ctx);
        if (req_p == nullptr) invalid(fn, "req_p is NULL");
        OpParams o = read_params(fn, ctx, params);
        return submit(fn, c, o, prepare_reducescatter(fn, in, o), req_p);
    });
}

HVD_API hvd_status_t hvd_grouped_allreduce_enqueue(hvd_context_h ctx,
                                                   const hvd_tensor_t *const *ins,
                                                   const hvd_tensor_t *const *outs, int32_t n,
                                                   const hvd_op_params_t *params,
                                                   hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_grouped_allreduce_enqueue";
    return guarded(fn, [&] {
        if (ins == nullptr || outs == nullptr) invalid(fn, "ins or outs is NULL");
        return submit_group(fn, ctx, n, params, req_p, OpType::kAllreduce,
                            [&](int32_t i, const OpParams &o) {
                                return prepare_allreduce(fn, ins[i], outs[i], o);
                            });
    });
}

HVD_API hvd_status_t hvd_grouped_allgather_enqueue(hvd_context_h ctx,
                                                   const hvd_tensor_t *const *ins, int32_t n,
                                                   const hvd_op_params_t *params,
                                                   hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_grouped_allgather_enqueue";
    return guarded(fn, [&] {
        if (ins == nullptr) invalid(fn, "ins is NULL");
        return submit_group(
            fn, ctx, n, params, req_p, OpType::kAllgather,
            [&](int32_t i, const OpParams &) { return prepare_allgather(fn, ins[i]); });
    });
}

HVD_API hvd_status_t hvd_grouped_reducescatter_enqueue(hvd_context_h ctx,
                                                       const hvd_tensor_t *const *ins, int32_t n,
                                                       const hvd_op_params_t *params,
                                                       hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_grouped_reducescatter_enqueue";
    return guarded(fn, [&] {
        if (ins == nullptr) invalid(fn, "ins is NULL");
        return submit_group(
            fn, ctx, n, params, req_p, OpType::kReducescatter,
            [&](int32_t i, const OpParams &o) { return prepare_reducescatter(fn, ins[i], o); });
    });
}

HVD_API hvd_status_t hvd_barrier_enqueue(hvd_context_h ctx, const hvd_op_params_t *params,
                                         hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_barrier_enqueue";
    return guarded(fn, [&] {
        hvd::engine::Context &c = live_context(fn, ctx);
        if (req_p == nullptr) invalid(fn, "req_p is NULL");
        OpParams o = read_params(fn, ctx, params);
        auto req = hvd::engine::make_request();
        req->meta.type = OpType::kBarrier;
        return submit(fn, c, o, req, req_p);
    });
}

HVD_API hvd_status_t hvd_join_enqueue(hvd_context_h ctx, const hvd_op_params_t *params,
                                      hvd_request_h *req_p) noexcept {
    const char *fn = "hvd_join_enqueue";
    return guarded(fn, [&] {
        hvd::engine::Context &c = live_context(fn, ctx);
        if (req_p == nullptr) invalid(fn, "req_p is NULL");
        OpParams o = read_params(fn, ctx, params);
        auto req = hvd::engine::make_request();
        req->meta.type = OpType::kJoin;
        return submit(fn, c, o, req, req_p);
    });
}

}  // extern "C"
