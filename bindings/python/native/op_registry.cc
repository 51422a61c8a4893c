// SPDX-License-Identifier: Apache-2.0
#include "op_registry.h"

#include <atomic>
#include <map>
#include <mutex>

namespace hvd_native {

namespace {

std::atomic<hvd_context_h> g_context{nullptr};
std::mutex g_sets_mu;
std::map<int64_t, hvd_process_set_h> g_sets;  // guarded by g_sets_mu

}  // namespace

hvd_context_h live_context() {
    return g_context.load(std::memory_order_acquire);
}

bool process_set_of(int64_t id, hvd_process_set_h *ps) {
    *ps = nullptr;
    if (id == 0) return true;
    std::lock_guard<std::mutex> lock(g_sets_mu);
    auto found = g_sets.find(id);
    if (found == g_sets.end()) return false;
    *ps = found->second;
    return true;
}

void set_live_context(void *ctx) {
    {
        std::lock_guard<std::mutex> lock(g_sets_mu);
        g_sets.clear();
    }
    g_context.store(static_cast<hvd_context_h>(ctx), std::memory_order_release);
}

void set_process_set(int64_t id, void *handle) {
    std::lock_guard<std::mutex> lock(g_sets_mu);
    g_sets[id] = static_cast<hvd_process_set_h>(handle);
}

}  // namespace hvd_native
