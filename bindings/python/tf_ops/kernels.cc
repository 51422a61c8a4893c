// SPDX-License-Identifier: Apache-2.0
// hvd.tensorflow's CPU kernels, through TensorFlow's stable C kernel API
// (tensorflow/c/kernels.h): asynchronous kernels (TF_NewAsyncKernelBuilder) that enqueue one
// libhvd collective and return; the completer finishes each (outputs, errors) and calls
// TensorFlow's done callback, so ops that wait on other ranks hold no executor thread.
// Outputs whose size only the collective tells (allgather, alltoall, reducescatter) are
// allocated when it completed and filled from libhvd's library-owned output.

#include <memory>
#include <string>
#include <vector>

#include "kernel_util.h"
#include "op_defs.h"
#include "op_registry.h"

namespace hvd_tf {
namespace {

template <const char *Kind>
void *create(TF_OpKernelConstruction *c) {
    return read_attrs(c, Kind);
}

void destroy(void *kernel) {
    delete static_cast<KernelAttrs *>(kernel);
}

std::unique_ptr<Call> begin(void *kernel, TF_OpKernelContext *ctx,
                            TF_AsyncOpKernelDoneCallback *done) {
    auto call = std::make_unique<Call>(ctx, done, *static_cast<KernelAttrs *>(kernel));
    if (!call->start()) {
        Call::finish_failed(std::move(call));
        return nullptr;
    }
    return call;
}

void allreduce(void *kernel, TF_OpKernelContext *ctx, TF_AsyncOpKernelDoneCallback *done) {
    std::unique_ptr<Call> call = begin(kernel, ctx, done);
    if (!call) return;
    int n = TF_NumInputs(ctx);
    std::vector<hvd_tensor_t> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
    std::vector<const hvd_tensor_t *> in_p, out_p;
    for (int i = 0; i < n; ++i) {
        if (!call->input(i, &in[i]) || !call->output_like(i, in[i], &out[i]))
            return Call::finish_failed(std::move(call));
        in_p.push_back(&in[i]);
        out_p.push_back(&out[i]);
    }
    hvd_request_h req = nullptr;
    hvd_status_t st = call->attrs.kind == "allreduce"
                          ? hvd_allreduce_enqueue(call->hvd, &in[0], &out[0], &call->params, &req)
                          : hvd_grouped_allreduce_enqueue(call->hvd, in_p.data(), out_p.data(), n,
                                                          &call->params, &req);
    Call::submit(std::move(call), st, req, nullptr);
}

void copy_output0(Call &call, hvd_request_h req) {
    call.output_copy(0, req, 0);
}

void allgather(void *kernel, TF_OpKernelContext *ctx, TF_AsyncOpKernelDoneCallback *done) {
    std::unique_ptr<Call> call = begin(kernel, ctx, done);
    if (!call) return;
    hvd_tensor_t in;
    if (!call->input(0, &in)) return Call::finish_failed(std::move(call));
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_allgather_enqueue(call->hvd, &in, &call->params, &req);
    Call::submit(std::move(call), st, req, copy_output0);
}

void broadcast(void *kernel, TF_OpKernelContext *ctx, TF_AsyncOpKernelDoneCallback *done) {
    std::unique_ptr<Call> call = begin(kernel, ctx, done);
    if (!call) return;
    hvd_tensor_t in, out;
    if (!call->input(0, &in) || !call->output_like(0, in, &out))
        return Call::finish_failed(std::move(call));
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_broadcast_enqueue(call->hvd, &in, &out, &call->params, &req);
    Call::submit(std::move(call), st, req, nullptr);
}

void alltoall(void *kernel, TF_OpKernelContext *ctx, TF_AsyncOpKernelDoneCallback *done) {
    std::unique_ptr<Call> call = begin(kernel, ctx, done);
    if (!call) return;
    hvd_tensor_t in, splits;
    if (!call->input(0, &in) || !call->input(1, &splits))
        return Call::finish_failed(std::move(call));
    if (splits.dtype != HVD_DTYPE_INT32 || splits.ndim != 1) {
        call->fail(HVD_ERR_INVALID_ARG, "splits must be a vector of int32");
        return Call::finish_failed(std::move(call));
    }
    if (splits.shape[0] != 0) {  // empty: an even split
        call->params.field_mask |= HVD_OP_FIELD_SPLITS;
        call->params.splits = static_cast<const int32_t *>(splits.data);
        call->params.num_splits = static_cast<int32_t>(splits.shape[0]);
    }
    int32_t members = 0;
    hvd_size(call->hvd, call->params.process_set, &members);
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_alltoall_enqueue(call->hvd, &in, &call->params, &req);
    Call::submit(std::move(call), st, req, [members](Call &c, hvd_request_h r) {
        std::vector<int32_t> received(static_cast<size_t>(members));
        hvd_status_t got = hvd_request_received_splits(r, received.data(), members);
        if (got != HVD_OK) return c.fail(got, last_error());
        if (c.output_copy(0, r, 0)) c.output_int32(1, received.data(), members, 1);
    });
}

void reducescatter(void *kernel, TF_OpKernelContext *ctx, TF_AsyncOpKernelDoneCallback *done) {
    std::unique_ptr<Call> call = begin(kernel, ctx, done);
    if (!call) return;
    hvd_tensor_t in;
    if (!call->input(0, &in)) return Call::finish_failed(std::move(call));
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_reducescatter_enqueue(call->hvd, &in, &call->params, &req);
    Call::submit(std::move(call), st, req, copy_output0);
}

// Grouped allgather and reducescatter: every input in one request, output i from its member i.
void grouped_sized(void *kernel, TF_OpKernelContext *ctx, TF_AsyncOpKernelDoneCallback *done) {
    std::unique_ptr<Call> call = begin(kernel, ctx, done);
    if (!call) return;
    int n = TF_NumInputs(ctx);
    std::vector<hvd_tensor_t> in(static_cast<size_t>(n));
    std::vector<const hvd_tensor_t *> in_p;
    for (int i = 0; i < n; ++i) {
        if (!call->input(i, &in[i])) return Call::finish_failed(std::move(call));
        in_p.push_back(&in[i]);
    }
    hvd_request_h req = nullptr;
    hvd_status_t st =
        call->attrs.kind == "grouped_allgather"
            ? hvd_grouped_allgather_enqueue(call->hvd, in_p.data(), n, &call->params, &req)
            : hvd_grouped_reducescatter_enqueue(call->hvd, in_p.data(), n, &call->params, &req);
    Call::submit(std::move(call), st, req, [n](Call &c, hvd_request_h r) {
        for (int i = 0; i < n && c.output_copy(i, r, i); ++i) {
        }
    });
}

void join(void *kernel, TF_OpKernelContext *ctx, TF_AsyncOpKernelDoneCallback *done) {
    std::unique_ptr<Call> call = begin(kernel, ctx, done);
    if (!call) return;
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_join_enqueue(call->hvd, &call->params, &req);
    Call::submit(std::move(call), st, req, [](Call &c, hvd_request_h r) {
        int64_t last = -1;
        hvd_status_t got = hvd_request_value(r, &last);
        if (got != HVD_OK) return c.fail(got, last_error());
        int32_t value = static_cast<int32_t>(last);
        c.output_int32(0, &value, 1, 0);
    });
}

void barrier(void *kernel, TF_OpKernelContext *ctx, TF_AsyncOpKernelDoneCallback *done) {
    std::unique_ptr<Call> call = begin(kernel, ctx, done);
    if (!call) return;
    hvd_request_h req = nullptr;
    hvd_status_t st = hvd_barrier_enqueue(call->hvd, &call->params, &req);
    Call::submit(std::move(call), st, req, nullptr);
}

char kAllreduce[] = "allreduce";
char kGroupedAllreduce[] = "grouped_allreduce";
char kAllgather[] = "allgather";
char kBroadcast[] = "broadcast";
char kAlltoall[] = "alltoall";
char kReducescatter[] = "reducescatter";
char kGroupedAllgather[] = "grouped_allgather";
char kGroupedReducescatter[] = "grouped_reducescatter";
char kJoin[] = "join";
char kBarrier[] = "barrier";

bool register_kernel(const char *op, void *(*make)(TF_OpKernelConstruction *),
                     void (*compute)(void *, TF_OpKernelContext *,
                                     TF_AsyncOpKernelDoneCallback *)) {
    TF_KernelBuilder *b = TF_NewAsyncKernelBuilder(op, "CPU", make, compute, destroy);
    TF_Status *s = TF_NewStatus();
    if (std::string(op) == "HvdAlltoall") TF_KernelBuilder_HostMemory(b, "splits");
    TF_RegisterKernelBuilder(op, b, s);
    bool ok = TF_GetCode(s) == TF_OK;
    TF_DeleteStatus(s);
    return ok;
}

}  // namespace

bool register_kernels() {
    bool ok = true;
    ok &= register_kernel("HvdAllreduce", create<kAllreduce>, allreduce);
    ok &= register_kernel("HvdGroupedAllreduce", create<kGroupedAllreduce>, allreduce);
    ok &= register_kernel("HvdAllgather", create<kAllgather>, allgather);
    ok &= register_kernel("HvdBroadcast", create<kBroadcast>, broadcast);
    ok &= register_kernel("HvdAlltoall", create<kAlltoall>, alltoall);
    ok &= register_kernel("HvdReducescatter", create<kReducescatter>, reducescatter);
    ok &= register_kernel("HvdGroupedAllgather", create<kGroupedAllgather>, grouped_sized);
    ok &= register_kernel("HvdGroupedReducescatter", create<kGroupedReducescatter>, grouped_sized);
    ok &= register_kernel("HvdJoin", create<kJoin>, join);
    ok &= register_kernel("HvdBarrier", create<kBarrier>, barrier);
    return ok;
}

}  // namespace hvd_tf

// tf.load_op_library runs the library's static initialisers while TensorFlow records what
// they register.
namespace {
[[maybe_unused]] const bool g_registered = hvd_tf::register_ops() && hvd_tf::register_kernels();
}  // namespace

// Called by hvd.tensorflow (hvd/tensorflow/_ops.py): the context after hvd.init (NULL before
// hvd.shutdown), and a process set's handle whenever an op of that set is built.
extern "C" __attribute__((visibility("default"))) void hvd_tf_set_context(void *ctx) {
    hvd_native::set_live_context(ctx);
}

extern "C" __attribute__((visibility("default"))) void hvd_tf_set_process_set(int64_t id,
                                                                              void *handle) {
    hvd_native::set_process_set(id, handle);
}
