#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"
#include "engine/coordinator.h"

namespace hvd::engine {

namespace {

// "<op> '<name>': rank <r> has <what> <theirs>, rank 0 has <what> <ours>"
std::string disagreement(const OpMeta &ref, size_t r, const char *what, const std::string &theirs,
                         const std::string &ours) {
    return strprintf("%s '%s': rank %zu has %s %s, rank 0 has %s %s", op_type_name(ref.type),
                     ref.name.c_str(), r, what, theirs.c_str(), what, ours.c_str());
}

std::string dims_from_second(const std::vector<int64_t> &shape) {
    if (shape.empty()) return "[]";
    return shape_string(std::vector<int64_t>(shape.begin() + 1, shape.end()));
}

std::string compare(const OpMeta &ref, const OpMeta &m, size_t r) {
    if (m.type != ref.type)
        return disagreement(ref, r, "operation", op_type_name(m.type), op_type_name(ref.type));
    if (m.dtype != ref.dtype)
        return disagreement(ref, r, "dtype", dtype_name(m.dtype), dtype_name(ref.dtype));
    if (m.device_type != ref.device_type)
        return disagreement(ref, r, "device type", std::to_string(m.device_type),
                            std::to_string(ref.device_type));
    switch (ref.type) {
        case OpType::kAllreduce:
            if (m.shape != ref.shape)
                return disagreement(ref, r, "shape", shape_string(m.shape),
                                    shape_string(ref.shape));
            if (m.reduce_op != ref.reduce_op)
                return disagreement(ref, r, "reduce op", reduce_op_name(m.reduce_op),
                                    reduce_op_name(ref.reduce_op));
            if (m.prescale != ref.prescale)
                return disagreement(ref, r, "prescale factor", strprintf("%g", m.prescale),
                                    strprintf("%g", ref.prescale));
            if (m.postscale != ref.postscale)
                return disagreement(ref, r, "postscale factor", strprintf("%g", m.postscale),
                                    strprintf("%g", ref.postscale));
            break;
        case OpType::kAllgather:
            if (m.shape.size() != ref.shape.size())
                return disagreement(ref, r, "rank (ndim)", std::to_string(m.shape.size()),
                                    std::to_string(ref.shape.size()));
            if (dims_from_second(m.shape) != dims_from_second(ref.shape))
                return disagreement(ref, r, "trailing dimensions", dims_from_second(m.shape),
                                    dims_from_second(ref.shape));
            break;
        case OpType::kBroadcast:
            if (m.root != ref.root)
                return disagreement(ref, r, "root rank", std::to_string(m.root),
                                    std::to_string(ref.root));
            if (m.shape != ref.shape)
                return disagreement(ref, r, "shape", shape_string(m.shape),
                                    shape_string(ref.shape));
            break;
    }
    return "";
}

}  // namespace

std::string validate_op(const std::vector<OpMeta> &by_rank) {
    const OpMeta &ref = by_rank[0];
    std::string all;
    for (size_t r = 1; r < by_rank.size(); ++r) {
        std::string d = compare(ref, by_rank[r], r);
        if (d.empty()) continue;
        if (!all.empty()) all += "; ";
        all += d;
    }
    return all;
}

}  // namespace hvd::engine
