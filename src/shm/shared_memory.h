// SPDX-License-Identifier: Apache-2.0
// Memory the caller allocates from the library (hvd_mem_alloc) so that the other ranks of a
// single-host job can read and write it in place: each region is a memfd mapped shared, which
// a peer maps into its own address space through pidfd_getfd. A collective whose buffers are
// all in such regions needs no staging copies (collectives/shm/allreduce_shm_mapped.cc).
//
// The registry is process-wide (regions outlive contexts) and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hvd/hvd.h"

namespace hvd::shm {

// Where a byte range lies inside a region, as a peer needs it to map the region.
struct SharedRef {
    uint64_t id = 0;      // unique in this process for its lifetime (never reused)
    int32_t fd = -1;      // the region's memfd in this process
    uint64_t bytes = 0;   // the region's length
    uint64_t offset = 0;  // of the range from the region's start
};

// A new region of at least `bytes` bytes (rounded up to whole pages), zero-filled, page
// aligned, its pages reserved now (fails here rather than with SIGBUS later). Throws
// hvd::Error: HVD_ERR_INVALID_ARG for 0 bytes, HVD_ERR_NO_MEMORY when the memory or a file
// descriptor cannot be had (saying which call failed).
void *shared_alloc(size_t bytes);

// Unmaps and closes the region that starts at p. HVD_ERR_INVALID_ARG if p is not the start
// of a live region (a pointer from elsewhere, or one freed already); nothing changes then.
hvd_status_t shared_free(void *p);

// Whether [p, p + len) lies inside one live region; fills *ref if so. len 0 counts as inside
// when p is.
bool shared_find(const void *p, size_t len, SharedRef *ref);

}  // namespace hvd::shm
