// What a rank tells the coordinator about one ready op, and what the coordinator answers:
// the messages of Horovod's name-based negotiation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvd::engine {

enum class OpType : uint8_t { kAllreduce = 0, kAllgather = 1, kBroadcast = 2 };
const char *op_type_name(OpType t);

// One rank's description of a named op. Every field is compared across ranks.
struct OpMeta {
    std::string name;
    OpType type = OpType::kAllreduce;
    int32_t dtype = 0;
    std::vector<int64_t> shape;
    int32_t device_type = 1;
    int32_t reduce_op = 0;
    int32_t root = 0;
    double prescale = 1.0;
    double postscale = 1.0;
};

// The coordinator's verdict on one name, sent to every rank in the same order.
struct Response {
    std::string name;
    OpType type = OpType::kAllreduce;
    uint32_t seq = 0;                 // tags of this collective's data messages
    int32_t status = 0;               // HVD_OK, or HVD_ERR_MISMATCH etc. for every rank
    std::string message;              // error detail
    std::vector<int64_t> first_dims;  // allgather: each rank's first dimension
};

// Encoding of the two control messages.
std::string encode_ready(const std::vector<OpMeta> &metas);
std::vector<OpMeta> decode_ready(const std::string &bytes);
std::string encode_responses(const std::vector<Response> &responses);
std::vector<Response> decode_responses(const std::string &bytes);

// "[4,3]"
std::string shape_string(const std::vector<int64_t> &shape);

}  // namespace hvd::engine
