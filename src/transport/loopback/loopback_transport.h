// SPDX-License-Identifier: Apache-2.0
// An in-process implementation of Transport: N ranks of one process (threads) exchange
// messages through a shared hub instead of UCX, so the negotiators, the runner and the
// collectives can be unit-tested without a network stack.
//
// Semantics follow the UCX transport (ucx/ucx_transport.cc):
//  - isend copies the message at once (every send is eager) and completes it in the call;
//    the message reaches the receiver's queue of arrived messages.
//  - A receiver's progress() takes arrived messages in arrival order: each matches the
//    earliest posted receive whose tag matches ((msg_tag & mask) == (recv_tag & mask)), or
//    joins the unexpected queue. irecv first takes the earliest matching unexpected message,
//    else it is posted. So messages from one sender are received in the order sent.
//  - A message longer than the receive buffer is consumed and completes the receive with
//    HVD_ERR_TRANSPORT.
//  - A rank that calls abort_all (or destroys its transport) looks dead to the others: their
//    sends to it fail with HVD_ERR_PEER_FAILED, and their next progress() marks it failed
//    (mark_peer_failed: receives from it fail, take_failed_peers reports it).
//  - event_fd() is an eventfd, readable while messages or failure notices wait for
//    progress().
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/transport.h"

namespace hvd::transport {

struct LoopbackState;  // the ranks' mailboxes; defined in loopback_transport.cc

// The meeting point of the N ranks of one in-process job. Typical use:
//   LoopbackHub hub(n);
//   std::vector<std::unique_ptr<Transport>> ts = hub.make_all();
//   // thread r drives ts[r] only
// Transports share the hub's state, so the hub itself may be destroyed before them.
// Thread safety: make() may be called from any thread; each transport made is driven by one
// thread at a time (as every Transport), while the others run on other threads.
class LoopbackHub {
  public:
    // A hub for ranks 0..size-1. Throws hvd::Error: HVD_ERR_INVALID_ARG when size is not in
    // [1, kMaxRanks], HVD_ERR_TRANSPORT when an eventfd cannot be created.
    explicit LoopbackHub(int32_t size);
    // Releases the hub's reference to the shared state; transports made from it stay usable
    // (the state, and its eventfds, go with the last of them).
    ~LoopbackHub();
    LoopbackHub(const LoopbackHub &) = delete;
    LoopbackHub &operator=(const LoopbackHub &) = delete;

    // The number of ranks. Thread-safe.
    int32_t size() const;

    // The transport of `rank`, ready to use (connect() is optional: it only checks the
    // addresses). The caller owns it; destroying it runs abort_all, so the others then see
    // the rank dead: destroy transports after every rank is done with them. Messages sent to
    // a rank before its transport is made wait for it. Once per rank: throws
    // hvd::Error(HVD_ERR_INVALID_ARG) for a rank out of range or made before. Nonblocking,
    // thread-safe.
    std::unique_ptr<Transport> make(int32_t rank);
    // make(0), ..., make(size - 1); index = rank. Same errors as make().
    std::vector<std::unique_ptr<Transport>> make_all();

  private:
    std::shared_ptr<LoopbackState> state_;
};

// What a loopback transport does beyond the Transport interface (see there for the common
// contract; one driving thread at a time, nothing blocks):
//  - local_address() is "loopback:<rank>"; connect() throws hvd::Error(HVD_ERR_INTERNAL)
//    for a list of the wrong length and HVD_ERR_TRANSPORT naming the rank whose address is
//    not this hub's; same_host is ignored.
//  - isend completes in the call: HVD_OK (length = len), HVD_ERR_PEER_FAILED for a peer out
//    of range, marked failed or aborted, the abort status after abort_all. The copy waits in
//    the receiver's queues until received (no flow control: memory grows with what is sent
//    and not yet received).
//  - irecv may complete in the call (a matching message had arrived) or in a later
//    progress(); a receive naming its source (mask covers kTagSourceMask) fails with
//    HVD_ERR_PEER_FAILED when that source is or becomes failed, one from any source waits.
//    On success c->peer is the sending rank, c->sender_tag the message's tag.
//  - try_recv_any sees only messages progress() has taken in (like UCX's probe).
//  - progress() returns whether a message arrived or a failure notice was handled.
//  - arm() returns false while messages or notices wait; after it returned true the
//    event_fd becomes readable when one arrives.
//  - abort_all(status) completes every posted receive with status, drops queued messages
//    and marks this rank dead on the hub; later operations complete with the first abort's
//    status and try_recv_any returns false. Nothing to drain: it returns at once.

}  // namespace hvd::transport
