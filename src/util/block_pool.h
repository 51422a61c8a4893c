// SPDX-License-Identifier: Apache-2.0
// A free list of equal-sized memory blocks, shared by every thread, for objects that one
// thread makes and another frees at a high rate: requests are made by the caller's thread
// and usually freed by the engine's, hundreds per training step. glibc's per-thread caches
// hold only a few blocks of a size and send the rest of such cross-thread frees through the
// arena (its lock, consolidation), which showed in profiles of a 256-tensor step. Each thread
// keeps a few blocks of its own (ThreadStock) and moves them to and from the shared list in
// batches, so that a thread that makes and frees its own requests takes no lock.
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

namespace hvd::util {

// A thread's own blocks of one pool. Trivially destructible, so that a block freed while
// the thread's other thread-locals are destroyed still finds it (closed by then).
struct ThreadStock {
    static constexpr int kMax = 64;
    void *blocks[kMax];
    int n;
    bool closed;  // its thread is ending: blocks go straight to the pool
    bool armed;   // the flush at thread exit is registered
};

class BlockPool {
  public:
    // Blocks of other sizes, and blocks beyond max_cached, go to the global allocator, or,
    // with `discard`, blocks beyond max_cached to it (a pool of live objects deletes them).
    BlockPool(size_t block_bytes, size_t max_cached, void (*discard)(void *) noexcept = nullptr)
        : block_bytes_(block_bytes), max_cached_(max_cached), discard_(discard) {}
    BlockPool(const BlockPool &) = delete;
    BlockPool &operator=(const BlockPool &) = delete;
    // Frees the kept blocks (live ones and those in thread stocks are their holders').
    ~BlockPool();

    // Through the calling thread's stock, which must be this pool's. Thread-safe; take()
    // throws std::bad_alloc like operator new, and give()'s p came from take(bytes).
    void *take(ThreadStock &s, size_t bytes);
    void give(ThreadStock &s, void *p, size_t bytes) noexcept;
    // A kept block of block_bytes through the stock, or null where there is none (nothing is
    // allocated).
    void *take_kept(ThreadStock &s);
    // Returns the stock's blocks to the pool and closes it (at its thread's exit).
    void close(ThreadStock &s) noexcept;

  private:
    // Straight to the shared list (a closed stock, a block of another size).
    void give(void *p, size_t bytes) noexcept;
    // Under mu_: keeps a block of block_bytes_ for reuse, or frees it past max_cached_.
    void keep_locked(void *p) noexcept;
    void *take_kept_shared();
    void drop(void *p) noexcept { discard_ != nullptr ? discard_(p) : ::operator delete(p); }

    const size_t block_bytes_;
    const size_t max_cached_;
    void (*const discard_)(void *) noexcept;
    std::mutex mu_;
    std::vector<void *> free_;
};

// The calling thread's stock of Pool::pool(), handed back to that pool at the thread's exit.
template <class Pool>
ThreadStock &thread_stock() noexcept {
    struct Closer {
        ThreadStock *s;
        ~Closer() { Pool::pool().close(*s); }
    };
    static thread_local ThreadStock s{};
    if (!s.armed) {
        s.armed = true;
        static thread_local Closer closer{&s};
        (void)closer;
    }
    return s;
}

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
    T *allocate(size_t n) {
        return static_cast<T *>(pool().take(thread_stock<PooledAllocator>(), n * sizeof(T)));
    }
    void deallocate(T *p, size_t n) noexcept {
        pool().give(thread_stock<PooledAllocator>(), p, n * sizeof(T));
    }

    template <class U>
    bool operator==(const PooledAllocator<U> &) const {
        return true;
    }
    template <class U>
    bool operator!=(const PooledAllocator<U> &) const {
        return false;
    }
};

}  // namespace hvd::util
