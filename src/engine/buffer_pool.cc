// SPDX-License-Identifier: Apache-2.0
#include "engine/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

namespace hvd::engine {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

struct Pool {
    std::mutex mu;
    std::multimap<size_t, char *> idle;  // capacity -> block
    size_t idle_bytes = 0;
};

Pool &pool() {
    static Pool *p = new Pool();  // never destroyed: requests may outlive static destructors
    return *p;
}

}  // namespace

PooledBlock pool_take(size_t n) {
    Pool &p = pool();
    {
        std::lock_guard<std::mutex> lock(p.mu);
        auto it = p.idle.lower_bound(n);
        if (it != p.idle.end() && it->first <= 2 * n) {
            PooledBlock b{it->second, it->first};
            p.idle_bytes -= it->first;
            p.idle.erase(it);
            return b;
        }
    }
    size_t capacity = (n + kHugePage - 1) / kHugePage * kHugePage;
    char *data = static_cast<char *>(std::aligned_alloc(kHugePage, capacity));
    if (data == nullptr) throw std::bad_alloc();
    ::madvise(data, capacity, MADV_HUGEPAGE);  // advice only: failure is harmless
    return PooledBlock{data, capacity};
}

void pool_give(PooledBlock block) {
    if (block.data == nullptr) return;
    Pool &p = pool();
    {
        std::lock_guard<std::mutex> lock(p.mu);
        if (p.idle_bytes + block.capacity <= kPoolMaxIdleBytes) {
            p.idle.emplace(block.capacity, block.data);
            p.idle_bytes += block.capacity;
            return;
        }
    }
    std::free(block.data);
}

}  // namespace hvd::engine
