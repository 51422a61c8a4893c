// SPDX-License-Identifier: Apache-2.0
#include "kernel_util.h"

#include <cstring>
#include <utility>

#include "op_registry.h"
#include "request_completer.h"

namespace hvd_tf {

namespace {

bool hvd_dtype_of(TF_DataType t, int32_t *code) {
    switch (t) {
        case TF_UINT8:
            *code = HVD_DTYPE_UINT8;
            return true;
        case TF_INT8:
            *code = HVD_DTYPE_INT8;
            return true;
        case TF_UINT16:
            *code = HVD_DTYPE_UINT16;
            return true;
        case TF_INT16:
            *code = HVD_DTYPE_INT16;
            return true;
        case TF_INT32:
            *code = HVD_DTYPE_INT32;
            return true;
        case TF_INT64:
            *code = HVD_DTYPE_INT64;
            return true;
        case TF_HALF:
            *code = HVD_DTYPE_FLOAT16;
            return true;
        case TF_BFLOAT16:
            *code = HVD_DTYPE_BFLOAT16;
            return true;
        case TF_FLOAT:
            *code = HVD_DTYPE_FLOAT32;
            return true;
        case TF_DOUBLE:
            *code = HVD_DTYPE_FLOAT64;
            return true;
        case TF_BOOL:
            *code = HVD_DTYPE_BOOL;
            return true;
        default:
            return false;
    }
}

TF_DataType tf_dtype_of(int32_t code) {
    switch (code) {
        case HVD_DTYPE_UINT8:
            return TF_UINT8;
        case HVD_DTYPE_INT8:
            return TF_INT8;
        case HVD_DTYPE_UINT16:
            return TF_UINT16;
        case HVD_DTYPE_INT16:
            return TF_INT16;
        case HVD_DTYPE_INT32:
            return TF_INT32;
        case HVD_DTYPE_INT64:
            return TF_INT64;
        case HVD_DTYPE_FLOAT16:
            return TF_HALF;
        case HVD_DTYPE_BFLOAT16:
            return TF_BFLOAT16;
        case HVD_DTYPE_FLOAT32:
            return TF_FLOAT;
        case HVD_DTYPE_FLOAT64:
            return TF_DOUBLE;
        default:
            return TF_BOOL;
    }
}

// Horovod's mapping of its statuses to TensorFlow's error codes.
TF_Code tf_code_of(hvd_status_t status) {
    switch (status) {
        case HVD_ERR_MISMATCH:
        case HVD_ERR_NOT_READY:
            return TF_FAILED_PRECONDITION;
        case HVD_ERR_INVALID_ARG:
            return TF_INVALID_ARGUMENT;
        case HVD_ERR_UNSUPPORTED:
            return TF_UNIMPLEMENTED;
        case HVD_ERR_ABORTED:
        case HVD_ERR_PEER_FAILED:
            return TF_ABORTED;
        case HVD_ERR_TIMED_OUT:
            return TF_DEADLINE_EXCEEDED;
        case HVD_ERR_NO_MEMORY:
            return TF_RESOURCE_EXHAUSTED;
        default:
            return TF_UNKNOWN;
    }
}

std::string string_attr(TF_OpKernelConstruction *c, const char *name, TF_Status *s) {
    int32_t list_size = 0, total = 0;
    TF_OpKernelConstruction_GetAttrSize(c, name, &list_size, &total, s);
    if (TF_GetCode(s) != TF_OK || total <= 0) return std::string();
    std::string value(static_cast<size_t>(total), '\0');
    TF_OpKernelConstruction_GetAttrString(c, name, &value[0], value.size(), s);
    return TF_GetCode(s) == TF_OK ? value : std::string();
}

size_t byte_size(const hvd_tensor_t &t) {
    size_t n = 1;
    for (int32_t i = 0; i < t.ndim; ++i)
        n *= static_cast<size_t>(t.shape[i]);
    return n * TF_DataTypeSize(tf_dtype_of(t.dtype));
}

}  // namespace

std::string last_error() {
    char buf[2048];
    size_t n = hvd_last_error(buf, sizeof(buf));
    return std::string(buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
}

KernelAttrs *read_attrs(TF_OpKernelConstruction *c, const char *kind) {
    auto *a = new KernelAttrs;
    a->kind = kind;
    TF_Status *s = TF_NewStatus();
    if (TF_OpKernelConstruction_HasAttr(c, "process_set", s))
        TF_OpKernelConstruction_GetAttrInt64(c, "process_set", &a->process_set, s);
    if (TF_OpKernelConstruction_HasAttr(c, "reduce_op", s))
        TF_OpKernelConstruction_GetAttrInt32(c, "reduce_op", &a->reduce_op, s);
    if (TF_OpKernelConstruction_HasAttr(c, "prescale", s)) {
        float pre = 1.0f, post = 1.0f;
        TF_OpKernelConstruction_GetAttrFloat(c, "prescale", &pre, s);
        TF_OpKernelConstruction_GetAttrFloat(c, "postscale", &post, s);
        a->prescale = pre;
        a->postscale = post;
    }
    if (TF_OpKernelConstruction_HasAttr(c, "root_rank", s))
        TF_OpKernelConstruction_GetAttrInt32(c, "root_rank", &a->root_rank, s);
    std::string name = string_attr(c, "op_name", s);
    TF_Bool use_node_name = false;
    if (name.empty() && TF_OpKernelConstruction_HasAttr(c, "use_node_name", s))
        TF_OpKernelConstruction_GetAttrBool(c, "use_node_name", &use_node_name, s);
    if (name.empty() && use_node_name) {
        TF_StringView node = TF_OpKernelConstruction_GetName(c);
        name.assign(node.data, node.len);
    }
    if (!name.empty()) a->name = a->kind + "." + name;
    if (TF_GetCode(s) != TF_OK) TF_OpKernelConstruction_Failure(c, s);
    TF_DeleteStatus(s);
    return a;
}

Done::Done(TF_AsyncOpKernelDoneCallback *cb)
    : fn_(new std::function<void()>(std::move(*reinterpret_cast<std::function<void()> *>(cb)))) {}

void Done::run() {
    std::unique_ptr<std::function<void()>> fn = std::move(fn_);
    if (fn)
        TF_RunAsyncOpKernelDoneCallback(reinterpret_cast<TF_AsyncOpKernelDoneCallback *>(fn.get()));
}

Call::~Call() {
    for (TF_Tensor *t : tensors)
        TF_DeleteTensor(t);
}

void Call::fail(hvd_status_t status, const std::string &detail) {
    int32_t rank = -1;
    if (hvd != nullptr) hvd_rank(hvd, nullptr, &rank);
    std::string text = "hvd.tensorflow " + attrs.kind;
    if (!attrs.name.empty()) text += " '" + attrs.name + "'";
    if (rank >= 0) text += " on rank " + std::to_string(rank);
    text += ": " + std::string(hvd_status_name(status)) + ": " + detail;
    TF_Status *s = TF_NewStatus();
    TF_SetStatus(s, tf_code_of(status), text.c_str());
    TF_OpKernelContext_Failure(ctx, s);
    TF_DeleteStatus(s);
}

bool Call::start() {
    hvd = hvd_native::live_context();
    if (hvd == nullptr) {
        fail(HVD_ERR_NOT_READY, "Horovod has not been initialized; use hvd.init().");
        return false;
    }
    hvd_process_set_h ps = nullptr;
    if (!hvd_native::process_set_of(attrs.process_set, &ps)) {
        fail(HVD_ERR_INVALID_ARG, "process set " + std::to_string(attrs.process_set) +
                                      " is not registered in this hvd.init");
        return false;
    }
    params.field_mask =
        HVD_OP_FIELD_PROCESS_SET | HVD_OP_FIELD_REDUCE_OP | HVD_OP_FIELD_SCALE | HVD_OP_FIELD_ROOT;
    params.process_set = ps;
    params.reduce_op = attrs.reduce_op;
    params.prescale = attrs.prescale;
    params.postscale = attrs.postscale;
    params.root_rank = attrs.root_rank;
    if (!attrs.name.empty()) {
        params.field_mask |= HVD_OP_FIELD_NAME;
        params.name = attrs.name.c_str();
    }
    return true;
}

bool Call::input(int i, hvd_tensor_t *t) {
    TF_Status *s = TF_NewStatus();
    TF_Tensor *tensor = nullptr;
    TF_GetInput(ctx, i, &tensor, s);
    bool ok = TF_GetCode(s) == TF_OK && tensor != nullptr;
    TF_DeleteStatus(s);
    if (!ok) {
        fail(HVD_ERR_INVALID_ARG, "input " + std::to_string(i) + " is not readable");
        return false;
    }
    tensors.push_back(tensor);
    *t = hvd_tensor_t{};
    if (!hvd_dtype_of(TF_TensorType(tensor), &t->dtype)) {
        fail(HVD_ERR_UNSUPPORTED,
             "TensorFlow dtype " + std::to_string(TF_TensorType(tensor)) + " has no libhvd dtype");
        return false;
    }
    shapes.emplace_back(static_cast<size_t>(TF_NumDims(tensor)));
    for (size_t d = 0; d < shapes.back().size(); ++d)
        shapes.back()[d] = TF_Dim(tensor, static_cast<int>(d));
    t->data = TF_TensorData(tensor);
    t->ndim = static_cast<int32_t>(shapes.back().size());
    t->shape = shapes.back().data();
    t->device_type = HVD_DEVICE_CPU;
    return true;
}

bool Call::allocated(int i, TF_Tensor *out, TF_Status *s) {
    bool ok = TF_GetCode(s) == TF_OK && out != nullptr;
    if (!ok) fail(HVD_ERR_NO_MEMORY, "output " + std::to_string(i) + ": " + TF_Message(s));
    TF_DeleteStatus(s);
    return ok;
}

bool Call::output_like(int out_index, const hvd_tensor_t &in, hvd_tensor_t *t) {
    TF_Status *s = TF_NewStatus();
    int forwarded = -1;
    int candidate = out_index;
    TF_Tensor *out = TF_ForwardInputOrAllocateOutput(ctx, &candidate, 1, out_index, in.shape,
                                                     in.ndim, &forwarded, s);
    if (!allocated(out_index, out, s)) return false;
    tensors.push_back(out);
    *t = in;
    t->data = TF_TensorData(out);
    return true;
}

bool Call::output_bytes(int i, TF_DataType dtype, const int64_t *dims, int ndim, const void *data,
                        size_t bytes) {
    TF_Status *s = TF_NewStatus();
    TF_Tensor *out = TF_AllocateOutput(ctx, i, dtype, dims, ndim, bytes, s);
    if (!allocated(i, out, s)) return false;
    if (bytes != 0) std::memcpy(TF_TensorData(out), data, bytes);
    TF_DeleteTensor(out);
    return true;
}

bool Call::output_copy(int i, hvd_request_h req, int32_t member) {
    hvd_tensor_t t{};
    hvd_status_t st = hvd_request_output(req, member, &t);
    if (st != HVD_OK) {
        fail(st, "no output " + std::to_string(member));
        return false;
    }
    return output_bytes(i, tf_dtype_of(t.dtype), t.shape, t.ndim, t.data, byte_size(t));
}

bool Call::output_int32(int i, const int32_t *values, int32_t n, int ndim) {
    int64_t dims[1] = {n};
    return output_bytes(i, TF_INT32, dims, ndim, values, sizeof(int32_t) * static_cast<size_t>(n));
}

void Call::finish_failed(std::unique_ptr<Call> call) {
    call->done.run();
}

void Call::submit(std::unique_ptr<Call> call, hvd_status_t enqueued, hvd_request_h req,
                  std::function<void(Call &, hvd_request_h)> finish) {
    if (enqueued != HVD_OK) {
        call->fail(enqueued, last_error());
        call->done.run();
        return;
    }
    Call *raw = call.release();
    hvd_native::request_completer().add(req, [raw, finish](hvd_request_h r, hvd_status_t status) {
        std::unique_ptr<Call> owned(raw);
        if (status == HVD_OK) {
            if (finish) finish(*owned, r);
        } else {
            char buf[2048];
            size_t n = hvd_request_message(r, buf, sizeof(buf));
            owned->fail(status, std::string(buf, n < sizeof(buf) ? n : sizeof(buf) - 1));
        }
        hvd_request_release(r);
        owned->done.run();
    });
}

}  // namespace hvd_tf
