// SPDX-License-Identifier: Apache-2.0
#include "negotiation/op_meta.h"

#include <cctype>

#include "negotiation/response_cache.h"
#include "util/wire.h"

namespace hvd::negotiation {

using util::WireReader;
using util::WireWriter;

const char *op_type_name(OpType t) {
    switch (t) {
        case OpType::kAllreduce:
            return "allreduce";
        case OpType::kAllgather:
            return "allgather";
        case OpType::kBroadcast:
            return "broadcast";
        case OpType::kAlltoall:
            return "alltoall";
        case OpType::kReducescatter:
            return "reducescatter";
        case OpType::kBarrier:
            return "barrier";
        case OpType::kProcessSetCreate:
            return "process_set_create";
        case OpType::kProcessSetDestroy:
            return "process_set_destroy";
        case OpType::kJoin:
            return "join";
    }
    return "unknown";
}

std::string upper_op_name(OpType t) {
    std::string s = op_type_name(t);
    for (char &c : s)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

std::string shape_string(const Shape &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ",";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

namespace {

// Most entries a shape, split list or first-dimension list may have on the wire.
constexpr uint64_t kMaxListEntries = UINT64_C(1) << 24;

// A shape or a std::vector<int64_t> of dimensions.
template <class Dims>
void write_dims(WireWriter &w, const Dims &dims) {
    w.array(dims.data(), dims.size());
}

std::vector<int64_t> read_dims(WireReader &r) {
    return r.array<int64_t>(kMaxListEntries, "dimensions");
}

OpType read_op_type(WireReader &r) {
    uint8_t t = r.u8();
    if (t >= kNumOpTypes) throw Error(HVD_ERR_TRANSPORT, "malformed control message (op type)");
    return static_cast<OpType>(t);
}

}  // namespace

std::string encode_ready(const ReadyReport &report) {
    WireWriter w;
    w.u64(report.after_round);
    w.u64(report.metas.size());
    for (const OpMeta &m : report.metas) {
        w.str(m.name);
        w.i32(m.set_id);
        w.u8(static_cast<uint8_t>(m.type));
        w.i32(m.dtype);
        write_dims(w, m.shape);
        w.i32(m.device_type);
        w.u64(m.device_key);
        w.u8(m.nccl_ok ? 1 : 0);
        w.i32(m.reduce_op);
        w.i32(m.root);
        w.f64(m.prescale);
        w.f64(m.postscale);
        w.array(m.splits.data(), m.splits.size());
        w.str(m.group);
        w.i32(m.group_size);
        w.i64(m.out_rows);
        w.i64(m.in_row);
    }
    return std::move(w.bytes());
}

ReadyReport decode_ready(const std::string &bytes) {
    WireReader r(bytes);
    ReadyReport report;
    report.after_round = r.u64();
    uint64_t n = r.u64();
    std::vector<OpMeta> &metas = report.metas;
    for (uint64_t i = 0; i < n; ++i) {
        OpMeta m;
        m.name = r.str();
        m.set_id = static_cast<uint16_t>(r.i32());
        m.type = read_op_type(r);
        m.dtype = r.i32();
        m.shape = read_dims(r);
        m.device_type = r.i32();
        m.device_key = r.u64();
        m.nccl_ok = r.u8() != 0;
        m.reduce_op = r.i32();
        m.root = r.i32();
        m.prescale = r.f64();
        m.postscale = r.f64();
        m.splits = r.array<int32_t>(kMaxListEntries, "splits");
        m.group = r.str();
        m.group_size = r.i32();
        m.out_rows = r.i64();
        m.in_row = r.i64();
        metas.push_back(std::move(m));
    }
    return report;
}

std::string encode_batch(const ResponseBatch &batch) {
    WireWriter w;
    w.u64(batch.index);
    w.u64(batch.stamp);
    w.u32(batch.hierarchical_ops);
    w.u64(batch.responses.size());
    for (const Response &resp : batch.responses) {
        w.str(resp.name);
        w.i32(resp.set_id);
        w.u8(static_cast<uint8_t>(resp.type));
        w.u64(resp.seq);
        w.i32(resp.status);
        w.str(resp.message);
        write_dims(w, resp.first_dims);
        w.i32(resp.dtype);
        write_dims(w, resp.shape);
        w.i32(resp.reduce_op);
        w.f64(resp.prescale);
        w.f64(resp.postscale);
        w.i32(resp.device_type);
        w.u8(resp.nccl ? 1 : 0);
        w.u64(resp.devices_key);
        w.u8(resp.fuse_next ? 1 : 0);
        w.i32(resp.cache_bit);
        // Every rank plans the fusion of cached responses itself (run_round): each needs the
        // group a response belongs to, as rank 0 has it.
        w.str(resp.group);
    }
    return std::move(w.bytes());
}

ResponseBatch decode_batch(const std::string &bytes) {
    WireReader r(bytes);
    ResponseBatch batch;
    batch.index = r.u64();
    batch.stamp = r.u64();
    batch.hierarchical_ops = r.u32();
    uint64_t n = r.u64();
    std::vector<Response> &out = batch.responses;
    for (uint64_t i = 0; i < n; ++i) {
        Response resp;
        resp.name = r.str();
        resp.set_id = static_cast<uint16_t>(r.i32());
        resp.type = read_op_type(r);
        resp.seq = static_cast<uint32_t>(r.u64());
        resp.status = r.i32();
        resp.message = r.str();
        resp.first_dims = read_dims(r);
        resp.dtype = r.i32();
        resp.shape = read_dims(r);
        resp.reduce_op = r.i32();
        resp.prescale = r.f64();
        resp.postscale = r.f64();
        resp.device_type = r.i32();
        resp.nccl = r.u8() != 0;
        resp.devices_key = r.u64();
        resp.fuse_next = r.u8() != 0;
        resp.cache_bit = r.i32();
        if (resp.cache_bit < -1 || resp.cache_bit >= static_cast<int32_t>(ResponseCache::kMaxBits))
            throw Error(HVD_ERR_TRANSPORT, "malformed control message (cache bit)");
        resp.group = r.str();
        out.push_back(std::move(resp));
    }
    return batch;
}

}  // namespace hvd::negotiation
