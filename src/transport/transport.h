// SPDX-License-Identifier: Apache-2.0
// Point-to-point messaging between the ranks of one job: the only thing collectives and the
// engine's negotiation use to talk to peers. One Transport per context; it is driven by one
// thread at a time (the engine thread), so implementations need no locks of their own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/error.h"
#include "hvd/hvd.h"

namespace hvd::transport {

// 64-bit message tags: | channel:8 | set:16 | source rank:20 | sequence:20 |
// kReach: the reachability exchange of init (reachability.h), before any other message.
enum class Channel : uint8_t { kControl = 1, kData = 2, kReach = 3 };
constexpr uint64_t kTagFullMask = ~UINT64_C(0);
constexpr uint64_t kTagSourceMask = UINT64_C(0xfffff) << 20;
constexpr uint32_t kTagSeqMask = 0xfffff;
constexpr int32_t kMaxRanks = 1 << 20;

inline uint64_t make_tag(Channel ch, uint16_t set_id, int32_t source, uint32_t seq) {
    return (static_cast<uint64_t>(ch) << 56) | (static_cast<uint64_t>(set_id) << 40) |
           (static_cast<uint64_t>(source & 0xfffff) << 20) | (seq & kTagSeqMask);
}
inline int32_t tag_source(uint64_t tag) {
    return static_cast<int32_t>((tag >> 20) & 0xfffff);
}

// How a thread waiting on a context's communication polls before it sleeps. Each context
// chooses its own at init (HVD_SPIN_US, HVD_SPIN_YIELD; see engine/context.cc) and hands it
// to its transport and shared-memory group, so contexts of one process keep theirs.
struct SpinPolicy {
    // How long waiters poll after the last event before sleeping on the event fd (or the
    // shared-memory futex); 0: sleep at once, and callers do not drive the engine themselves.
    std::chrono::microseconds window{50};
    // Whether a polling waiter yields its CPU after every poll: where ranks share CPUs, one
    // that polls without yielding keeps its CPU from the rank it waits for, and one that
    // sleeps needs a wake-up through the hypervisor, while a yielding one hands its CPU to
    // whichever rank can run (Open MPI's yield_when_idle does the same).
    bool yield = false;
};

// Filled in by the transport when an operation ends. The caller owns it and must keep it
// (and the buffer) alive until done is true.
struct Completion {
    bool done = false;
    hvd_status_t status = HVD_OK;
    size_t length = 0;         // bytes received (recv) or sent (send)
    uint64_t sender_tag = 0;   // the matched message's tag (recv)
    int32_t peer = -1;         // the peer of a send; the sender of a received message
    void *internal = nullptr;  // the transport's own handle while in flight

    // For implementations: an operation with `with` starts (every field reset), ends.
    void start(int32_t with) {
        done = false;
        status = HVD_OK;
        length = 0;
        sender_tag = 0;
        peer = with;
        internal = nullptr;
    }
    void finish(hvd_status_t s) {
        status = s;
        done = true;
        internal = nullptr;
    }
};

// What Transport::connect throws (status HVD_ERR_TRANSPORT) when it cannot reach a peer.
class PeerUnreachable : public Error {
  public:
    PeerUnreachable(int32_t peer, const std::string &reason, const std::string &detail)
        : Error(HVD_ERR_TRANSPORT, detail), peer_(peer), reason_(reason) {}
    int32_t peer() const { return peer_; }
    const std::string &reason() const { return reason_; }  // the transport's words

  private:
    int32_t peer_;
    std::string reason_;
};

class Transport {
  public:
    virtual ~Transport() = default;

    virtual int32_t rank() const = 0;
    virtual int32_t size() const = 0;

    // This rank's address, to be exchanged through the bootstrap.
    virtual std::string local_address() const = 0;
    // Creates endpoints to every rank from all ranks' addresses (index = rank);
    // same_host[r] says whether rank r runs on this host. Throws PeerUnreachable naming the
    // rank it could not reach.
    virtual void connect(const std::vector<std::string> &addresses,
                         const std::vector<bool> &same_host) = 0;

    // Nonblocking send of len bytes to peer. buf stays untouched until c->done.
    virtual void isend(int32_t peer, uint64_t tag, const void *buf, size_t len, Completion *c) = 0;
    // Nonblocking receive of a message whose tag matches (tag & mask) into buf (capacity len).
    // A longer message completes c with HVD_ERR_TRANSPORT.
    virtual void irecv(uint64_t tag, uint64_t mask, void *buf, size_t len, Completion *c) = 0;
    // Nonblocking: if a message matching tag/mask has arrived, receives it whole into *payload
    // and returns true (c->sender_tag, c->status set). Used for control messages of unknown
    // length.
    virtual bool try_recv_any(uint64_t tag, uint64_t mask, std::string *payload, Completion *c) = 0;

    // Drives communication; returns true if anything completed or arrived.
    virtual bool progress() = 0;
    // A file descriptor that becomes readable when there is work for progress(); valid after
    // arm() returned true. arm() returns false when events are already pending (progress
    // again instead of sleeping).
    virtual int event_fd() const = 0;
    virtual bool arm() = 0;

    // Whether a completed send may still need progress() to leave this process. UCX's TCP
    // transport completes a send once its bytes are in its own buffer and hands what the
    // socket would not take to the kernel in later progress() calls. A thread that then waits
    // on something else (a shared-memory wait) must keep driving the transport, or a peer that
    // waits for those bytes never gets them (and may be what this thread waits for). Valid
    // after connect(); default false.
    virtual bool sends_need_progress() const { return false; }

    // The peer is known dead (bootstrap notice or transport error): operations with it fail
    // with HVD_ERR_PEER_FAILED from now on.
    virtual void mark_peer_failed(int32_t peer) = 0;
    // Peers the transport itself found dead since the last call (endpoint errors).
    virtual std::vector<int32_t> take_failed_peers() = 0;

    // Ends every operation in flight (completed with `status`) and stops talking to peers.
    // Bounded; after it returns, no buffer given to isend/irecv is referenced any more.
    virtual void abort_all(hvd_status_t status) = 0;

    // How waiters on this transport poll (wait_all, the engine's driving waiters). Set before
    // the transport is shared between threads (at init, before the engine starts); any thread
    // may read it afterwards. Default: a 50 us window, no yielding.
    const SpinPolicy &spin_policy() const { return spin_policy_; }
    void set_spin_policy(const SpinPolicy &policy) { spin_policy_ = policy; }

  private:
    SpinPolicy spin_policy_;
};

// A spinning wait that has found nothing this long starts yielding the CPU between polls,
// when this thread may run on more than one CPU: with unpinned ranks the peer it waits for
// may be waiting to run on this very CPU (unbound small ops were several times faster in most
// runs). Not at once: yielding on every short wait made the 256-tensor step much slower.
constexpr std::chrono::microseconds kYieldAfterSpin{25};
// Whether the calling thread may run on more than one CPU (true when that is unknown). A
// thread pinned to one CPU with its caller takes that CPU from it while spinning, and yields
// only to its own process's threads.
bool may_run_on_several_cpus();

// Waits until every completion in cs is done. Returns HVD_OK, or the first failed status;
// on expiry of the deadline HVD_ERR_TIMED_OUT; when *abort_status becomes nonzero that status.
// On any failure the transport's operations are aborted (abort_all) before returning, so the
// buffers are free. Spins as t.spin_policy() says, then sleeps on the transport's event fd.
hvd_status_t wait_all(Transport &t, Completion *const *cs, size_t n, const Deadline &deadline,
                      const std::atomic<int32_t> *abort_status);

}  // namespace hvd::transport
