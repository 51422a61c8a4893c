// SPDX-License-Identifier: Apache-2.0
// ScratchBuffer: per-context memory reused by every collective call.
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "collectives/comm.h"
#include "topology/local_topology.h"

namespace hvd::collectives {

namespace {

constexpr size_t kAlignment = 64;  // a cache line: no false sharing, vector-friendly
constexpr size_t kGranule = 4096;  // grow in whole pages
// From this size on, the buffer is aligned to and advised onto 2 MiB transparent huge pages:
// single-copy transfers (process_vm_readv) pin every page they touch, and 512 times fewer
// pages to pin and fault made large transfers markedly faster here (docs/performance.md).
constexpr size_t kHugePage = 2 * 1024 * 1024;

size_t round_up(size_t x, size_t to) {
    return (x + to - 1) / to * to;
}

}  // namespace

ScratchBuffer::~ScratchBuffer() {
    std::free(data_);
}

void *ScratchBuffer::get(size_t bytes) {
    if (bytes <= capacity_ && data_ != nullptr) return data_;
    // Grow geometrically so a slowly rising size does not reallocate on every call.
    size_t want = round_up(bytes > 2 * capacity_ ? bytes : 2 * capacity_, kGranule);
    if (want == 0) want = kGranule;
    bool huge = want >= kHugePage;
    if (huge) want = round_up(want, kHugePage);
    void *fresh = std::aligned_alloc(huge ? kHugePage : kAlignment, want);
    if (fresh == nullptr)
        throw Error(HVD_ERR_NO_MEMORY, strprintf("cannot allocate %zu bytes of scratch", want));
    if (huge) {
        ::madvise(fresh, want, MADV_HUGEPAGE);  // advice only: failure is harmless
        // Its pages on this rank's NUMA node (preferred, not strict: a full node spills over);
        // smaller buffers may share pages with other allocations and are left to first touch.
        std::string why;
        (void)topology::bind_memory(fresh, want, topology::this_process_locality().numa_node, &why);
    }
    // Touch every page now, so the transfers that use it do not take the page faults.
    std::memset(fresh, 0, want);
    std::free(data_);
    data_ = fresh;
    capacity_ = want;
    return data_;
}

transport::Completion *ScratchBuffer::completions(size_t n) {
    try {
        if (completions_.size() < n)
            completions_.resize(n > 2 * completions_.size() ? n : 2 * completions_.size());
    } catch (const std::bad_alloc &) {
        throw Error(HVD_ERR_NO_MEMORY, strprintf("cannot allocate %zu completion records", n));
    }
    for (size_t i = 0; i < n; ++i)
        completions_[i] = transport::Completion{};
    return completions_.data();
}

}  // namespace hvd::collectives
