// A free list of equal-sized memory blocks, shared by every thread, for objects that one
// thread makes and another frees at a high rate: requests are made by the caller's thread
// and usually freed by the engine's, hundreds per training step. glibc's per-thread caches
// hold only a few blocks of a size and send the rest of such cross-thread frees through the
// arena (its lock, consolidation), which showed as ~10 % of a 256-tensor step.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace hvd::engine {

class BlockPool {
  public:
    // Blocks of other sizes, and blocks beyond max_cached, go to the global allocator.
    BlockPool(size_t block_bytes, size_t max_cached)
        : block_bytes_(block_bytes), max_cached_(max_cached) {}
    BlockPool(const BlockPool &) = delete;
    BlockPool &operator=(const BlockPool &) = delete;

    // Thread-safe; throws std::bad_alloc like operator new.
    void *take(size_t bytes);
    // Thread-safe; p came from take(bytes).
    void give(void *p, size_t bytes) noexcept;

  private:
    const size_t block_bytes_;
    const size_t max_cached_;
    std::mutex mu_;
    std::vector<void *> free_;
};

// std::allocator-style access to one process-wide pool per T (never destroyed: objects from
// it may outlive every context, as a request handle kept after finalize does).
template <class T>
struct PooledAllocator {
    using value_type = T;
    PooledAllocator() = default;
    template <class U>
    PooledAllocator(const PooledAllocator<U> &) {}

    static BlockPool &pool() {
        static BlockPool *p = new BlockPool(sizeof(T), 4096);
        return *p;
    }
    T *allocate(size_t n) { return static_cast<T *>(pool().take(n * sizeof(T))); }
    void deallocate(T *p, size_t n) noexcept { pool().give(p, n * sizeof(T)); }

    template <class U>
    bool operator==(const PooledAllocator<U> &) const {
        return true;
    }
    template <class U>
    bool operator!=(const PooledAllocator<U> &) const {
        return false;
    }
};

}  // namespace hvd::engine
