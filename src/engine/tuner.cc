// SPDX-License-Identifier: Apache-2.0
#include "engine/tuner.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/log.h"
#include "config/read.h"
#include "negotiation/control_tags.h"
#include "util/wire.h"

namespace hvd::engine {

namespace {

Autotuner::Search search_of(int32_t rank) {
    const char *v = config::get_string(config::Setting::kAutotuneSearch);
    if (v == nullptr || std::strcmp(v, "bayesian") == 0) return Autotuner::Search::kBayesian;
    if (std::strcmp(v, "grid") == 0) return Autotuner::Search::kGrid;
    HVD_LOG(kWarning, rank, "ignoring HVD_AUTOTUNE_SEARCH=%s (bayesian or grid): bayesian", v);
    return Autotuner::Search::kBayesian;
}

}  // namespace

void Tuner::step(ControlChannel &control) {
    if (config_->autotune.load() == 0) {
        autotuner_.reset();  // the parameters chosen so far stay
        return;
    }
    if (!autotuner_) {
        const char *log = config::get_string(config::Setting::kAutotuneLog);
        Autotuner::Options o;
        o.search = search_of(rank_);
        o.log_path = log != nullptr ? log : "";
        o.warmup_samples =
            static_cast<int32_t>(config::get_int(config::Setting::kAutotuneWarmupSamples));
        o.steps_per_sample =
            static_cast<int32_t>(config::get_int(config::Setting::kAutotuneStepsPerSample));
        o.max_points =
            static_cast<int32_t>(config::get_int(config::Setting::kAutotuneBayesOptMaxSamples));
        o.noise = config::get_double(config::Setting::kAutotuneGaussianProcessNoise);
        o.start = TunedParams{config_->fusion_threshold_bytes.load(), config_->cycle_time_us.load(),
                              config_->cache_capacity.load(), config_->hierarchical_ops.load()};
        // A search that switched the cache off leaves the capacity at 0: the next one may
        // still switch it on again.
        if (o.start.cache_capacity > 0) cache_capacity_on_ = o.start.cache_capacity;
        o.choices = tuning_choices(cache_capacity_on_, hierarchical_available_);
        autotuner_ = std::make_unique<Autotuner>(o);
        if (autotuner_->space().dims() == 0)
            HVD_LOG(kInfo, rank_,
                    "autotune: every setting it tunes is set explicitly: nothing to search");
        else
            HVD_LOG(kInfo, rank_, "autotune: %s search of %s over %d points",
                    o.search == Autotuner::Search::kGrid ? "grid" : "Bayesian",
                    autotuner_->space().describe().c_str(), autotuner_->max_points());
    } else if (!autotuner_->tick(std::chrono::steady_clock::now())) {
        return;
    }
    const TunedParams &p = autotuner_->current();
    if (autotuner_->done())
        HVD_LOG(kInfo, rank_,
                "autotune: chose fusion threshold %lld bytes, cycle time %.3f ms, cache capacity "
                "%lld, hierarchical %s",
                static_cast<long long>(p.fusion_threshold_bytes), p.cycle_time_us / 1000.0,
                static_cast<long long>(p.cache_capacity),
                hierarchical_names(p.hierarchical_ops).c_str());
    apply(p, ++epoch_);
    util::WireWriter w;
    w.u64(epoch_);
    w.i64(p.fusion_threshold_bytes);
    w.i64(p.cycle_time_us);
    w.i64(p.cache_capacity);
    w.u32(p.hierarchical_ops);
    for (int32_t peer = 0; peer < size_; ++peer)
        if (peer != rank_) control.send(peer, negotiation::kTuneMessage, w.bytes());
}

void Tuner::receive(const std::string &payload) {
    util::WireReader r(payload);
    uint64_t epoch = r.u64();
    TunedParams p;
    p.fusion_threshold_bytes = r.i64();
    p.cycle_time_us = r.i64();
    p.cache_capacity = r.i64();
    p.hierarchical_ops = r.u32();
    if (p.fusion_threshold_bytes < 0 || p.cycle_time_us < 0 || p.cache_capacity < 0 || !r.at_end())
        throw Error(HVD_ERR_TRANSPORT, strprintf("rank %d: malformed autotune message", rank_));
    apply(p, epoch);
}

void Tuner::apply(const TunedParams &p, uint64_t epoch) {
    config_->fusion_threshold_bytes = p.fusion_threshold_bytes;
    config_->cycle_time_us = p.cycle_time_us;
    config_->cache_capacity = p.cache_capacity;
    config_->hierarchical_ops = p.hierarchical_ops;
    const char *log = config::get_string(config::Setting::kAutotuneLog);
    if (log == nullptr) return;
    std::string path = strprintf("%s.%d", log, rank_);
    std::FILE *f = std::fopen(path.c_str(), epoch == 1 ? "w" : "a");
    if (f == nullptr) return;
    std::fprintf(f, "%llu,%lld,%.3f,%lld,%s\n", static_cast<unsigned long long>(epoch),
                 static_cast<long long>(p.fusion_threshold_bytes), p.cycle_time_us / 1000.0,
                 static_cast<long long>(p.cache_capacity),
                 hierarchical_names(p.hierarchical_ops).c_str());
    std::fclose(f);
}

}  // namespace hvd::engine
