// SPDX-License-Identifier: Apache-2.0
// What every hvd.tensorflow kernel shares: its attributes, the op's libhvd parameters, input
// tensors described for libhvd, TensorFlow's done callback held past the kernel's return, and
// failures reported as TensorFlow statuses (Horovod's error codes: a disagreement between
// ranks is FAILED_PRECONDITION, a wrong argument INVALID_ARGUMENT, an aborted job ABORTED).
#pragma once

#include <hvd/hvd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensorflow/c/kernels.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"

namespace hvd_tf {

// The attributes of one op node, read when TensorFlow constructs its kernel.
struct KernelAttrs {
    std::string kind;  // "allreduce", "grouped_allreduce", ...
    std::string name;  // the name ranks match the op by; "" = libhvd's auto-name
    int64_t process_set = 0;
    int32_t reduce_op = HVD_OP_SUM;
    double prescale = 1.0, postscale = 1.0;
    int32_t root_rank = 0;  // in the set
};

// Reads the attributes an op of this kind has (missing ones keep their defaults). The name is
// "<kind>.<name attr>", else "<kind>.<node name>" when use_node_name is set (graph mode:
// every rank that traced the same function names its nodes alike), else left to libhvd.
KernelAttrs *read_attrs(TF_OpKernelConstruction *c, const char *kind);

// TensorFlow's done callback of one asynchronous kernel call, kept until the op finished.
//
// The stable C API hands compute_async_func a TF_AsyncOpKernelDoneCallback* that points to
// the C++ AsyncOpKernel::DoneCallback (a std::function<void()>) that TensorFlow passed by
// value to its ComputeAsync: it dies when compute_async_func returns. The C API has no way
// to keep it, so the callback is moved into a std::function this library owns, which relies
// on TensorFlow's stated representation (TF_RunAsyncOpKernelDoneCallback casts the pointer
// to that std::function) and on libstdc++'s stable std::function layout.
class Done {
  public:
    explicit Done(TF_AsyncOpKernelDoneCallback *cb);
    void run();  // once

  private:
    std::unique_ptr<std::function<void()>> fn_;
};

// One kernel call: its context, inputs and outputs held until the op finished.
struct Call {
    Call(TF_OpKernelContext *context, TF_AsyncOpKernelDoneCallback *done_cb, const KernelAttrs &a)
        : ctx(context), done(done_cb), attrs(a) {}
    ~Call();
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;

    TF_OpKernelContext *ctx;
    Done done;
    const KernelAttrs &attrs;
    hvd_context_h hvd = nullptr;
    hvd_op_params_t params{};
    std::vector<TF_Tensor *> tensors;  // deleted with the call
    std::vector<std::vector<int64_t>> shapes;

    // Fills hvd and params (name, process set, and the scale/op/root the attrs carry); false
    // after failing the call (no context, unknown process set).
    bool start();
    // Input i described for libhvd in *t; false after failing the call (unsupported dtype).
    bool input(int i, hvd_tensor_t *t);
    // An output shaped like input i, input i's memory where TensorFlow lets it be reused.
    bool output_like(int out_index, const hvd_tensor_t &in, hvd_tensor_t *t);
    // Allocates output i as a copy of a completed request's library-owned output.
    bool output_copy(int i, hvd_request_h req, int32_t member);
    // Allocates output i, an int32 vector of n values.
    bool output_int32(int i, const int32_t *values, int32_t n, int ndim);

    // Allocates output i of dtype and dims holding a copy of bytes bytes at data.
    bool output_bytes(int i, TF_DataType dtype, const int64_t *dims, int ndim, const void *data,
                      size_t bytes);
    // Whether output i was allocated (out, status s, which it deletes); fails the call if not.
    bool allocated(int i, TF_Tensor *out, TF_Status *s);

    // Records a failure on the kernel's context (message led by the op and this rank).
    void fail(hvd_status_t status, const std::string &detail);
    // After an enqueue: on success hands the request to the completer, which runs finish
    // (outputs; may fail the call) and then done; on failure fails the call and runs done now.
    // Takes ownership of the call either way.
    static void submit(std::unique_ptr<Call> call, hvd_status_t enqueued, hvd_request_h req,
                       std::function<void(Call &, hvd_request_h)> finish);
    // Fails the call and runs done (a call that never enqueued).
    static void finish_failed(std::unique_ptr<Call> call);
};

// The thread's libhvd error detail (hvd_last_error).
std::string last_error();

}  // namespace hvd_tf
