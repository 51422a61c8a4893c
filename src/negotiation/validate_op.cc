// SPDX-License-Identifier: Apache-2.0
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

namespace {

bool has_tensor(OpType t) {
    return t == OpType::kAllreduce || t == OpType::kAllgather || t == OpType::kBroadcast ||
           t == OpType::kAlltoall || t == OpType::kReducescatter;
}

// "" if shape (of elements of esz bytes) has a size in bytes that fits, else why not.
std::string size_problem(const Shape &shape, int64_t esz) {
    int64_t bytes = 0;
    size_t bad = util::checked_size(shape.begin(), shape.end(), esz, &bytes);
    if (bad == util::kSizeFits) return "";
    if (shape[bad] < 0)
        return strprintf("dimension %zu is negative (%lld)", bad,
                         static_cast<long long>(shape[bad]));
    return strprintf("its size in bytes overflows a 64-bit integer at dimension %zu (%lld)", bad,
                     static_cast<long long>(shape[bad]));
}

// An output of `rows` rows of the members' trailing dimensions (ref's), from several members.
std::string output_problem(const OpMeta &ref, int64_t rows, int64_t esz) {
    Shape out = ref.shape;
    out[0] = rows;
    return size_problem(out, esz);
}

// Alltoall: every member's splits, one per member, none negative, within its first dimension;
// then the rows each member receives.
std::string check_alltoall(const std::vector<OpMeta> &by_member, const std::vector<int32_t> &ranks,
                           int64_t esz) {
    const OpMeta &ref = by_member[0];
    const size_t n = by_member.size();
    for (size_t i = 0; i < n; ++i) {
        const OpMeta &m = by_member[i];
        if (m.splits.size() != n)
            return strprintf("alltoall '%s': rank %d has %zu splits for a set of %zu ranks",
                             ref.name.c_str(), ranks[i], m.splits.size(), n);
        int64_t sent = 0;
        for (int32_t v : m.splits) {
            if (v < 0)
                return strprintf("alltoall '%s': rank %d has a negative split (%d)",
                                 ref.name.c_str(), ranks[i], v);
            sent += v;  // n int32 values: no overflow
        }
        if (sent > m.shape[0])
            return strprintf(
                "alltoall '%s': rank %d's splits add up to %lld rows, its tensor "
                "has %lld",
                ref.name.c_str(), ranks[i], static_cast<long long>(sent),
                static_cast<long long>(m.shape[0]));
    }
    for (size_t j = 0; j < n; ++j) {
        int64_t rows = 0;
        std::vector<int64_t> from(n);
        for (size_t i = 0; i < n; ++i) {
            from[i] = by_member[i].splits[j];
            rows += from[i];
        }
        std::string problem = output_problem(ref, rows, esz);
        if (!problem.empty())
            return strprintf(
                "alltoall '%s': rank %d would receive %lld rows (%s from ranks %s), "
                "an output too large: %s",
                ref.name.c_str(), ranks[j], static_cast<long long>(rows),
                shape_string(from).c_str(), ranks_string(ranks).c_str(), problem.c_str());
    }
    return "";
}

}  // namespace

std::string check_sizes(const std::vector<OpMeta> &by_member, const std::vector<int32_t> &ranks) {
    const OpMeta &ref = by_member[0];
    if (!has_tensor(ref.type)) return "";
    const int64_t esz = static_cast<int64_t>(dtype_size(ref.dtype));
    for (size_t i = 0; i < by_member.size(); ++i) {
        std::string problem = size_problem(by_member[i].shape, esz);
        if (!problem.empty())
            return strprintf("%s '%s': rank %d's shape %s: %s", op_type_name(ref.type),
                             ref.name.c_str(), ranks[i], shape_string(by_member[i].shape).c_str(),
                             problem.c_str());
    }
    if (ref.type == OpType::kAlltoall) {
        if (ref.shape.empty())
            return strprintf("alltoall '%s': a tensor of rank 0", ref.name.c_str());
        return check_alltoall(by_member, ranks, esz);
    }
    if (ref.type != OpType::kAllgather) return "";
    if (ref.shape.empty()) return strprintf("allgather '%s': a tensor of rank 0", ref.name.c_str());
    std::vector<int64_t> first_dims;
    int64_t rows = 0;
    bool overflow = false;
    for (const OpMeta &m : by_member) {
        first_dims.push_back(m.shape[0]);
        overflow = overflow || __builtin_add_overflow(rows, m.shape[0], &rows);
    }
    if (overflow)
        return strprintf(
            "allgather '%s': the first dimensions of ranks %s (%s) add up to more "
            "rows than a 64-bit integer holds",
            ref.name.c_str(), ranks_string(ranks).c_str(), shape_string(first_dims).c_str());
    std::string problem = output_problem(ref, rows, esz);
    if (!problem.empty())
        return strprintf(
            "allgather '%s': the output of %lld rows (the first dimensions of ranks "
            "%s: %s) is too large: %s",
            ref.name.c_str(), static_cast<long long>(rows), ranks_string(ranks).c_str(),
            shape_string(first_dims).c_str(), problem.c_str());
    return "";
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

std::string ranks_string(const std::vector<int32_t> &ranks) {
    std::vector<int64_t> wide(ranks.begin(), ranks.end());
    return shape_string(wide);
}

}  // namespace hvd::negotiation
