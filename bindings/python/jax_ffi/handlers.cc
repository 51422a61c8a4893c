// SPDX-License-Identifier: Apache-2.0
// hvd.jax's XLA FFI handlers (CPU): each enqueues one libhvd collective on XLA's buffers and
// returns a future that the completer settles. Names, process sets and every other parameter
// arrive as attributes fixed when the function was traced (hvd/jax/_ffi.py).

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "completer.h"
#include "op_registry.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace hvd_jax {
namespace {

bool hvd_dtype_of(ffi::DataType t, int32_t *code) {
    switch (t) {
        case ffi::DataType::PRED:
            *code = HVD_DTYPE_BOOL;
            return true;
        case ffi::DataType::U8:
            *code = HVD_DTYPE_UINT8;
            return true;
        case ffi::DataType::S8:
            *code = HVD_DTYPE_INT8;
            return true;
        case ffi::DataType::U16:
            *code = HVD_DTYPE_UINT16;
            return true;
        case ffi::DataType::S16:
            *code = HVD_DTYPE_INT16;
            return true;
        case ffi::DataType::S32:
            *code = HVD_DTYPE_INT32;
            return true;
        case ffi::DataType::S64:
            *code = HVD_DTYPE_INT64;
            return true;
        case ffi::DataType::F16:
            *code = HVD_DTYPE_FLOAT16;
            return true;
        case ffi::DataType::BF16:
            *code = HVD_DTYPE_BFLOAT16;
            return true;
        case ffi::DataType::F32:
            *code = HVD_DTYPE_FLOAT32;
            return true;
        case ffi::DataType::F64:
            *code = HVD_DTYPE_FLOAT64;
            return true;
        default:
            return false;
    }
}

size_t element_size(int32_t code) {
    switch (code) {
        case HVD_DTYPE_INT64:
        case HVD_DTYPE_FLOAT64:
            return 8;
        case HVD_DTYPE_INT32:
        case HVD_DTYPE_FLOAT32:
            return 4;
        case HVD_DTYPE_UINT16:
        case HVD_DTYPE_INT16:
        case HVD_DTYPE_FLOAT16:
        case HVD_DTYPE_BFLOAT16:
            return 2;
        default:
            return 1;
    }
}

size_t byte_size(const hvd_tensor_t &t) {
    size_t n = element_size(t.dtype);
    for (int32_t i = 0; i < t.ndim; ++i)
        n *= static_cast<size_t>(t.shape[i]);
    return n;
}

// A libhvd description of an XLA buffer (the shape points into the buffer's dimensions,
// which outlive the enqueue that copies them).
bool describe(const ffi::AnyBuffer &b, hvd_tensor_t *t) {
    *t = hvd_tensor_t{};
    t->data = b.untyped_data();
    t->ndim = static_cast<int32_t>(b.dimensions().size());
    t->shape = b.dimensions().begin();
    t->device_type = HVD_DEVICE_CPU;
    return hvd_dtype_of(b.element_type(), &t->dtype);
}

ffi::Future failed(const std::string &text) {
    ffi::Promise promise;
    ffi::Future future(promise);
    promise.SetError(ffi::Error(ffi::ErrorCode::kInternal, text));
    return future;
}

std::string last_error() {
    char buf[2048];
    size_t n = hvd_last_error(buf, sizeof(buf));
    return std::string(buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
}

// One op's context and parameters, or the error text that stops it.
struct Op {
    Op() = default;
    Op(const Op &) = delete;  // params.name points into name
    Op &operator=(const Op &) = delete;
    std::string what;  // "allreduce 'allreduce.jit.3'"
    std::string name;
    hvd_context_h ctx = nullptr;
    hvd_op_params_t params{};
    std::string error;
};

// Fills op for one call; false (op.error says why) when it cannot run.
bool start(Op &op, const char *kind, std::string_view name, int64_t ps_id) {
    op.name = std::string(name);
    op.what = std::string(kind) + " '" + op.name + "'";
    op.ctx = hvd_native::live_context();
    if (op.ctx == nullptr) {
        op.error = error_text(HVD_ERR_NOT_READY, op.what,
                              "Horovod has not been initialized; use hvd.init().", true);
        return false;
    }
    hvd_process_set_h ps = nullptr;
    if (!hvd_native::process_set_of(ps_id, &ps)) {
        op.error = error_text(HVD_ERR_INVALID_ARG, op.what,
                              "process set " + std::to_string(ps_id) +
                                  " is not registered in this hvd.init (trace the function "
                                  "again after registering it)",
                              true);
        return false;
    }
    op.params.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_PROCESS_SET;
    op.params.name = op.name.c_str();
    op.params.process_set = ps;
    return true;
}

void set_reduce(Op &op, int32_t reduce_op, double prescale, double postscale) {
    op.params.field_mask |= HVD_OP_FIELD_REDUCE_OP | HVD_OP_FIELD_SCALE;
    op.params.reduce_op = reduce_op;
    op.params.prescale = prescale;
    op.params.postscale = postscale;
}

// Hands an enqueued request to the completer; an enqueue that failed fails the future.
ffi::Future submit(const Op &op, hvd_status_t status, hvd_request_h req, FinishFn finish) {
    if (status != HVD_OK) return failed(error_text(status, op.what, last_error(), true));
    ffi::Promise promise;
    ffi::Future future(promise);
    complete(req, std::move(promise), op.what, std::move(finish));
    return future;
}

ffi::Future bad_dtype(const Op &op, ffi::DataType t) {
    return failed(error_text(
        HVD_ERR_UNSUPPORTED, op.what,
        "XLA element type " + std::to_string(static_cast<int>(t)) + " has no libhvd dtype", true));
}

// Copies output 0 of a finished request (library-owned) into out, which must have its size.
FinishFn copy_output(ffi::AnyBuffer out) {
    return [out](hvd_request_h req) -> std::string {
        hvd_tensor_t t{};
        if (hvd_request_output(req, 0, &t) != HVD_OK) return "no output";
        size_t n = byte_size(t);
        if (n != out.size_bytes()) {
            return "the result has " + std::to_string(n) + " bytes where " +
                   std::to_string(out.size_bytes()) +
                   " were expected when the function was traced (another rank's shape "
                   "changed since: trace it again)";
        }
        if (n != 0) std::memcpy(out.untyped_data(), t.data, n);
        return std::string();
    };
}

// Copies output i of a finished request into outs[i] (grouped allgather, reducescatter).
FinishFn copy_outputs(std::vector<ffi::AnyBuffer> outs) {
    return [outs](hvd_request_h req) -> std::string {
        for (size_t i = 0; i < outs.size(); ++i) {
            hvd_tensor_t t{};
            if (hvd_request_output(req, static_cast<int32_t>(i), &t) != HVD_OK)
                return "no output " + std::to_string(i);
            size_t n = byte_size(t);
            if (n != outs[i].size_bytes()) {
                return "result " + std::to_string(i) + " has " + std::to_string(n) +
                       " bytes where " + std::to_string(outs[i].size_bytes()) +
                       " were expected when the function was traced (another rank's shape "
                       "changed since: trace it again)";
            }
            if (n != 0) std::memcpy(outs[i].untyped_data(), t.data, n);
        }
        return std::string();
    };
}

ffi::Future AllreduceImpl(ffi::RemainingArgs ins, ffi::RemainingRets outs, std::string_view name,
                          int32_t reduce_op, double prescale, double postscale, int64_t ps) {
    Op op;
    if (!start(op, ins.size() == 1 ? "allreduce" : "grouped_allreduce", name, ps))
        return failed(op.error);
    set_reduce(op, reduce_op, prescale, postscale);
    size_t n = ins.size();
    std::vector<hvd_tensor_t> in(n), out(n);
    std::vector<const hvd_tensor_t *> in_p(n), out_p(n);
    for (size_t i = 0; i < n; ++i) {
        ffi::AnyBuffer a = *ins.get<ffi::AnyBuffer>(i);
        ffi::AnyBuffer r = **outs.get<ffi::AnyBuffer>(i);
        if (!describe(a, &in[i]) || !describe(r, &out[i])) return bad_dtype(op, a.element_type());
        in_p[i] = &in[i];
        out_p[i] = &out[i];
    }
    hvd_request_h req = nullptr;
    hvd_status_t st =
        n == 1 ? hvd_allreduce_enqueue(op.ctx, &in[0], &out[0], &op.params, &req)
               : hvd_grouped_allreduce_enqueue(op.ctx, in_p.data(), out_p.data(),
                                               static_cast<int32_t>(n), &op.params, &req);
    return submit(op, st, req, nullptr);
}

ffi::Future AllgatherImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, std::string_view name,
                          int64_t ps) {
    Op op;
    if (!start(op, "allgather", name, ps)) return failed(op.error);
    hvd_tensor_t in, out;
    if (!describe(x, &in) || !describe(*y, &out)) return bad_dtype(op, x.element_type());
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_allgather_into_enqueue(op.ctx, &in, &out, &op.params, &req);
    return submit(op, st, req, nullptr);
}

ffi::Future BroadcastImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, std::string_view name,
                          int32_t root, int64_t ps) {
    Op op;
    if (!start(op, "broadcast", name, ps)) return failed(op.error);
    op.params.field_mask |= HVD_OP_FIELD_ROOT;
    op.params.root_rank = root;
    hvd_tensor_t in, out;
    if (!describe(x, &in) || !describe(*y, &out)) return bad_dtype(op, x.element_type());
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_broadcast_enqueue(op.ctx, &in, &out, &op.params, &req);
    return submit(op, st, req, nullptr);
}

ffi::Future AlltoallImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, std::string_view name,
                         int64_t ps, ffi::Span<const int32_t> splits,
                         ffi::Span<const int32_t> received) {
    Op op;
    if (!start(op, "alltoall", name, ps)) return failed(op.error);
    std::vector<int32_t> sent(splits.begin(), splits.end());
    if (!sent.empty()) {
        op.params.field_mask |= HVD_OP_FIELD_SPLITS;
        op.params.splits = sent.data();
        op.params.num_splits = static_cast<int32_t>(sent.size());
    }
    hvd_tensor_t in;
    if (!describe(x, &in)) return bad_dtype(op, x.element_type());
    ffi::AnyBuffer out = *y;
    std::vector<int32_t> expected(received.begin(), received.end());
    FinishFn copy = copy_output(out);
    FinishFn finish = [copy, expected](hvd_request_h req) -> std::string {
        std::vector<int32_t> got(expected.size());
        if (hvd_request_received_splits(req, got.data(), static_cast<int32_t>(got.size())) !=
                HVD_OK ||
            got != expected) {
            return "the rows received from each rank differ from those exchanged when the "
                   "function was traced (another rank's splits changed since: trace it again)";
        }
        return copy(req);
    };
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_alltoall_enqueue(op.ctx, &in, &op.params, &req);
    return submit(op, st, req, finish);
}

ffi::Future ReducescatterImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                              std::string_view name, int32_t reduce_op, double prescale,
                              double postscale, int64_t ps) {
    Op op;
    if (!start(op, "reducescatter", name, ps)) return failed(op.error);
    set_reduce(op, reduce_op, prescale, postscale);
    hvd_tensor_t in;
    if (!describe(x, &in)) return bad_dtype(op, x.element_type());
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_reducescatter_enqueue(op.ctx, &in, &op.params, &req);
    return submit(op, st, req, copy_output(*y));
}

// Grouped allgather (reduce_op < 0) or grouped reducescatter: one request, output i from its
// member i.
ffi::Future GroupedSizedImpl(ffi::RemainingArgs ins, ffi::RemainingRets outs, std::string_view name,
                             int32_t reduce_op, double prescale, double postscale, int64_t ps) {
    Op op;
    bool gather = reduce_op < 0;
    if (!start(op, gather ? "grouped_allgather" : "grouped_reducescatter", name, ps))
        return failed(op.error);
    if (!gather) set_reduce(op, reduce_op, prescale, postscale);
    size_t n = ins.size();
    std::vector<hvd_tensor_t> in(n);
    std::vector<const hvd_tensor_t *> in_p(n);
    std::vector<ffi::AnyBuffer> results;
    for (size_t i = 0; i < n; ++i) {
        ffi::AnyBuffer a = *ins.get<ffi::AnyBuffer>(i);
        if (!describe(a, &in[i])) return bad_dtype(op, a.element_type());
        in_p[i] = &in[i];
        results.push_back(**outs.get<ffi::AnyBuffer>(i));
    }
    hvd_request_h req = nullptr;
    int32_t count = static_cast<int32_t>(n);
    hvd_status_t st =
        gather ? hvd_grouped_allgather_enqueue(op.ctx, in_p.data(), count, &op.params, &req)
               : hvd_grouped_reducescatter_enqueue(op.ctx, in_p.data(), count, &op.params, &req);
    return submit(op, st, req, copy_outputs(std::move(results)));
}

}  // namespace
}  // namespace hvd_jax

// The handlers are the library's exports (hvd.jax registers them by name).
#pragma GCC visibility push(default)
// clang-format off
XLA_FFI_DEFINE_HANDLER_SYMBOL(HvdJaxAllreduce, hvd_jax::AllreduceImpl,
    ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attr<std::string_view>("name")
        .Attr<int32_t>("op").Attr<double>("prescale").Attr<double>("postscale")
        .Attr<int64_t>("process_set"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(HvdJaxAllgather, hvd_jax::AllgatherImpl,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<std::string_view>("name")
        .Attr<int64_t>("process_set"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(HvdJaxBroadcast, hvd_jax::BroadcastImpl,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<std::string_view>("name")
        .Attr<int32_t>("root").Attr<int64_t>("process_set"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(HvdJaxAlltoall, hvd_jax::AlltoallImpl,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<std::string_view>("name")
        .Attr<int64_t>("process_set").Attr<ffi::Span<const int32_t>>("splits")
        .Attr<ffi::Span<const int32_t>>("received"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(HvdJaxReducescatter, hvd_jax::ReducescatterImpl,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<std::string_view>("name")
        .Attr<int32_t>("op").Attr<double>("prescale").Attr<double>("postscale")
        .Attr<int64_t>("process_set"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(HvdJaxGroupedSized, hvd_jax::GroupedSizedImpl,
    ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attr<std::string_view>("name")
        .Attr<int32_t>("op").Attr<double>("prescale").Attr<double>("postscale")
        .Attr<int64_t>("process_set"));
// clang-format on
#pragma GCC visibility pop
