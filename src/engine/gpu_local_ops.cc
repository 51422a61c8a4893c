// SPDX-License-Identifier: Apache-2.0
// The host path of GpuRunner for a set of one member: what its collectives leave is a copy of
// the member's own tensor, scaled, so it stays on the device (a copy or a scale kernel on the
// device's stream) instead of going to pinned host memory and back. The results are the host
// path's: the prescale, then the postscale (Average's 1/1 included), each rounded to the dtype.
#include "engine/gpu_runner.h"
#include "engine/op_math.h"

namespace hvd::engine {

void GpuRunner::copy_scaled(gpu::DeviceState &dev, void *dst, const void *src, size_t bytes,
                            int32_t dtype, double pre, double post) {
    if (bytes == 0) return;
    const size_t count = bytes / dtype_size(dtype);
    if (pre != 1.0)
        scale(dev, dst, src, count, dtype, pre);
    else if (dst != src)
        lib_->call("cudaMemcpyAsync", lib_->api->copy_async, dev.device, dst, src, bytes,
                   dev.stream);
    if (post != 1.0) scale(dev, dst, dst, count, dtype, post);
}

void GpuRunner::queue_local(const Response *resps, const std::vector<RequestPtr> &reqs,
                            gpu::DeviceState &dev) {
    for (size_t t = 0; t < reqs.size(); ++t) {
        Request &r = *reqs[t];
        const TensorRef &in = r.input;
        const size_t row_bytes = row_bytes_of(in);
        switch (resps[t].type) {
            case OpType::kAllreduce:
                copy_scaled(dev, r.output.data, in.data, in.bytes(), in.dtype, r.meta.prescale,
                            postscale_of(r, 1));
                break;
            case OpType::kBroadcast:
                copy_scaled(dev, r.output.data, in.data, in.bytes(), in.dtype, 1.0, 1.0);
                break;
            case OpType::kAllgather: {  // into the caller's output, or one the library owns
                const bool into = r.meta.out_rows >= 0;
                if (!into) r.owned_shape = in.shape;
                void *out = into ? r.output.data : owned_device_output(r, dev, in.bytes());
                copy_scaled(dev, out, in.data, in.bytes(), in.dtype, 1.0, 1.0);
                break;
            }
            case OpType::kAlltoall: {  // the rows it sends itself; those past the splits stay
                const int64_t rows = resps[t].first_dims.at(0);
                r.received_splits.assign(1, static_cast<int32_t>(rows));
                r.owned_shape = in.shape;
                r.owned_shape[0] = rows;
                const size_t bytes = static_cast<size_t>(rows) * row_bytes;
                copy_scaled(dev, owned_device_output(r, dev, bytes), in.data, bytes, in.dtype, 1.0,
                            1.0);
                break;
            }
            case OpType::kReducescatter:
                r.owned_shape = in.shape;
                copy_scaled(dev, owned_device_output(r, dev, in.bytes()), in.data, in.bytes(),
                            in.dtype, r.meta.prescale, postscale_of(r, 1));
                break;
            default:
                throw Error(HVD_ERR_INTERNAL,
                            strprintf("rank %d: %s '%s' has no path for a set of one rank", rank_,
                                      op_type_name(resps[t].type), r.meta.name.c_str()));
        }
    }
}

}  // namespace hvd::engine
