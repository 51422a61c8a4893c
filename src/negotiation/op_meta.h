// SPDX-License-Identifier: Apache-2.0
// What a rank tells the coordinator about one ready op, and what the coordinator answers:
// the messages of Horovod's name-based negotiation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/shape.h"

namespace hvd::negotiation {

using util::Shape;

enum class OpType : uint8_t {
    kAllreduce = 0,
    kAllgather = 1,
    kBroadcast = 2,
    kAlltoall = 3,
    kReducescatter = 4,
    kBarrier = 5,
    kProcessSetCreate = 6,   // negotiated on the global set; splits = the new set's ranks
    kProcessSetDestroy = 7,  // negotiated on the global set; root = the set's id
    kJoin = 8,
};
constexpr int kNumOpTypes = 9;
const char *op_type_name(OpType t);
// "ALLREDUCE": the name of the op's span on the timeline.
std::string upper_op_name(OpType t);

// One rank's description of a named op. Every field is compared across ranks.
struct OpMeta {
    std::string name;
    uint16_t set_id = 0;  // process set; 0 = all ranks
    OpType type = OpType::kAllreduce;
    int32_t dtype = 0;
    Shape shape;
    int32_t device_type = 1;
    // CUDA tensors (not compared across ranks): the device's identity (a hash of its UUID),
    // and whether this rank can run the op with NCCL (GPU module with NCCL, HVD_GPU_OPERATIONS).
    uint64_t device_key = 0;
    bool nccl_ok = false;
    int32_t reduce_op = 0;
    int32_t root = 0;
    double prescale = 1.0;
    double postscale = 1.0;
    std::vector<int32_t> splits;  // alltoall: rows for each member; set create: the ranks
    std::string group;            // grouped ops: the group's name; "" for a lone op
    int32_t group_size = 0;       // grouped ops: how many ops the group has
    // Allgather into a caller-owned output: its first dimension (-1: library-owned output),
    // and the row of that output where this rank's input starts (-1: input outside it). The
    // coordinator checks both against the members' first dimensions.
    int64_t out_rows = -1;
    int64_t in_row = -1;
};

// Data tags carry 20 bits of an op's sequence number: the coordinator numbers the ops it
// negotiates below kCachedSeqFlag, ops run from the response cache have it set, so the two
// never share a tag while both could be in flight.
constexpr uint32_t kCachedSeqFlag = 0x80000;
constexpr uint32_t kNegotiatedSeqLimit = kCachedSeqFlag - 1;

// Op types as bits (1 << type): which kinds of collective may run on the hosts' hierarchy.
constexpr uint32_t op_type_bit(OpType t) {
    return uint32_t{1} << static_cast<unsigned>(t);
}
constexpr uint32_t kAllOpTypes = (uint32_t{1} << kNumOpTypes) - 1;

}  // namespace hvd::negotiation

// The engine's request for an op: negotiation only carries it, opaque, from the point where
// the engine queues a response to the run.
namespace hvd::engine {
class Request;
}

namespace hvd::negotiation {

// The coordinator's verdict on one name, sent to every rank in the same order.
struct Response {
    std::string name;
    uint16_t set_id = 0;
    OpType type = OpType::kAllreduce;
    uint32_t seq = 0;     // tags of this collective's data messages
    int32_t status = 0;   // HVD_OK, or HVD_ERR_MISMATCH etc. for every rank
    std::string message;  // error detail
    // allgather: each member's first dimension; alltoall: the n x n split matrix, row
    // [sender][receiver]; process set create: the new set's id.
    std::vector<int64_t> first_dims;
    // Allreduce: the tensor's description, so that joined ranks (which never enqueued the
    // op) can take part with zeros.
    int32_t dtype = 0;
    Shape shape;
    int32_t reduce_op = 0;
    double prescale = 1.0;
    double postscale = 1.0;
    // The tensors' device type (hvd_device_type_t), and for CUDA tensors whether the op runs
    // on NCCL (every member able, each on its own GPU, none joined) or through host memory.
    int32_t device_type = 1;
    bool nccl = false;
    // CUDA tensors on NCCL: which devices the members use (a hash of their device keys in
    // member order), so that every member picks the same communicator.
    uint64_t devices_key = 0;
    // Tensor fusion: this allreduce runs as one collective with the next response (decided
    // by the coordinator, so every rank fuses the same way).
    bool fuse_next = false;
    // Response cache: the bit every rank keeps this op under (chosen by rank 0), -1 for none.
    int32_t cache_bit = -1;
    // Not sent: the group of a grouped op ("" for a lone op); the fusion planner fuses a
    // group's members only with each other.
    std::string group;
    // Not sent: >= 0 when the coordinator answers one rank alone (an error of that rank's).
    int32_t addressee = -1;
    // Not sent: the cache round after which this response must run (the largest after_round
    // of the reports that made it ready).
    uint64_t after_round = 0;
    // Not sent: whether the op may run on the hosts' hierarchy where the job has one (rank 0's
    // switch for its type, from the batch or cache round that put it in the agreed order).
    bool hierarchical = true;
    // Not sent: this rank's request for the op, found as the engine queued the response (null
    // where it has none, as on a rank that joined); never in the cache.
    std::shared_ptr<engine::Request> request;
};

// A rank's report of ops ready for negotiation. after_round: the cache round by which this
// rank has voted every cached op it enqueued before these, so that their responses can be
// ordered after those ops (cache_round.h).
struct ReadyReport {
    uint64_t after_round = 0;
    std::vector<OpMeta> metas;
};
std::string encode_ready(const ReadyReport &report);
ReadyReport decode_ready(const std::string &bytes);
// A message of coordinator responses for one rank. index: 1, 2, ... per recipient; stamp: the
// cache rounds rank 0 had started when it sent the batch (the batch runs after that round).
struct ResponseBatch {
    uint64_t index = 0;
    uint64_t stamp = 0;
    // The op types (op_type_bit) whose responses in this batch may run on the hosts' hierarchy.
    uint32_t hierarchical_ops = kAllOpTypes;
    std::vector<Response> responses;
};
std::string encode_batch(const ResponseBatch &batch);
ResponseBatch decode_batch(const std::string &bytes);

// "[4,3]"
std::string shape_string(const Shape &shape);
// "[0,2,3]"
std::string ranks_string(const std::vector<int32_t> &ranks);

}  // namespace hvd::negotiation
