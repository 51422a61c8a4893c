// SPDX-License-Identifier: Apache-2.0
#include "util/block_pool.h"

#include <new>

namespace hvd::util {

BlockPool::~BlockPool() {
    for (void *p : free_)
        drop(p);
}

void *BlockPool::take_kept_shared() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return nullptr;
    void *p = free_.back();
    free_.pop_back();
    return p;
}

void BlockPool::give(void *p, size_t bytes) noexcept {
    if (p == nullptr) return;
    if (bytes != block_bytes_) {
        ::operator delete(p);  // never one of the blocks a discard hook is for
        return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    keep_locked(p);
}

void BlockPool::keep_locked(void *p) noexcept {
    if (free_.size() < max_cached_) {
        try {
            free_.push_back(p);
            return;
        } catch (...) {  // no room to remember it: free it below
        }
    }
    drop(p);
}

void *BlockPool::take(ThreadStock &s, size_t bytes) {
    if (bytes != block_bytes_) return ::operator new(bytes);
    void *p = take_kept(s);
    return p != nullptr ? p : ::operator new(bytes);
}

void *BlockPool::take_kept(ThreadStock &s) {
    if (s.closed) return take_kept_shared();
    if (s.n == 0) {
        std::lock_guard<std::mutex> lock(mu_);
        while (s.n < ThreadStock::kMax / 2 && !free_.empty()) {
            s.blocks[s.n++] = free_.back();
            free_.pop_back();
        }
    }
    return s.n > 0 ? s.blocks[--s.n] : nullptr;
}

void BlockPool::give(ThreadStock &s, void *p, size_t bytes) noexcept {
    if (p == nullptr) return;
    if (bytes != block_bytes_ || s.closed) return give(p, bytes);
    if (s.n == ThreadStock::kMax) {
        std::lock_guard<std::mutex> lock(mu_);
        while (s.n > ThreadStock::kMax / 2)
            keep_locked(s.blocks[--s.n]);
    }
    s.blocks[s.n++] = p;
}

void BlockPool::close(ThreadStock &s) noexcept {
    s.closed = true;
    while (s.n > 0)
        give(s.blocks[--s.n], block_bytes_);
}

}  // namespace hvd::util
