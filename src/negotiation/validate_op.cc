#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"
#include "negotiation/coordinator.h"

namespace hvd::negotiation {

namespace {

// Compares one member's description with the first member's and words the difference as
// "<op> '<name>': rank <r> has <what> <theirs>, rank <r0> has <what> <ours>".
class Comparison {
  public:
    Comparison(const OpMeta &ref, int32_t ref_rank, const OpMeta &m, int32_t rank)
        : ref_(ref), ref_rank_(ref_rank), m_(m), rank_(rank) {}

    std::string run() const;

  private:
    std::string differ(const char *what, const std::string &theirs, const std::string &ours) const {
        return strprintf("%s '%s': rank %d has %s %s, rank %d has %s %s", op_type_name(ref_.type),
                         ref_.name.c_str(), rank_, what, theirs.c_str(), ref_rank_, what,
                         ours.c_str());
    }
    std::string same_shape() const {
        return m_.shape == ref_.shape
                   ? ""
                   : differ("shape", shape_string(m_.shape), shape_string(ref_.shape));
    }
    std::string same_trailing_dims() const;
    std::string same_reduction() const;

    const OpMeta &ref_;
    int32_t ref_rank_;
    const OpMeta &m_;
    int32_t rank_;
};

std::string dims_from_second(const Shape &shape) {
    if (shape.empty()) return "[]";
    return shape_string(std::vector<int64_t>(shape.begin() + 1, shape.end()));
}

std::string ranks_string(const std::vector<int32_t> &ranks) {
    std::vector<int64_t> wide(ranks.begin(), ranks.end());
    return shape_string(wide);
}

std::string Comparison::same_trailing_dims() const {
    if (m_.shape.size() != ref_.shape.size())
        return differ("rank (ndim)", std::to_string(m_.shape.size()),
                      std::to_string(ref_.shape.size()));
    if (dims_from_second(m_.shape) != dims_from_second(ref_.shape))
        return differ("trailing dimensions", dims_from_second(m_.shape),
                      dims_from_second(ref_.shape));
    return "";
}

std::string Comparison::same_reduction() const {
    if (m_.reduce_op != ref_.reduce_op)
        return differ("reduce op", reduce_op_name(m_.reduce_op), reduce_op_name(ref_.reduce_op));
    if (m_.prescale != ref_.prescale)
        return differ("prescale factor", strprintf("%g", m_.prescale),
                      strprintf("%g", ref_.prescale));
    if (m_.postscale != ref_.postscale)
        return differ("postscale factor", strprintf("%g", m_.postscale),
                      strprintf("%g", ref_.postscale));
    return "";
}

std::string Comparison::run() const {
    if (m_.type != ref_.type)
        return differ("operation", op_type_name(m_.type), op_type_name(ref_.type));
    if (m_.group_size != ref_.group_size)
        return differ("group size", std::to_string(m_.group_size), std::to_string(ref_.group_size));
    bool has_tensor = ref_.type != OpType::kBarrier && ref_.type != OpType::kProcessSetCreate &&
                      ref_.type != OpType::kProcessSetDestroy && ref_.type != OpType::kJoin;
    if (has_tensor && m_.dtype != ref_.dtype)
        return differ("dtype", dtype_name(m_.dtype), dtype_name(ref_.dtype));
    if (has_tensor && m_.device_type != ref_.device_type)
        return differ("device type", std::to_string(m_.device_type),
                      std::to_string(ref_.device_type));
    std::string d;
    switch (ref_.type) {
        case OpType::kAllreduce:
        case OpType::kReducescatter:
            d = same_shape();
            return d.empty() ? same_reduction() : d;
        case OpType::kAllgather:
        case OpType::kAlltoall:
            return same_trailing_dims();
        case OpType::kBroadcast:
            if (m_.root != ref_.root)
                return differ("root rank", std::to_string(m_.root), std::to_string(ref_.root));
            return same_shape();
        case OpType::kProcessSetCreate:
            if (m_.splits != ref_.splits)
                return differ("ranks", ranks_string(m_.splits), ranks_string(ref_.splits));
            return "";
        case OpType::kProcessSetDestroy:
            if (m_.root != ref_.root)
                return differ("process set", std::to_string(m_.root), std::to_string(ref_.root));
            return "";
        case OpType::kBarrier:
        case OpType::kJoin:
            return "";
    }
    return "";
}

}  // namespace

std::string validate_op(const std::vector<OpMeta> &by_member, const std::vector<int32_t> &ranks) {
    std::string all;
    for (size_t i = 1; i < by_member.size(); ++i) {
        std::string d = Comparison(by_member[0], ranks[0], by_member[i], ranks[i]).run();
        if (d.empty()) continue;
        if (!all.empty()) all += "; ";
        all += d;
    }
    return all;
}

std::string check_gather_outputs(const std::vector<OpMeta> &by_member,
                                 const std::vector<int32_t> &ranks,
                                 const std::vector<int64_t> &first_dims) {
    int64_t total = 0;
    for (int64_t d : first_dims)
        total += d;
    int64_t before = 0;  // rows of the members before member i
    for (size_t i = 0; i < by_member.size(); ++i) {
        const OpMeta &m = by_member[i];
        if (m.out_rows >= 0 && m.out_rows != total)
            return strprintf(
                "%s '%s': rank %d's output has %lld rows, the inputs of ranks %s "
                "add up to %lld (%s)",
                op_type_name(m.type), m.name.c_str(), ranks[i], static_cast<long long>(m.out_rows),
                ranks_string(ranks).c_str(), static_cast<long long>(total),
                shape_string(first_dims).c_str());
        if (m.in_row >= 0 && m.in_row != before)
            return strprintf(
                "%s '%s': rank %d's input lies in its output from row %lld; in place "
                "it must start at row %lld, after the rows of the ranks before it",
                op_type_name(m.type), m.name.c_str(), ranks[i], static_cast<long long>(m.in_row),
                static_cast<long long>(before));
        before += first_dims[i];
    }
    return "";
}

}  // namespace hvd::negotiation
