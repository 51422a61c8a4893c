// The view a collective algorithm gets of its group of ranks: who the members are, how to
// reach them, a tag sequence that keeps concurrent collectives apart, the deadline, and
// scratch memory that persists across calls (no page faults on the hot path).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/deadline.h"
#include "transport/transport.h"

namespace hvd::collectives {

// Grows, never shrinks; reused by every collective of a context.
class ScratchBuffer {
public:
    ScratchBuffer() = default;
    ~ScratchBuffer();
    ScratchBuffer(const ScratchBuffer &) = delete;
    ScratchBuffer &operator=(const ScratchBuffer &) = delete;
    // At least `bytes` bytes, 64-byte aligned. Throws hvd::Error(HVD_ERR_NO_MEMORY).
    void *get(size_t bytes);

private:
    void *data_ = nullptr;
    size_t capacity_ = 0;
};

struct Comm {
    transport::Transport *transport = nullptr;
    std::vector<int32_t> members;  // global ranks; index = rank within this group
    int32_t my_index = 0;
    uint16_t set_id = 0;
    uint32_t seq = 0;  // the caller gives each collective call a fresh value
    Deadline deadline;
    const std::atomic<int32_t> *abort_status = nullptr;  // nonzero: fail with that status
    ScratchBuffer *scratch = nullptr;

    int32_t size() const { return static_cast<int32_t>(members.size()); }
    // Tag of a data message sent by group member `from_index` in this collective.
    uint64_t tag_from(int32_t from_index) const {
        return transport::make_tag(transport::Channel::kData, set_id, members[from_index], seq);
    }
};

}  // namespace hvd::collectives
