// SPDX-License-Identifier: Apache-2.0
// Ring reduce-scatter over blocks of any sizes: the first half of the ring allreduce, shifted
// so that member r ends with block r. At step k a member sends the partial result of block
// (me - 1 - k) to its right and receives block (me - 2 - k) from its left, combining it with
// its own input; after n-1 steps it holds its own block, finished. Each link carries every
// block except one once: bandwidth-optimal, n-1 rounds.
//
// Block b is combined along one fixed path, starting at member b+1 and ending at b, always as
// (data from earlier in the path) op (own input): the result exists on one member only and
// its bits do not depend on timing.
//
// The input is const, so partial results need a home: each forwarded block gets its own
// place in a scratch work area (the sum of all blocks but the own and the left neighbour's),
// and the last one goes straight to out. Reusing a few staging slots for partial results
// instead would make a send's completion (which, for a large message, waits on the right
// neighbour's receive) a condition for the next receive, and around the ring those waits can
// close a cycle; with a place per block, sends are never waited on before the end. Receives
// go into kRecvWindow rotating chunk slots, as in the ring allreduce, so the next chunks
// arrive while the current one is reduced.
#include <algorithm>
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/patterns/ring_pieces.h"
#include "common/dtype.h"
#include "common/log.h"
#include "reduce/reduce.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "ring reducescatter";
constexpr size_t kRecvWindow = 4;

using Cursor = RingPieceCursor<UnevenBlocks>;
using Piece = RingPiece;

struct Ring {
    const Comm &comm;
    const char *in;
    char *out;
    char *work;   // partial results of the forwarded blocks
    char *slots;  // kRecvWindow receive slots of chunk elements
    UnevenBlocks blocks;
    int32_t dtype;
    int32_t op;
    size_t esize;
    size_t chunk;  // elements
    int32_t me, left, right, n;

    const char *input(const Piece &p) const { return in + p.offset * esize; }
    size_t bytes(const Piece &p) const { return p.count * esize; }
    bool last(const Piece &p) const { return p.step == n - 2; }
    // Where the combined piece goes: out for the own block, else the work area.
    char *result(const Piece &p) const {
        if (last(p)) return out + (p.offset - blocks.begin(me)) * esize;
        return work + p.stage * esize;
    }
    char *slot(size_t j) const { return slots + (j % kRecvWindow) * chunk * esize; }
};

hvd_status_t run(const Ring &r) {
    Cursor own(r.blocks, r.chunk, r.me - 1, 1);
    Cursor incoming(r.blocks, r.chunk, r.me - 2, r.n - 1);
    Cursor posting = incoming;
    size_t max_sends = own.remaining() + incoming.remaining();
    transport::Completion *sends = r.comm.scratch->completions(max_sends + kRecvWindow);
    transport::Completion *recvs = sends + max_sends;

    size_t sent = 0;
    Piece p;
    while (own.next(&p))
        r.comm.send(r.right, r.input(p), r.bytes(p), &sends[sent++]);
    for (size_t w = 0; w < kRecvWindow && posting.next(&p); ++w)
        r.comm.recv(r.left, r.slot(w), r.bytes(p), &recvs[w]);
    for (size_t j = 0; incoming.next(&p); ++j) {
        transport::Completion *c = &recvs[j % kRecvWindow];
        hvd_status_t st =
            r.comm.wait_recv(c, r.bytes(p), "ring reducescatter: receive from", r.left);
        if (st != HVD_OK) return st;
        st = reduce::reduce_into(r.result(p), r.slot(j), r.input(p), p.count, r.dtype, r.op);
        if (st != HVD_OK)
            return r.comm.abort_with(st, "ring reducescatter: reduction kernel failed");
        if (!r.last(p)) r.comm.send(r.right, r.result(p), r.bytes(p), &sends[sent++]);
        Piece next;
        if (posting.next(&next)) r.comm.recv(r.left, r.slot(j), r.bytes(next), c);
    }
    return r.comm.wait_each(sends, sent, "ring reducescatter: send to", r.right);
}

}  // namespace

hvd_status_t reducescatter_ring(Comm &comm, const void *in, void *out,
                                const std::vector<size_t> &counts, int32_t dtype, int32_t op,
                                size_t chunk_bytes) {
    size_t count = 0;
    for (size_t c : counts)
        count += c;
    hvd_status_t st = check_reducescatter_args(comm, in, out, counts, dtype, op, kName);
    if (st != HVD_OK || count == 0) return st;
    size_t esize = dtype_size(dtype);
    int32_t n = comm.size(), me = comm.my_index;
    if (n == 1) {
        if (out != in) std::memcpy(out, in, count * esize);
        return HVD_OK;
    }
    return comm.guarded(kName, [&] {
        // One scratch block, so steady-state calls allocate nothing: the block offsets, then
        // the receive slots, then the work area (both start 64-byte aligned).
        size_t chunk = std::max<size_t>(1, chunk_bytes / esize);
        size_t offsets_bytes = (n * sizeof(size_t) + 63) / 64 * 64;
        size_t slots_bytes = (kRecvWindow * chunk * esize + 63) / 64 * 64;
        size_t work_count = count - counts[me] - counts[(me + n - 1) % n];
        char *base = static_cast<char *>(
            comm.scratch->get(offsets_bytes + slots_bytes + work_count * esize));
        auto *offsets = reinterpret_cast<size_t *>(base);
        offsets[0] = 0;
        for (int32_t b = 1; b < n; ++b)
            offsets[b] = offsets[b - 1] + counts[b - 1];
        Ring r{comm,
               static_cast<const char *>(in),
               static_cast<char *>(out),
               base + offsets_bytes + slots_bytes,
               base + offsets_bytes,
               UnevenBlocks{counts, offsets, n},
               dtype,
               op,
               esize,
               chunk,
               me,
               comm.ring_index(-1),
               comm.ring_index(1),
               n};
        return run(r);
    });
}

hvd_status_t reducescatter_ring(Comm &comm, const void *in, void *out,
                                const std::vector<size_t> &counts, int32_t dtype, int32_t op) {
    return reducescatter_ring(comm, in, out, counts, dtype, op, ring_chunk_bytes());
}

}  // namespace hvd::collectives
