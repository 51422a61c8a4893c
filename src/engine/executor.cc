// SPDX-License-Identifier: Apache-2.0
#include "engine/executor.h"

#include <cstring>

#include "collectives/collectives.h"
#include "collectives/shm/shm_sync.h"
#include "common/dtype.h"
#include "common/error.h"
#include "engine/op_math.h"
#include "reduce/reduce.h"

namespace hvd::engine {

namespace {

std::string fused_failure(const char *what, size_t tensors, const Request &first,
                          const collectives::Comm &comm, hvd_status_t s) {
    return strprintf("fused %s of %zu tensors from '%s' failed on rank %d: %s", what, tensors,
                     first.meta.name.c_str(), comm.members[comm.my_index], status_message(s));
}

// Through shared memory the collective reads the input and writes the output itself: no
// copy into the output first, and no fusion buffer.
bool shm_direct(const collectives::Comm &comm, int32_t op, double prescale) {
    return comm.shm != nullptr && op != HVD_OP_ADASUM && prescale == 1.0;
}
bool shm_direct(const collectives::Comm &comm, const Request &req) {
    return shm_direct(comm, req.meta.reduce_op, req.meta.prescale);
}

hvd_status_t run_allreduce(collectives::Comm &comm, Request &req) {
    return allreduce_scaled(comm, req.input.data, req.output.data, req.input.elements(),
                            req.input.dtype, reduction_of(req), req.meta.prescale,
                            postscale_of(req, comm.size()));
}

// Where an allgather's rows go: the caller's output (allgather into), or a library-owned
// buffer of `rows` rows sized here.
char *gather_output(Request &req, int64_t rows, size_t row_bytes) {
    if (req.meta.out_rows >= 0) return static_cast<char *>(req.output.data);
    req.owned_shape = req.input.shape;
    req.owned_shape[0] = rows;
    req.owned_data.resize(static_cast<size_t>(rows) * row_bytes);
    return req.owned_data.data();
}

hvd_status_t run_allgather(collectives::Comm &comm, const Response &resp, Request &req) {
    const TensorRef &in = req.input;
    size_t row_bytes = row_bytes_of(in);
    std::vector<size_t> bytes;
    int64_t rows = 0;
    for (int64_t d : resp.first_dims) {
        bytes.push_back(static_cast<size_t>(d) * row_bytes);
        rows += d;
    }
    return collectives::allgatherv(comm, in.data, gather_output(req, rows, row_bytes), bytes);
}

// resp.first_dims is the n x n matrix of rows, [sender][receiver].
hvd_status_t run_alltoall(collectives::Comm &comm, const Response &resp, Request &req) {
    const TensorRef &in = req.input;
    const size_t n = static_cast<size_t>(comm.size());
    const size_t me = static_cast<size_t>(comm.my_index);
    size_t row_bytes = row_bytes_of(in);
    std::vector<size_t> send_bytes(n), recv_bytes(n);
    req.received_splits.assign(n, 0);
    int64_t rows = 0;
    for (size_t j = 0; j < n; ++j) {
        send_bytes[j] = static_cast<size_t>(resp.first_dims[me * n + j]) * row_bytes;
        int64_t from_j = resp.first_dims[j * n + me];
        recv_bytes[j] = static_cast<size_t>(from_j) * row_bytes;
        req.received_splits[j] = static_cast<int32_t>(from_j);
        rows += from_j;
    }
    req.owned_shape = in.shape;
    req.owned_shape[0] = rows;
    req.owned_data.resize(static_cast<size_t>(rows) * row_bytes);
    return collectives::alltoallv(comm, in.data, send_bytes, req.owned_data.data(), recv_bytes);
}

// Horovod's split of the first dimension: the first d0 % n members get one extra row.
hvd_status_t run_reducescatter(collectives::Comm &comm, Request &req) {
    const TensorRef &in = req.input;
    const int64_t n = comm.size();
    const int64_t d0 = in.shape[0];
    const size_t row_elems = row_elements_of(in);
    std::vector<size_t> counts(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r)
        counts[r] = static_cast<size_t>(scatter_rows(d0, n, r)) * row_elems;
    int64_t my_rows = scatter_rows(d0, n, comm.my_index);
    req.owned_shape = in.shape;
    req.owned_shape[0] = my_rows;
    size_t esz = dtype_size(in.dtype);
    req.owned_data.resize(counts[comm.my_index] * esz);
    // Prescale a copy: the caller's input is never modified.
    const void *src = in.data;
    std::vector<char> scaled;
    if (req.meta.prescale != 1.0) {
        scaled.resize(in.bytes());
        hvd_status_t s =
            reduce::scale_into(scaled.data(), in.data, in.elements(), in.dtype, req.meta.prescale);
        if (s != HVD_OK) return s;
        src = scaled.data();
    }
    int32_t op = reduction_of(req);
    hvd_status_t s =
        collectives::reducescatter(comm, src, req.owned_data.data(), counts, in.dtype, op);
    if (s != HVD_OK) return s;
    double post = req.meta.postscale;
    if (req.meta.reduce_op == HVD_OP_AVERAGE) post /= static_cast<double>(n);
    if (post == 1.0) return HVD_OK;
    return reduce::scale_into(req.owned_data.data(), req.owned_data.data(), counts[comm.my_index],
                              in.dtype, post);
}

hvd_status_t run_broadcast(collectives::Comm &comm, Request &req) {
    const TensorRef &in = req.input;
    TensorRef &out = req.output;
    size_t bytes = in.bytes();
    if (comm.my_index == req.meta.root && out.data != in.data && bytes > 0)
        std::memcpy(out.data, in.data, bytes);
    return collectives::broadcast(comm, out.data, bytes, req.meta.root);
}

// The fused allreduce through shared memory: the tensors are the pieces of one buffer. Fused
// requests share their op and postscale, so one factor scales every piece as it is stored.
hvd_status_t fused_allreduce_shm(collectives::Comm &comm, const std::vector<RequestPtr> &reqs,
                                 const ActivityTrace &trace, std::string *message) {
    std::vector<collectives::Piece> pieces;
    pieces.reserve(reqs.size());
    for (const RequestPtr &r : reqs)
        pieces.push_back({r->input.data, r->output.data, r->input.bytes()});
    trace.begin("SHM_ALLREDUCE");
    const Request &first = *reqs.front();
    hvd_status_t s =
        collectives::allreduce_shm_pieces(comm, pieces.data(), pieces.size(), first.input.dtype,
                                          reduction_of(first), postscale_of(first, comm.size()));
    trace.end();
    if (s != HVD_OK) *message = fused_failure("allreduce", reqs.size(), first, comm, s);
    return s;
}

}  // namespace

hvd_status_t allreduce_scaled(collectives::Comm &comm, const void *in, void *out, size_t count,
                              int32_t dtype, int32_t op, double prescale, double postscale) {
    if (shm_direct(comm, op, prescale)) {  // the postscale folded into the reduction's last store
        collectives::Piece whole{in, out, count * dtype_size(dtype)};
        return collectives::allreduce_shm_pieces(comm, &whole, 1, dtype, op, postscale);
    }
    // Prescale on the way into the output buffer (or in place), so the caller's input is
    // never modified by an out-of-place op.
    if (prescale != 1.0 || out != in) {
        hvd_status_t s = reduce::scale_into(out, in, count, dtype, prescale);
        if (s != HVD_OK) return s;
    }
    hvd_status_t s = op == HVD_OP_ADASUM ? collectives::adasum(comm, out, count, dtype)
                                         : collectives::allreduce(comm, out, count, dtype, op);
    if (s != HVD_OK || postscale == 1.0) return s;
    return reduce::scale_into(out, out, count, dtype, postscale);
}

std::string transfer_activity(const collectives::Comm &comm, OpType type) {
    bool shm = comm.shm != nullptr && (type == OpType::kAllreduce || type == OpType::kAllgather ||
                                       type == OpType::kBroadcast);
    return (shm ? "SHM_" : "UCX_") + upper_op_name(type);
}

void ActivityTrace::begin(const std::string &activity) const {
    if (timeline_ == nullptr || !timeline_->active()) return;
    for (const RequestPtr &r : reqs_)
        timeline_->begin(r->meta.name, activity);
}

void ActivityTrace::end() const {
    if (timeline_ == nullptr || !timeline_->active()) return;
    for (const RequestPtr &r : reqs_)
        timeline_->end(r->meta.name);
}

hvd_status_t execute_fused_allreduce(collectives::Comm &comm, const std::vector<RequestPtr> &reqs,
                                     collectives::ScratchBuffer *fusion, const ActivityTrace &trace,
                                     std::string *message) {
    const Request &first = *reqs.front();
    const int32_t dtype = first.input.dtype;
    // One member: each result is its own input, scaled; a fusion buffer would only add two
    // copies of every tensor.
    if (comm.size() == 1) {
        for (const RequestPtr &r : reqs) {
            hvd_status_t s = run_allreduce(comm, *r);
            if (s != HVD_OK) {
                *message = fused_failure("allreduce", reqs.size(), first, comm, s);
                return s;
            }
        }
        return HVD_OK;
    }
    bool direct = true;
    for (const RequestPtr &r : reqs)
        direct = direct && shm_direct(comm, *r);
    if (direct) return fused_allreduce_shm(comm, reqs, trace, message);
    size_t total = 0;
    for (const RequestPtr &r : reqs)
        total += r->input.bytes();
    char *buf = static_cast<char *>(fusion->get(total));
    trace.begin("MEMCPY_IN_FUSION_BUFFER");
    size_t offset = 0;
    for (const RequestPtr &r : reqs) {
        hvd_status_t s = reduce::scale_into(buf + offset, r->input.data, r->input.elements(), dtype,
                                            r->meta.prescale);
        if (s != HVD_OK) return s;
        offset += r->input.bytes();
    }
    trace.end();
    int32_t op = reduction_of(first);
    trace.begin(transfer_activity(comm, OpType::kAllreduce));
    hvd_status_t s = collectives::allreduce(comm, buf, total / dtype_size(dtype), dtype, op);
    trace.end();
    if (s != HVD_OK) {
        *message = fused_failure("allreduce", reqs.size(), first, comm, s);
        return s;
    }
    trace.begin("MEMCPY_OUT_FUSION_BUFFER");
    offset = 0;
    for (const RequestPtr &r : reqs) {
        s = reduce::scale_into(r->output.data, buf + offset, r->output.elements(), dtype,
                               postscale_of(*r, comm.size()));
        if (s != HVD_OK) break;
        offset += r->input.bytes();
    }
    trace.end();
    return s;
}

hvd_status_t execute_fused_allgather(collectives::Comm &comm, const Response *resps,
                                     const std::vector<RequestPtr> &reqs,
                                     collectives::ScratchBuffer *fusion, const ActivityTrace &trace,
                                     std::string *message) {
    const size_t n = static_cast<size_t>(comm.size());
    const size_t me = static_cast<size_t>(comm.my_index);
    std::vector<size_t> row_bytes(reqs.size());
    std::vector<size_t> block(n, 0);  // bytes of member r's block
    for (size_t t = 0; t < reqs.size(); ++t) {
        row_bytes[t] = row_bytes_of(reqs[t]->input);
        if (resps[t].first_dims.size() != n)
            throw Error(HVD_ERR_INTERNAL, "fused allgather: a response lacks first dimensions");
        for (size_t r = 0; r < n; ++r)
            block[r] += static_cast<size_t>(resps[t].first_dims[r]) * row_bytes[t];
    }
    size_t total = 0;
    std::vector<size_t> block_start(n);
    for (size_t r = 0; r < n; ++r) {
        block_start[r] = total;
        total += block[r];
    }
    char *recv = static_cast<char *>(fusion->get(total + block[me]));
    char *send = recv + total;
    trace.begin("MEMCPY_IN_FUSION_BUFFER");
    size_t offset = 0;
    for (const RequestPtr &r : reqs) {
        if (r->input.bytes() > 0) std::memcpy(send + offset, r->input.data, r->input.bytes());
        offset += r->input.bytes();
    }
    trace.end();
    trace.begin(transfer_activity(comm, OpType::kAllgather));
    hvd_status_t s = collectives::allgatherv(comm, send, recv, block);
    trace.end();
    if (s != HVD_OK) {
        *message = fused_failure("allgather", reqs.size(), *reqs.front(), comm, s);
        return s;
    }
    trace.begin("MEMCPY_OUT_FUSION_BUFFER");
    std::vector<size_t> cursor = block_start;  // next unread byte of each member's block
    for (size_t t = 0; t < reqs.size(); ++t) {
        Request &req = *reqs[t];
        int64_t rows = 0;
        for (int64_t d : resps[t].first_dims)
            rows += d;
        char *out = gather_output(req, rows, row_bytes[t]);
        for (size_t r = 0; r < n; ++r) {
            size_t bytes = static_cast<size_t>(resps[t].first_dims[r]) * row_bytes[t];
            if (bytes > 0) std::memcpy(out, recv + cursor[r], bytes);
            out += bytes;
            cursor[r] += bytes;
        }
    }
    trace.end();
    return HVD_OK;
}

hvd_status_t execute_fused_reducescatter(collectives::Comm &comm,
                                         const std::vector<RequestPtr> &reqs,
                                         collectives::ScratchBuffer *fusion,
                                         const ActivityTrace &trace, std::string *message) {
    const Request &first = *reqs.front();
    const int32_t dtype = first.input.dtype;
    const size_t esz = dtype_size(dtype);
    const int64_t n = comm.size();
    std::vector<size_t> counts(static_cast<size_t>(n), 0);  // elements of member r's block
    std::vector<size_t> row_elems(reqs.size());
    size_t total = 0;
    for (size_t t = 0; t < reqs.size(); ++t) {
        const TensorRef &in = reqs[t]->input;
        int64_t d0 = in.shape[0];
        row_elems[t] = row_elements_of(in);
        for (int64_t r = 0; r < n; ++r)
            counts[r] += static_cast<size_t>(scatter_rows(d0, n, r)) * row_elems[t];
        total += in.elements();
    }
    size_t mine = counts[comm.my_index];
    char *buf = static_cast<char *>(fusion->get((total + mine) * esz));
    char *out = buf + total * esz;
    // Pack: member r's block is its rows of tensor 0, then of tensor 1, ...
    trace.begin("MEMCPY_IN_FUSION_BUFFER");
    std::vector<size_t> cursor(static_cast<size_t>(n), 0);
    for (int64_t r = 1; r < n; ++r)
        cursor[r] = cursor[r - 1] + counts[r - 1];
    for (size_t t = 0; t < reqs.size(); ++t) {
        const TensorRef &in = reqs[t]->input;
        const char *src = static_cast<const char *>(in.data);
        for (int64_t r = 0; r < n; ++r) {
            size_t elems = static_cast<size_t>(scatter_rows(in.shape[0], n, r)) * row_elems[t];
            hvd_status_t s = reduce::scale_into(buf + cursor[r] * esz, src, elems, dtype,
                                                reqs[t]->meta.prescale);
            if (s != HVD_OK) return s;
            src += elems * esz;
            cursor[r] += elems;
        }
    }
    trace.end();
    trace.begin(transfer_activity(comm, OpType::kReducescatter));
    hvd_status_t s = collectives::reducescatter(comm, buf, out, counts, dtype, reduction_of(first));
    trace.end();
    if (s != HVD_OK) {
        *message = fused_failure("reducescatter", reqs.size(), first, comm, s);
        return s;
    }
    trace.begin("MEMCPY_OUT_FUSION_BUFFER");
    const char *src = out;
    for (size_t t = 0; t < reqs.size() && s == HVD_OK; ++t) {
        Request &req = *reqs[t];
        int64_t rows = scatter_rows(req.input.shape[0], n, comm.my_index);
        size_t elems = static_cast<size_t>(rows) * row_elems[t];
        req.owned_shape = req.input.shape;
        req.owned_shape[0] = rows;
        req.owned_data.resize(elems * esz);
        s = reduce::scale_into(req.owned_data.data(), src, elems, dtype,
                               postscale_of(req, comm.size()));
        src += elems * esz;
    }
    trace.end();
    return s;
}

hvd_status_t execute_fused(collectives::Comm &comm, const Response *resps,
                           const std::vector<RequestPtr> &reqs, collectives::ScratchBuffer *fusion,
                           const ActivityTrace &trace, std::string *message) {
    switch (resps[0].type) {
        case OpType::kAllgather:
            return execute_fused_allgather(comm, resps, reqs, fusion, trace, message);
        case OpType::kReducescatter:
            return execute_fused_reducescatter(comm, reqs, fusion, trace, message);
        default:
            return execute_fused_allreduce(comm, reqs, fusion, trace, message);
    }
}

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
            case OpType::kAlltoall:
                s = run_alltoall(comm, resp, req);
                break;
            case OpType::kReducescatter:
                s = run_reducescatter(comm, req);
                break;
            default:
                *message = strprintf("%s '%s' is not a data collective", op_type_name(resp.type),
                                     resp.name.c_str());
                return HVD_ERR_INTERNAL;
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
