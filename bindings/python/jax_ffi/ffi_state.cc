// SPDX-License-Identifier: Apache-2.0
#include "ffi_state.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace hvd_jax {

namespace {

std::atomic<hvd_context_h> g_context{nullptr};

struct ProcessSets {
    std::mutex mu;
    std::unordered_map<int64_t, hvd_process_set_h> by_id;
};

ProcessSets &sets() {
    static ProcessSets s;
    return s;
}

}  // namespace

hvd_context_h context() {
    return g_context.load(std::memory_order_acquire);
}

bool process_set(int64_t id, hvd_process_set_h *ps) {
    if (id == 0) {
        *ps = nullptr;
        return true;
    }
    std::lock_guard<std::mutex> lock(sets().mu);
    auto it = sets().by_id.find(id);
    if (it == sets().by_id.end()) return false;
    *ps = it->second;
    return true;
}

}  // namespace hvd_jax

extern "C" void hvd_jax_set_context(void *ctx) {
    {
        std::lock_guard<std::mutex> lock(hvd_jax::sets().mu);
        hvd_jax::sets().by_id.clear();
    }
    hvd_jax::g_context.store(static_cast<hvd_context_h>(ctx), std::memory_order_release);
}

extern "C" void hvd_jax_set_process_set(int64_t id, void *handle) {
    std::lock_guard<std::mutex> lock(hvd_jax::sets().mu);
    hvd_jax::sets().by_id[id] = static_cast<hvd_process_set_h>(handle);
}
