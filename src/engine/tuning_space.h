// SPDX-License-Identifier: Apache-2.0
// What autotune searches (engine/autotuner.h): the parameters it may change, and the unit cube
// the Bayesian optimiser sees them as. The fusion threshold (0 .. 128 MiB) and the cycle time
// (0 .. 5 ms) are continuous, on log scales that include 0; the response cache (on: the
// capacity it started with, off: 0) and each hierarchical algorithm of a job that spans hosts
// are switches, as Horovod tunes them. A parameter the user set explicitly (its HVD_* or
// HOROVOD_* variable) is held, as Horovod holds it: it keeps its value and is no dimension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/hierarchy.h"
#include "config/settings.h"
#include "negotiation/op_meta.h"

namespace hvd::engine {

struct TunedParams {
    int64_t fusion_threshold_bytes = 0;
    int64_t cycle_time_us = 0;
    int64_t cache_capacity = 0;
    // The kinds of collective (negotiation::op_type_bit) that may run on the hosts' hierarchy.
    uint32_t hierarchical_ops = negotiation::kAllOpTypes;
    bool operator==(const TunedParams &o) const {
        return fusion_threshold_bytes == o.fusion_threshold_bytes &&
               cycle_time_us == o.cycle_time_us && cache_capacity == o.cache_capacity &&
               hierarchical_ops == o.hierarchical_ops;
    }
};

// A hierarchical algorithm autotune switches on and off: the collective it runs, the setting
// that holds the switch when set explicitly, its name in logs, and the hierarchy's size from
// which it runs (kHierarchyOff: it does not apply to the job's hosts).
struct HierarchicalSwitch {
    negotiation::OpType op;
    config::Setting setting;
    const char *name;
    size_t collectives::Hierarchy::*min_bytes;
};

// Every collective with a hierarchical algorithm that autotune switches, one entry each.
const std::vector<HierarchicalSwitch> &hierarchical_switches();

// The op_type_bit of each switch whose algorithm applies to the hosts of `hierarchy` (0 where
// it is null).
uint32_t hierarchical_available(const collectives::Hierarchy *hierarchy);

// Which hierarchical algorithms the mask lets run, by name, joined by '+' ("none" for none).
std::string hierarchical_names(uint32_t hierarchical_ops);

// What a search covers.
struct TuningChoices {
    bool fusion = true;
    bool cycle = true;
    int64_t cache_capacity_on = 0;  // the capacity "on" stands for; 0: the cache is held
    uint32_t hierarchical_ops = 0;  // the switches searched (op_type_bit); 0: none
};

// The choices of a search on rank 0 of a job: a parameter is held where its setting is set
// explicitly, the cache where it has no capacity to switch on, and the hierarchical switch of
// each op type outside `hierarchical_available` (op_type_bit of the types whose hierarchical
// algorithm applies to this job's hosts).
TuningChoices tuning_choices(int64_t cache_capacity_on, uint32_t hierarchical_available);

class TuningSpace {
  public:
    static constexpr int64_t kMaxFusionBytes = int64_t{128} << 20;
    static constexpr int64_t kMaxCycleUs = 5000;

    // base: the values of the held parameters (and where the search starts).
    TuningSpace(const TuningChoices &choices, const TunedParams &base);

    size_t dims() const { return axes_.size(); }
    // Per dimension: 0 continuous, 2 a switch (BayesianOptimizer's levels).
    std::vector<int> levels() const;
    TunedParams params(const std::vector<double> &x) const;
    // The nearest point of the cube (values outside the ranges are clamped).
    std::vector<double> point(const TunedParams &p) const;
    // The points of autotune's grid search in the cube, in search order (the last dimension
    // varies fastest): fusion threshold 0, 1, 4, 16, 64 and 128 MiB; cycle time 0, 0.5, 1,
    // 2.5 and 5 ms; each switch off, then on. One point (the base) when no dimension is left.
    std::vector<std::vector<double>> grid() const;
    // "fusion threshold, cycle time, response cache, hierarchical allreduce": the dimensions.
    std::string describe() const;

  private:
    enum class Axis { kFusion, kCycle, kCache, kHierarchical };
    struct Dimension {
        Axis axis;
        uint32_t op_bit = 0;  // kHierarchical: the switch's op_type_bit
    };

    std::vector<Dimension> axes_;
    TunedParams base_;
    int64_t cache_capacity_on_;
};

}  // namespace hvd::engine
