// SPDX-License-Identifier: Apache-2.0
// The view a collective algorithm gets of its group of ranks: who the members are, how to
// reach them, a tag sequence that keeps concurrent collectives apart, the deadline, and
// scratch memory that persists across calls (no page faults on the hot path).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/error.h"
#include "transport/transport.h"

namespace hvd::shm {
class Group;
}

namespace hvd::collectives {

struct Hierarchy;

// Memory that an algorithm needs for the duration of one call: receive buffers and the
// Completion records of its in-flight operations. Grows, never shrinks; reused by every
// collective of a context, so steady-state calls allocate nothing. Not thread-safe: one
// collective at a time uses it (the engine thread's).
class ScratchBuffer {
  public:
    ScratchBuffer() = default;
    ~ScratchBuffer();
    ScratchBuffer(const ScratchBuffer &) = delete;
    ScratchBuffer &operator=(const ScratchBuffer &) = delete;
    // At least `bytes` bytes, 64-byte aligned, contents unspecified. Valid until the next
    // get(). Throws hvd::Error(HVD_ERR_NO_MEMORY).
    void *get(size_t bytes);
    // n default-initialised Completions (done == false). Valid until the next completions();
    // independent of get(). Throws hvd::Error(HVD_ERR_NO_MEMORY).
    transport::Completion *completions(size_t n);

  private:
    void *data_ = nullptr;
    size_t capacity_ = 0;
    std::vector<transport::Completion> completions_;
};

// Where a collective's buffers live: host memory, or a GPU's (for a GPU back-end's entries in
// the algorithm tables, algorithms.h).
enum class Memory : uint8_t { kHost, kDevice };

struct Comm {
    transport::Transport *transport = nullptr;
    std::vector<int32_t> members;  // global ranks; index = rank within this group
    int32_t my_index = 0;
    uint16_t set_id = 0;
    uint32_t seq = 0;  // the caller gives each collective call a fresh value
    Deadline deadline;
    const std::atomic<int32_t> *abort_status = nullptr;  // nonzero: fail with that status
    ScratchBuffer *scratch = nullptr;
    // A shared-memory group whose members are exactly this Comm's members in order (the job's
    // group for the global process set of a single-host job, or a smaller set's own group);
    // null otherwise. When set, the dispatch prefers the algorithms that move data through it.
    shm::Group *shm = nullptr;
    // The job's hosts (collectives/hierarchy.h) where this Comm's members are every rank of a
    // job that spans hosts and the hierarchical algorithms apply; null otherwise. When set, the
    // dispatch prefers them (from the sizes the hierarchy names).
    const Hierarchy *hierarchy = nullptr;
    // Where this call's buffers live.
    Memory memory = Memory::kHost;

    int32_t size() const { return static_cast<int32_t>(members.size()); }
    // The transport, for a wait on anything else (shared memory, a GPU event) to keep driving
    // where a completed send may still need that (Transport::sends_need_progress); else null.
    transport::Transport *transport_to_drive() const {
        return transport != nullptr && transport->sends_need_progress() ? transport : nullptr;
    }
    int32_t global_rank() const { return members[my_index]; }
    // Tag of a data message sent by group member `from_index` in this collective.
    uint64_t tag_from(int32_t from_index) const {
        return transport::make_tag(transport::Channel::kData, set_id, members[from_index], seq);
    }
    // The member `offset` places after this one around the ring of indices (offset may be
    // negative).
    int32_t ring_index(int32_t offset) const {
        int32_t n = size();
        return ((my_index + offset) % n + n) % n;
    }

    // ---- Point to point within this collective. Every message of a collective from one
    // sender carries the same tag; UCX keeps messages of one tag from one sender in order, so
    // an algorithm may send several messages to a peer as long as the peer posts its receives
    // in the order of the sends.

    // Posts a send of `bytes` bytes to member `to_index`; buf stays untouched until c->done.
    void send(int32_t to_index, const void *buf, size_t bytes, transport::Completion *c) const {
        transport->isend(members[to_index], tag_from(my_index), buf, bytes, c);
    }
    // Posts a receive of the next message from member `from_index` into buf (capacity bytes).
    void recv(int32_t from_index, void *buf, size_t bytes, transport::Completion *c) const {
        transport->irecv(tag_from(from_index), transport::kTagFullMask, buf, bytes, c);
    }
    // Waits for one operation, bounded by the deadline and the abort flag. On failure every
    // operation of the transport has ended (wait_all aborts them) and the failure is logged
    // with `what` (e.g. "ring allreduce: receive from") and the peer's index.
    hvd_status_t wait(transport::Completion *c, const char *what, int32_t peer_index) const;
    // wait(), then checks that a receive got exactly `bytes` bytes (a shorter message means
    // the members disagree on the sizes: HVD_ERR_INTERNAL, since negotiation prevents it).
    hvd_status_t wait_recv(transport::Completion *c, size_t bytes, const char *what,
                           int32_t peer_index) const;
    // Waits for cs[0..n), all to or from `peer_index` (-1: various).
    hvd_status_t wait_each(transport::Completion *cs, size_t n, const char *what,
                           int32_t peer_index) const;

    // ---- Failure handling shared by every algorithm.

    // Ends every operation of the transport (so no buffer of this call stays referenced),
    // logs `detail` with this rank's identity, returns status.
    hvd_status_t abort_with(hvd_status_t status, const std::string &detail) const;
    // Checks the fields every algorithm relies on; HVD_ERR_INVALID_ARG (logged) when wrong.
    hvd_status_t validate(const char *algorithm) const;
    // Runs body() and turns an exception (e.g. no memory for scratch) into abort_with(status).
    template <typename Body>
    hvd_status_t guarded(const char *algorithm, Body &&body) const {
        try {
            return body();
        } catch (const Error &e) {
            return abort_with(e.status(), std::string(algorithm) + ": " + e.what());
        } catch (const std::exception &e) {
            return abort_with(HVD_ERR_INTERNAL, std::string(algorithm) + ": " + e.what());
        }
    }
};

}  // namespace hvd::collectives
