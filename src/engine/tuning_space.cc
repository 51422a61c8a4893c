// SPDX-License-Identifier: Apache-2.0
#include "engine/tuning_space.h"

#include <algorithm>
#include <cmath>

#include "config/read.h"

namespace hvd::engine {

namespace {

// Log scales that include 0: v = s (2^(x log2(1 + max / s)) - 1) for x in [0, 1], with s
// the step below which values count as about equal.
constexpr double kFusionScaleBytes = 64.0 * 1024.0;
constexpr double kCycleScaleUs = 50.0;

double from_unit(double x, double scale, double max) {
    return scale * (std::exp2(x * std::log2(1.0 + max / scale)) - 1.0);
}

double to_unit(double v, double scale, double max) {
    v = std::min(max, std::max(0.0, v));
    return std::log2(1.0 + v / scale) / std::log2(1.0 + max / scale);
}

bool set_explicitly(config::Setting s) {
    return config::env_value(s) != nullptr;
}

}  // namespace

const std::vector<HierarchicalSwitch> &hierarchical_switches() {
    static const std::vector<HierarchicalSwitch> table{
        {negotiation::OpType::kAllreduce, config::Setting::kHierarchicalAllreduce, "allreduce",
         &collectives::Hierarchy::allreduce_min_bytes},
        {negotiation::OpType::kAllgather, config::Setting::kHierarchicalAllgather, "allgather",
         &collectives::Hierarchy::allgather_min_bytes},
    };
    return table;
}

uint32_t hierarchical_available(const collectives::Hierarchy *hierarchy) {
    uint32_t available = 0;
    for (const HierarchicalSwitch &s : hierarchical_switches())
        if (hierarchy != nullptr && hierarchy->*s.min_bytes != collectives::kHierarchyOff)
            available |= negotiation::op_type_bit(s.op);
    return available;
}

std::string hierarchical_names(uint32_t hierarchical_ops) {
    std::string names;
    for (const HierarchicalSwitch &s : hierarchical_switches()) {
        if ((hierarchical_ops & negotiation::op_type_bit(s.op)) == 0) continue;
        names += (names.empty() ? "" : "+") + std::string(s.name);
    }
    return names.empty() ? "none" : names;
}

TuningChoices tuning_choices(int64_t cache_capacity_on, uint32_t hierarchical_available) {
    TuningChoices c;
    c.fusion = !set_explicitly(config::Setting::kFusionThreshold);
    c.cycle = !set_explicitly(config::Setting::kCycleTime);
    c.cache_capacity_on = set_explicitly(config::Setting::kCacheCapacity) ? 0 : cache_capacity_on;
    for (const HierarchicalSwitch &s : hierarchical_switches()) {
        const uint32_t bit = negotiation::op_type_bit(s.op);
        if ((hierarchical_available & bit) != 0 && !set_explicitly(s.setting))
            c.hierarchical_ops |= bit;
    }
    return c;
}

TuningSpace::TuningSpace(const TuningChoices &choices, const TunedParams &base)
    : base_(base), cache_capacity_on_(choices.cache_capacity_on) {
    if (choices.fusion) axes_.push_back({Axis::kFusion});
    if (choices.cycle) axes_.push_back({Axis::kCycle});
    if (choices.cache_capacity_on > 0) axes_.push_back({Axis::kCache});
    for (const HierarchicalSwitch &s : hierarchical_switches()) {
        const uint32_t bit = negotiation::op_type_bit(s.op);
        if ((choices.hierarchical_ops & bit) != 0) axes_.push_back({Axis::kHierarchical, bit});
    }
}

std::vector<int> TuningSpace::levels() const {
    std::vector<int> levels;
    for (const Dimension &d : axes_)
        levels.push_back(d.axis == Axis::kFusion || d.axis == Axis::kCycle ? 0 : 2);
    return levels;
}

TunedParams TuningSpace::params(const std::vector<double> &x) const {
    TunedParams p = base_;
    for (size_t i = 0; i < axes_.size(); ++i) {
        const bool on = x[i] > 0.5;
        switch (axes_[i].axis) {
            case Axis::kFusion:
                p.fusion_threshold_bytes = std::llround(
                    from_unit(x[i], kFusionScaleBytes, static_cast<double>(kMaxFusionBytes)));
                break;
            case Axis::kCycle:
                p.cycle_time_us =
                    std::llround(from_unit(x[i], kCycleScaleUs, static_cast<double>(kMaxCycleUs)));
                break;
            case Axis::kCache:
                p.cache_capacity = on ? cache_capacity_on_ : 0;
                break;
            case Axis::kHierarchical:
                p.hierarchical_ops = on ? p.hierarchical_ops | axes_[i].op_bit
                                        : p.hierarchical_ops & ~axes_[i].op_bit;
                break;
        }
    }
    return p;
}

std::vector<double> TuningSpace::point(const TunedParams &p) const {
    std::vector<double> x;
    for (const Dimension &d : axes_) {
        switch (d.axis) {
            case Axis::kFusion:
                x.push_back(to_unit(static_cast<double>(p.fusion_threshold_bytes),
                                    kFusionScaleBytes, static_cast<double>(kMaxFusionBytes)));
                break;
            case Axis::kCycle:
                x.push_back(to_unit(static_cast<double>(p.cycle_time_us), kCycleScaleUs,
                                    static_cast<double>(kMaxCycleUs)));
                break;
            case Axis::kCache:
                x.push_back(p.cache_capacity > 0 ? 1.0 : 0.0);
                break;
            case Axis::kHierarchical:
                x.push_back((p.hierarchical_ops & d.op_bit) != 0 ? 1.0 : 0.0);
                break;
        }
    }
    return x;
}

std::vector<std::vector<double>> TuningSpace::grid() const {
    constexpr int64_t kMiB = int64_t{1} << 20;
    static const int64_t kFusionBytes[] = {0, kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 128 * kMiB};
    static const int64_t kCycleUs[] = {0, 500, 1000, 2500, 5000};
    std::vector<std::vector<double>> values;  // per dimension, in the cube
    for (const Dimension &d : axes_) {
        std::vector<double> v;
        if (d.axis == Axis::kFusion) {
            for (int64_t b : kFusionBytes)
                v.push_back(to_unit(static_cast<double>(b), kFusionScaleBytes,
                                    static_cast<double>(kMaxFusionBytes)));
        } else if (d.axis == Axis::kCycle) {
            for (int64_t us : kCycleUs)
                v.push_back(to_unit(static_cast<double>(us), kCycleScaleUs,
                                    static_cast<double>(kMaxCycleUs)));
        } else {
            v = {0.0, 1.0};
        }
        values.push_back(std::move(v));
    }
    std::vector<std::vector<double>> points{{}};
    for (const std::vector<double> &v : values) {
        std::vector<std::vector<double>> longer;
        for (const std::vector<double> &p : points)
            for (double x : v) {
                longer.push_back(p);
                longer.back().push_back(x);
            }
        points.swap(longer);
    }
    return points;
}

std::string TuningSpace::describe() const {
    std::string out;
    for (const Dimension &d : axes_) {
        std::string name;
        switch (d.axis) {
            case Axis::kFusion:
                name = "fusion threshold";
                break;
            case Axis::kCycle:
                name = "cycle time";
                break;
            case Axis::kCache:
                name = "response cache";
                break;
            case Axis::kHierarchical:
                name = "hierarchical " + hierarchical_names(d.op_bit);
                break;
        }
        out += (out.empty() ? "" : ", ") + name;
    }
    return out;
}

}  // namespace hvd::engine
