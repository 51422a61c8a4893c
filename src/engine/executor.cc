#include "engine/executor.h"

#include <cstring>

#include "collectives/collectives.h"
#include "common/dtype.h"
#include "common/error.h"
#include "reduce/reduce.h"

namespace hvd::engine {

namespace {

hvd_status_t run_allreduce(collectives::Comm &comm, Request &req) {
    const TensorRef &in = req.input;
    TensorRef &out = req.output;
    size_t count = in.elements();
    // Prescale on the way into the output buffer (or in place), so the caller's input is
    // never modified by an out-of-place op.
    if (req.meta.prescale != 1.0 || out.data != in.data) {
        hvd_status_t s = reduce::scale_into(out.data, in.data, count, in.dtype, req.meta.prescale);
        if (s != HVD_OK) return s;
    }
    int32_t op = req.meta.reduce_op == HVD_OP_AVERAGE ? HVD_OP_SUM : req.meta.reduce_op;
    hvd_status_t s = collectives::allreduce(comm, out.data, count, in.dtype, op);
    if (s != HVD_OK) return s;
    // Average divides by the set size as part of the postscale factor (one rounding step).
    double post = req.meta.postscale;
    if (req.meta.reduce_op == HVD_OP_AVERAGE) post /= comm.size();
    if (post != 1.0) return reduce::scale_into(out.data, out.data, count, in.dtype, post);
    return HVD_OK;
}

hvd_status_t run_allgather(collectives::Comm &comm, const Response &resp, Request &req) {
    const TensorRef &in = req.input;
    size_t row_bytes = dtype_size(in.dtype);
    for (size_t i = 1; i < in.shape.size(); ++i)
        row_bytes *= static_cast<size_t>(in.shape[i]);
    std::vector<size_t> bytes;
    int64_t rows = 0;
    for (int64_t d : resp.first_dims) {
        bytes.push_back(static_cast<size_t>(d) * row_bytes);
        rows += d;
    }
    req.owned_shape = in.shape;
    req.owned_shape[0] = rows;
    req.owned_data.resize(static_cast<size_t>(rows) * row_bytes);
    return collectives::allgatherv(comm, in.data, req.owned_data.data(), bytes);
}

hvd_status_t run_broadcast(collectives::Comm &comm, Request &req) {
    const TensorRef &in = req.input;
    TensorRef &out = req.output;
    size_t bytes = in.bytes();
    if (comm.my_index == req.meta.root && out.data != in.data && bytes > 0)
        std::memcpy(out.data, in.data, bytes);
    return collectives::broadcast(comm, out.data, bytes, req.meta.root);
}

}  // namespace

hvd_status_t execute_response(collectives::Comm &comm, const Response &resp, Request &req,
                              std::string *message) {
    hvd_status_t s = HVD_ERR_INTERNAL;
    try {
        switch (resp.type) {
            case OpType::kAllreduce:
                s = run_allreduce(comm, req);
                break;
            case OpType::kAllgather:
                s = run_allgather(comm, resp, req);
                break;
            case OpType::kBroadcast:
                s = run_broadcast(comm, req);
                break;
        }
    } catch (const Error &e) {
        *message = e.what();
        return e.status();
    } catch (const std::bad_alloc &) {
        *message = strprintf("%s '%s': out of memory", op_type_name(resp.type), resp.name.c_str());
        return HVD_ERR_NO_MEMORY;
    }
    if (s != HVD_OK && message->empty())
        *message = strprintf("%s '%s' failed on rank %d: %s", op_type_name(resp.type),
                             resp.name.c_str(), comm.members[comm.my_index], status_message(s));
    return s;
}

}  // namespace hvd::engine
