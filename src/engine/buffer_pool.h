// SPDX-License-Identifier: Apache-2.0
// Reuse of large library-owned buffers (allgather, alltoall and reducescatter outputs): a
// fresh large allocation is fresh pages from the kernel, which it must fault in and zero on
// every op (a 64 MiB allgather spent more time there than moving data), so blocks of at
// least kPoolMinBytes go back to a process-wide pool when their request is released and the
// next op of a similar size takes them. Thread-safe.
#pragma once

#include <cstddef>

namespace hvd::engine {

struct PooledBlock {
    char *data = nullptr;
    size_t capacity = 0;
};

// Smallest block the pool handles; smaller ones are plain malloc (glibc reuses those itself).
constexpr size_t kPoolMinBytes = size_t{1} << 20;
// Most bytes the pool keeps while no request uses them; blocks beyond that are freed.
constexpr size_t kPoolMaxIdleBytes = size_t{512} << 20;

// A block of at least n bytes (n >= kPoolMinBytes): an idle one of capacity n .. 2n if the
// pool has one, else a new allocation (2 MiB aligned, advised onto transparent huge pages).
// Throws std::bad_alloc when memory runs out.
PooledBlock pool_take(size_t n);
// Returns a block from pool_take.
void pool_give(PooledBlock block);

}  // namespace hvd::engine
