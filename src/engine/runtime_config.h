// The knobs of a context that may change while it runs (fusion threshold, cycle time, stall
// inspector, autotune): read from HVD_* / HOROVOD_* variables into process-wide defaults,
// copied into each context at init, and changed through hvd_config_set. Every field is an
// atomic: the engine thread reads while callers write.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace hvd::engine {

struct RuntimeConfig {
    std::atomic<int64_t> fusion_threshold_bytes{128LL << 20};
    std::atomic<int64_t> cycle_time_us{0};
    std::atomic<int64_t> stall_check_s{60};    // 0: inspector off
    std::atomic<int64_t> stall_shutdown_s{0};  // 0: never
    std::atomic<int32_t> autotune{0};
    std::atomic<int64_t> cache_capacity{1024};  // entries; rank 0's governs

    RuntimeConfig() = default;
    RuntimeConfig(const RuntimeConfig &other) { copy_from(other); }
    RuntimeConfig &operator=(const RuntimeConfig &other) {
        copy_from(other);
        return *this;
    }
    void copy_from(const RuntimeConfig &other);

    // HVD_CONFIG_* keys as doubles (the ABI's unit for each). Return false and set *err for
    // an unknown key or a value out of range.
    bool get(int32_t key, double *value, std::string *err) const;
    bool set(int32_t key, double value, std::string *err);
};

// The defaults new contexts start from: the environment's settings, then whatever
// hvd_config_set(NULL, ...) changed. Thread-safe.
RuntimeConfig &process_config();

}  // namespace hvd::engine
