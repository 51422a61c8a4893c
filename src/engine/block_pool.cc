#include "engine/block_pool.h"

#include <new>

namespace hvd::engine {

void *BlockPool::take(size_t bytes) {
    if (bytes == block_bytes_) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!free_.empty()) {
            void *p = free_.back();
            free_.pop_back();
            return p;
        }
    }
    return ::operator new(bytes);
}

void BlockPool::give(void *p, size_t bytes) noexcept {
    if (p == nullptr) return;
    if (bytes == block_bytes_) {
        std::lock_guard<std::mutex> lock(mu_);
        if (free_.size() < max_cached_) {
            try {
                free_.push_back(p);
                return;
            } catch (...) {  // no room to remember it: free it below
            }
        }
    }
    ::operator delete(p);
}

}  // namespace hvd::engine
