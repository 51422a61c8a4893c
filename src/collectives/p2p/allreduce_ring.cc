// SPDX-License-Identifier: Apache-2.0
// Ring allreduce: reduce-scatter then allgather around the ring of members, each moving
// (n-1)/n of the buffer, so every link carries 2(n-1)/n of it in total: bandwidth-optimal,
// the choice for large messages.
//
// The buffer is cut into n segments (the first count % n one element longer, so any may be
// empty when count < n). Reduce-scatter: at step k a member sends segment (me - k) to its
// right and receives segment (me - k - 1) from its left, combining it into its own; after n-1
// steps it holds the finished segment (me + 1). Each segment is combined exactly once by a
// fixed chain of members, always as (data from earlier in the chain) op (own data), and then
// only copied, so every member ends bitwise identical.
//
// Pipelining: segments move in chunks. A member forwards a chunk at step k+1 as soon as it
// has combined it at step k, and keeps kRecvWindow receives posted into scratch slots, so the
// next chunks arrive while it reduces the current one. All messages to one neighbour share a
// tag, so each side posts its chunks in the same order: step by step, chunk by chunk. Sends
// are never held back (their Completions come from the scratch pool), which keeps the ring
// free of waits-for cycles.
#include <algorithm>

#include "collectives/collectives.h"
#include "collectives/patterns/ring_pieces.h"
#include "common/dtype.h"
#include "reduce/reduce.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "ring allreduce";
// Receives posted ahead during reduce-scatter; scratch holds this many chunks.
constexpr size_t kRecvWindow = 4;

using Cursor = RingPieceCursor<EvenBlocks>;
using Piece = RingPiece;

struct Ring {
    const Comm &comm;
    char *buf;
    int32_t dtype;
    int32_t op;
    size_t esize;
    EvenBlocks segs;
    size_t chunk;  // elements
    int32_t me, left, right, n;

    char *at(const Piece &p) const { return buf + p.offset * esize; }
    size_t bytes(const Piece &p) const { return p.count * esize; }
};

hvd_status_t reduce_scatter(const Ring &r) {
    Cursor own(r.segs, r.chunk, r.me, 1);
    Cursor incoming(r.segs, r.chunk, r.left, r.n - 1);
    Cursor posting = incoming;
    size_t max_sends = own.remaining() + incoming.remaining();
    transport::Completion *sends = r.comm.scratch->completions(max_sends + kRecvWindow);
    transport::Completion *recvs = sends + max_sends;
    size_t slot_bytes = r.chunk * r.esize;
    char *slots = static_cast<char *>(r.comm.scratch->get(kRecvWindow * slot_bytes));

    size_t sent = 0;
    Piece p;
    while (own.next(&p))
        r.comm.send(r.right, r.at(p), r.bytes(p), &sends[sent++]);
    for (size_t w = 0; w < kRecvWindow && posting.next(&p); ++w)
        r.comm.recv(r.left, slots + w * slot_bytes, r.bytes(p), &recvs[w]);
    for (size_t j = 0; incoming.next(&p); ++j) {
        size_t w = j % kRecvWindow;
        char *slot = slots + w * slot_bytes;
        hvd_status_t st =
            r.comm.wait_recv(&recvs[w], r.bytes(p), "ring reduce-scatter: receive from", r.left);
        if (st != HVD_OK) return st;
        st = reduce::reduce_into(r.at(p), slot, r.at(p), p.count, r.dtype, r.op);
        if (st != HVD_OK)
            return r.comm.abort_with(st, "ring reduce-scatter: reduction kernel failed");
        if (p.step < r.n - 2) r.comm.send(r.right, r.at(p), r.bytes(p), &sends[sent++]);
        Piece next;
        if (posting.next(&next)) r.comm.recv(r.left, slot, r.bytes(next), &recvs[w]);
    }
    // The allgather overwrites segments these sends read.
    return r.comm.wait_each(sends, sent, "ring reduce-scatter: send to", r.right);
}

hvd_status_t allgather(const Ring &r) {
    Cursor finished(r.segs, r.chunk, r.me + 1, 1);
    Cursor incoming(r.segs, r.chunk, r.me, r.n - 1);
    Cursor posting = incoming;
    size_t num_recvs = incoming.remaining();
    size_t max_sends = finished.remaining() + num_recvs;
    transport::Completion *recvs = r.comm.scratch->completions(num_recvs + max_sends);
    transport::Completion *sends = recvs + num_recvs;

    // Received chunks land in place, in disjoint parts of buf: post them all at once.
    Piece p;
    for (size_t j = 0; posting.next(&p); ++j)
        r.comm.recv(r.left, r.at(p), r.bytes(p), &recvs[j]);
    size_t sent = 0;
    while (finished.next(&p))
        r.comm.send(r.right, r.at(p), r.bytes(p), &sends[sent++]);
    for (size_t j = 0; incoming.next(&p); ++j) {
        hvd_status_t st =
            r.comm.wait_recv(&recvs[j], r.bytes(p), "ring allgather: receive from", r.left);
        if (st != HVD_OK) return st;
        if (p.step < r.n - 2) r.comm.send(r.right, r.at(p), r.bytes(p), &sends[sent++]);
    }
    return r.comm.wait_each(sends, sent, "ring allgather: send to", r.right);
}

}  // namespace

hvd_status_t allreduce_ring(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op,
                            size_t chunk_bytes) {
    hvd_status_t st = check_allreduce_args(comm, buf, count, dtype, op, kName);
    if (st != HVD_OK || comm.size() == 1 || count == 0) return st;
    size_t esize = dtype_size(dtype);
    int32_t n = comm.size();
    Ring r{comm,
           static_cast<char *>(buf),
           dtype,
           op,
           esize,
           EvenBlocks{count, n},
           std::max<size_t>(1, chunk_bytes / esize),
           comm.my_index,
           comm.ring_index(-1),
           comm.ring_index(1),
           n};
    return comm.guarded(kName, [&] {
        hvd_status_t s = reduce_scatter(r);
        return s != HVD_OK ? s : allgather(r);
    });
}

hvd_status_t allreduce_ring(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op) {
    return allreduce_ring(comm, buf, count, dtype, op, ring_chunk_bytes());
}

}  // namespace hvd::collectives
