// SPDX-License-Identifier: Apache-2.0
// The NCCL path of GpuRunner: each collective as NCCL calls on the device's stream, fused
// allreduces through the device fusion buffer (batched copy kernels, scaled on the way),
// scaling as kernels.
#include <algorithm>

#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/nccl_group.h"
#include "engine/op_math.h"

namespace hvd::engine {

void GpuRunner::copy_batched(gpu::DeviceState &dev, const std::vector<hvd_gpu_copy_t> &copies,
                             int32_t dtype, double factor) {
    for (size_t i = 0; i < copies.size(); i += HVD_GPU_COPY_BATCH) {
        size_t k = std::min<size_t>(HVD_GPU_COPY_BATCH, copies.size() - i);
        lib_->call("batched copy", lib_->api->copy_batch_async, dev.device, copies.data() + i, k,
                   dtype, factor, dev.stream);
    }
}

char *GpuRunner::fuse_inputs(const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                             double pre) {
    size_t total = 0;
    for (const RequestPtr &r : reqs)
        total += r->input.bytes();
    dev.fusion.reserve_device(lib_, dev.device, total, dev.stream);
    std::vector<hvd_gpu_copy_t> copies;
    copies.reserve(reqs.size());
    size_t offset = 0;
    for (const RequestPtr &r : reqs) {
        copies.push_back({dev.fusion.data() + offset, r->input.data, r->input.bytes()});
        offset += r->input.bytes();
    }
    copy_batched(dev, copies, reqs.front()->input.dtype, pre);
    return dev.fusion.data();
}

void GpuRunner::unfuse_outputs(const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                               const char *fused, double post) {
    std::vector<hvd_gpu_copy_t> copies;
    copies.reserve(reqs.size());
    size_t offset = 0;
    for (const RequestPtr &r : reqs) {
        copies.push_back({r->output.data, fused + offset, r->input.bytes()});
        offset += r->input.bytes();
    }
    copy_batched(dev, copies, reqs.front()->input.dtype, post);
}

void GpuRunner::scale(gpu::DeviceState &dev, void *dst, const void *src, size_t count,
                      int32_t dtype, double factor) {
    lib_->call("scale kernel", lib_->api->scale_async, dev.device, dst, src, count, dtype, factor,
               dev.stream);
}

char *GpuRunner::owned_device_output(Request &req, gpu::DeviceState &dev, size_t bytes) {
    req.device_output.reserve_device(lib_, dev.device, bytes, dev.stream);
    return req.device_output.data();
}

void GpuRunner::settle(void *nc) {
    if (settling_ == nullptr)
        throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: an NCCL call outside a run", rank_));
    comms_.await_idle(nc, *settling_);
}

void GpuRunner::queue_nccl(collectives::Comm &comm, const Response *resps,
                           const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                           void **nccl_comm) {
    void *nc = comms_.get(comm, dev.device, resps[0].devices_key);
    *nccl_comm = nc;
    settling_ = &comm;
    switch (resps[0].type) {
        case OpType::kAllreduce:
            queue_allreduce(reqs, comm.size(), nc, dev);
            break;
        case OpType::kAllgather:
            queue_allgather(resps, reqs, comm.my_index, nc, dev);
            break;
        case OpType::kBroadcast:
            queue_broadcast(*reqs.front(), nc, dev);
            break;
        case OpType::kAlltoall:
            queue_alltoall(resps[0], *reqs.front(), comm.size(), comm.my_index, nc, dev);
            break;
        case OpType::kReducescatter:
            queue_reducescatter(reqs, comm.size(), comm.my_index, nc, dev);
            break;
        default:
            throw Error(HVD_ERR_INTERNAL,
                        strprintf("rank %d: %s '%s' has no NCCL path", rank_,
                                  op_type_name(resps[0].type), resps[0].name.c_str()));
    }
}

void GpuRunner::queue_allreduce(const std::vector<RequestPtr> &reqs, int32_t set_size, void *nc,
                                gpu::DeviceState &dev) {
    const Request &first = *reqs.front();
    const int32_t dtype = first.input.dtype;
    const int32_t op = reduction_of(first);
    const double pre = first.meta.prescale, post = postscale_of(first, set_size);
    if (reqs.size() == 1) {
        const TensorRef &in = first.input;
        const TensorRef &out = first.output;
        size_t count = in.elements();
        const void *src = in.data;
        if (pre != 1.0) {  // into the output: the caller's input is never modified
            scale(dev, out.data, in.data, count, dtype, pre);
            src = out.data;
        }
        lib_->call("ncclAllReduce", lib_->api->nccl_allreduce, src, out.data, count, dtype, op, nc,
                   dev.stream);
        settle(nc);
        if (post != 1.0) scale(dev, out.data, out.data, count, dtype, post);
        return;
    }
    size_t total = 0;
    for (const RequestPtr &r : reqs)
        total += r->input.bytes();
    char *fused = fuse_inputs(reqs, dev, pre);
    lib_->call("ncclAllReduce", lib_->api->nccl_allreduce, fused, fused, total / dtype_size(dtype),
               dtype, op, nc, dev.stream);
    settle(nc);
    unfuse_outputs(reqs, dev, fused, post);
}

// The library-owned outputs of a run of allgathers (the callers' where they gave one).
std::vector<char *> GpuRunner::allgather_outputs(const Response *resps,
                                                 const std::vector<RequestPtr> &reqs,
                                                 gpu::DeviceState &dev) {
    std::vector<char *> outs(reqs.size());
    for (size_t t = 0; t < reqs.size(); ++t) {
        Request &req = *reqs[t];
        int64_t rows = 0;
        for (int64_t d : resps[t].first_dims)
            rows += d;
        size_t row_bytes = row_bytes_of(req.input);
        if (req.meta.out_rows >= 0) {
            outs[t] = static_cast<char *>(req.output.data);
        } else {
            req.owned_shape = req.input.shape;
            req.owned_shape[0] = rows;
            outs[t] = owned_device_output(req, dev, static_cast<size_t>(rows) * row_bytes);
        }
    }
    return outs;
}

// Every member's rows of every tensor, in one NCCL group: a tensor whose members all bring the
// same number of rows is one ncclAllGather, one of differing counts (which ncclAllGather does
// not allow) one ncclBroadcast per member that brings rows.
void GpuRunner::queue_allgather(const Response *resps, const std::vector<RequestPtr> &reqs,
                                int32_t me, void *nc, gpu::DeviceState &dev) {
    const std::vector<char *> outs = allgather_outputs(resps, reqs, dev);
    NcclGroup group(lib_);
    bool queued = false;
    for (size_t t = 0; t < reqs.size(); ++t) {
        const std::vector<int64_t> &dims0 = resps[t].first_dims;
        const size_t row_bytes = row_bytes_of(reqs[t]->input);
        const bool equal =
            std::all_of(dims0.begin(), dims0.end(), [&](int64_t d) { return d == dims0[0]; });
        if (equal) {
            const size_t bytes = static_cast<size_t>(dims0[0]) * row_bytes;
            if (bytes > 0) {
                lib_->call("ncclAllGather", lib_->api->nccl_allgather, reqs[t]->input.data, outs[t],
                           bytes, nc, dev.stream);
                queued = true;
            }
            continue;
        }
        size_t offset = 0;
        for (size_t r = 0; r < dims0.size(); ++r) {
            const size_t bytes = static_cast<size_t>(dims0[r]) * row_bytes;
            if (bytes > 0) {
                lib_->call("ncclBroadcast", lib_->api->nccl_broadcast,
                           static_cast<int32_t>(r) == me ? reqs[t]->input.data : nullptr,
                           outs[t] + offset, bytes, static_cast<int32_t>(r), nc, dev.stream);
                queued = true;
            }
            offset += bytes;
        }
    }
    group.end();
    if (queued) settle(nc);
}

void GpuRunner::queue_broadcast(Request &req, void *nc, gpu::DeviceState &dev) {
    size_t bytes = req.input.bytes();
    if (bytes == 0) return;
    lib_->call("ncclBroadcast", lib_->api->nccl_broadcast, req.input.data, req.output.data, bytes,
               req.meta.root, nc, dev.stream);
    settle(nc);
}

// resp.first_dims is the n x n matrix of rows, [sender][receiver].
char *GpuRunner::alltoall_output(const Response &resp, Request &req, int32_t n, int32_t me,
                                 gpu::DeviceState &dev) {
    const size_t un = static_cast<size_t>(n), ume = static_cast<size_t>(me);
    req.received_splits.assign(un, 0);
    int64_t rows = 0;
    for (size_t j = 0; j < un; ++j) {
        req.received_splits[j] = static_cast<int32_t>(resp.first_dims[j * un + ume]);
        rows += resp.first_dims[j * un + ume];
    }
    req.owned_shape = req.input.shape;
    req.owned_shape[0] = rows;
    return owned_device_output(req, dev, static_cast<size_t>(rows) * row_bytes_of(req.input));
}

void GpuRunner::queue_alltoall(const Response &resp, Request &req, int32_t n, int32_t me, void *nc,
                               gpu::DeviceState &dev) {
    const size_t un = static_cast<size_t>(n), ume = static_cast<size_t>(me);
    const size_t row_bytes = row_bytes_of(req.input);
    char *out = alltoall_output(resp, req, n, me, dev);
    const char *in = static_cast<const char *>(req.input.data);
    NcclGroup group(lib_);
    size_t send_off = 0, recv_off = 0;
    for (size_t j = 0; j < un; ++j) {
        size_t send = static_cast<size_t>(resp.first_dims[ume * un + j]) * row_bytes;
        size_t recv = static_cast<size_t>(resp.first_dims[j * un + ume]) * row_bytes;
        if (j == ume) {
            lib_->call("cudaMemcpyAsync", lib_->api->copy_async, dev.device, out + recv_off,
                       in + send_off, send, dev.stream);
        } else {
            if (send > 0)
                lib_->call("ncclSend", lib_->api->nccl_send, in + send_off, send,
                           static_cast<int32_t>(j), nc, dev.stream);
            if (recv > 0)
                lib_->call("ncclRecv", lib_->api->nccl_recv, out + recv_off, recv,
                           static_cast<int32_t>(j), nc, dev.stream);
        }
        send_off += send;
        recv_off += recv;
    }
    group.end();
    settle(nc);
}

std::vector<char *> GpuRunner::reducescatter_outputs(const std::vector<RequestPtr> &reqs, int32_t n,
                                                     int32_t me, gpu::DeviceState &dev) {
    std::vector<char *> outs;
    for (const RequestPtr &r : reqs) {
        const int64_t rows = scatter_rows(r->input.shape[0], n, me);
        r->owned_shape = r->input.shape;
        r->owned_shape[0] = rows;
        outs.push_back(
            owned_device_output(*r, dev, static_cast<size_t>(rows) * row_bytes_of(r->input)));
    }
    return outs;
}

// Horovod's split (the first d0 % n members get a row more): one ncclReduceScatter where the
// split is even, otherwise a reduce of each member's rows to that member, all in one group.
void GpuRunner::queue_reducescatter(const std::vector<RequestPtr> &reqs, int32_t n, int32_t me,
                                    void *nc, gpu::DeviceState &dev) {
    const Request &first = *reqs.front();
    const int32_t dtype = first.input.dtype;
    const size_t esz = dtype_size(dtype);
    const double pre = first.meta.prescale, post = postscale_of(first, n);
    // Prescaled copies of the inputs, one after another in the scratch buffer.
    size_t scaled_bytes = 0;
    if (pre != 1.0) {
        for (const RequestPtr &r : reqs)
            scaled_bytes += r->input.bytes();
        dev.scratch.reserve_device(lib_, dev.device, scaled_bytes, dev.stream);
    }
    std::vector<const char *> srcs;
    size_t scaled_off = 0;
    for (const RequestPtr &r : reqs) {
        const char *src = static_cast<const char *>(r->input.data);
        if (pre != 1.0) {
            char *dst = dev.scratch.data() + scaled_off;
            scale(dev, dst, src, r->input.elements(), dtype, pre);
            src = dst;
            scaled_off += r->input.bytes();
        }
        srcs.push_back(src);
    }
    const std::vector<char *> outs = reducescatter_outputs(reqs, n, me, dev);
    {
        NcclGroup group(lib_);
        for (size_t t = 0; t < reqs.size(); ++t) {
            const TensorRef &in = reqs[t]->input;
            int64_t d0 = in.shape[0];
            const size_t row_elems = row_elements_of(in);
            if (d0 % n == 0) {
                size_t count = static_cast<size_t>(d0 / n) * row_elems;
                if (count > 0)
                    lib_->call("ncclReduceScatter", lib_->api->nccl_reducescatter, srcs[t], outs[t],
                               count, dtype, reduction_of(first), nc, dev.stream);
                continue;
            }
            size_t offset = 0;
            for (int32_t r = 0; r < n; ++r) {
                size_t count = static_cast<size_t>(scatter_rows(d0, n, r)) * row_elems;
                if (count > 0)
                    lib_->call("ncclReduce", lib_->api->nccl_reduce, srcs[t] + offset * esz,
                               r == me ? outs[t] : nullptr, count, dtype, reduction_of(first), r,
                               nc, dev.stream);
                offset += count;
            }
        }
        group.end();
        settle(nc);
    }
    if (post == 1.0) return;
    for (size_t t = 0; t < reqs.size(); ++t)  // this member's rows of each tensor
        scale(dev, outs[t], outs[t],
              static_cast<size_t>(reqs[t]->owned_shape[0]) * row_elements_of(reqs[t]->input), dtype,
              post);
}

}  // namespace hvd::engine
