// ScratchBuffer: per-context memory reused by every collective call.
#include <cstdlib>
#include <cstring>
#include <new>

#include "collectives/comm.h"

namespace hvd::collectives {

namespace {

constexpr size_t kAlignment = 64;  // a cache line: no false sharing, vector-friendly
constexpr size_t kGranule = 4096;  // grow in whole pages

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
    void *fresh = std::aligned_alloc(kAlignment, want);
    if (fresh == nullptr)
        throw Error(HVD_ERR_NO_MEMORY, strprintf("cannot allocate %zu bytes of scratch", want));
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
