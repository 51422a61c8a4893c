// SPDX-License-Identifier: Apache-2.0
// Autotune as the engine runs it (HVD_AUTOTUNE=1): the coordinator's Autotuner searches the
// fusion threshold, cycle time, response cache switch and (in a job that spans hosts) the
// hierarchical algorithms' switches from the bytes the collectives carry, starting from the
// configuration in force and holding what the user set explicitly (engine/tuning_space.h).
// Every rank applies each point the coordinator chose, in the same order, when its message
// arrives. The cache capacity and the hierarchical switches matter on rank 0 only: it assigns
// the cache's entries, and its switches travel with every batch of responses and every cache
// round (negotiation::ResponseBatch, RoundVote), so every rank switches an algorithm at the
// same op. With HVD_AUTOTUNE_LOG every rank records what it applied in <log>.<rank> as
// "epoch,fusion_threshold_bytes,cycle_time_ms,cache_capacity,hierarchical" (rank 0 logs its
// samples to <log> itself): the files show that every rank followed the same sequence. Engine
// thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/runtime_config.h"
#include "engine/autotuner.h"
#include "engine/control_channel.h"

namespace hvd::engine {

class Tuner {
  public:
    // Borrowed, outlive the tuner.
    Tuner(int32_t rank, int32_t size, config::RuntimeConfig *config)
        : rank_(rank), size_(size), config_(config) {}

    // Coordinator only, once per pass: starts the search when HVD_AUTOTUNE turned on, stops
    // it when it turned off (the parameters chosen so far stay), and when a sample ends
    // applies the next point here and sends it to every other rank.
    void step(ControlChannel &control);
    // op_type_bit of the op types whose hierarchical algorithm applies to the job's hosts
    // (tuning_space.h's hierarchical_available): only their switches are searched. Before the
    // first step().
    void set_hierarchical_available(uint32_t ops) { hierarchical_available_ = ops; }
    // Whether collectives should be recorded (a search is running on this rank).
    bool searching() const { return autotuner_ != nullptr; }
    // A collective that carried `bytes` of tensor data ran (only while searching()).
    void record(uint64_t bytes) { autotuner_->record(bytes); }
    // Applies the point in a kTuneMessage from the coordinator. Throws
    // hvd::Error(HVD_ERR_TRANSPORT) on a malformed message.
    void receive(const std::string &payload);

  private:
    void apply(const TunedParams &p, uint64_t epoch);

    const int32_t rank_;
    const int32_t size_;
    config::RuntimeConfig *config_;
    std::unique_ptr<Autotuner> autotuner_;  // coordinator, while HVD_AUTOTUNE is 1
    uint64_t epoch_ = 0;
    int64_t cache_capacity_on_ = 0;  // the last nonzero capacity a search started from
    uint32_t hierarchical_available_ = 0;
};

}  // namespace hvd::engine
