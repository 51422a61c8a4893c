// SPDX-License-Identifier: Apache-2.0
// Allreduce through the shared-memory group of a single-host job, over a list of pieces (one
// tensor, or the tensors of a fused allreduce) seen as one concatenated buffer.
//
// One shot (small buffers): every member copies its buffer into its slot; once all have, each
// reduces all slots in member order into its output. One round, one wait.
//
// Chunked (the rest): a chunk of the slot size is split into one share per member. Every member
// copies the other members' shares of its chunk into its slot; member m reduces share m (its
// own part from its input, the others' from their slots, in member order) into share m of its
// own slot, which nobody else reads that round, and copies the result to its output; then every
// member copies the other shares' results from their owners' slots. Each byte of the buffer is
// read from and written to main memory about once; the slots stay in cache. Chunks are
// pipelined over the slot's two halves: a member gathers chunk k - 1 after staging chunk k, so
// the others' reductions of k - 1 finish while it stages, and only the wait for chunk k's
// staging can stall (measured faster than gathering each chunk at once at 32 and 128 MiB).
//
// Paired (above one slot, up to two): both chunks are staged at once, one in each slot half
// (two rounds), before the members wait for each other; then each reduces its share of both and
// gathers both. One hand-off for staging instead of two, as a buffer of one slot has: where a
// member can be descheduled (ranks not pinned to CPUs), each hand-off is where its peer stalls.
//
// Both orders are the same on every member, so every member ends with identical bits.
#include <cstring>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/shm/shm_sync.h"
#include "collectives/stream_copy.h"
#include "common/dtype.h"
#include "common/log.h"
#include "reduce/reduce.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "shm allreduce";

// The pieces as one buffer: visits the parts of a byte range piece by piece.
class PieceList {
  public:
    PieceList(const Piece *pieces, size_t n) : pieces_(pieces), n_(n) {}
    // fn(in, out, at, len) for every part of [begin, end): in and out point at the part in its
    // piece, at is the part's offset from begin.
    template <typename F>
    hvd_status_t for_range(size_t begin, size_t end, F &&fn) {
        if (begin < start_) rewind();  // ranges mostly move forward: resume where the last ended
        while (cursor_ < n_ && start_ + pieces_[cursor_].bytes <= begin) {
            start_ += pieces_[cursor_].bytes;
            ++cursor_;
        }
        size_t piece_start = start_;
        for (size_t i = cursor_; i < n_ && piece_start < end; ++i) {
            const Piece &p = pieces_[i];
            size_t lo = begin > piece_start ? begin : piece_start;
            size_t hi = end < piece_start + p.bytes ? end : piece_start + p.bytes;
            if (hi > lo) {
                size_t skip = lo - piece_start;
                hvd_status_t s = fn(static_cast<const char *>(p.in) + skip,
                                    static_cast<char *>(p.out) + skip, lo - begin, hi - lo);
                if (s != HVD_OK) return s;
            }
            piece_start += p.bytes;
        }
        return HVD_OK;
    }

  private:
    void rewind() {
        cursor_ = 0;
        start_ = 0;
    }
    const Piece *pieces_;
    size_t n_;
    size_t cursor_ = 0;  // first piece that may overlap the next range
    size_t start_ = 0;   // its offset in the concatenation
};

// fn for PieceList::for_range: copies the parts of the range into dst (the range's start).
auto copy_into(char *dst, StreamCopies &copies) {
    return [dst, &copies](const char *in, char *, size_t at, size_t len) {
        copies.add(dst + at, in, len);
        return HVD_OK;
    };
}

hvd_status_t one_shot(ShmSync &sync, PieceList &list, size_t bytes, int32_t dtype, int32_t op,
                      double scale) {
    shm::Group &g = sync.group();
    uint64_t t = 0;
    hvd_status_t s = sync.begin(&t);
    if (s != HVD_OK) return s;
    char *mine = g.slot(sync.me(), t);
    StreamCopies copies;
    list.for_range(0, bytes, copy_into(mine, copies));
    copies.finish();
    sync.post(shm::Counter::kReady, t);
    s = sync.all(shm::Counter::kReady, t, "to stage its data");
    if (s != HVD_OK) return s;
    const size_t esz = dtype_size(dtype);
    s = list.for_range(0, bytes, [&](const char *, char *out, size_t at, size_t len) {
        return reduce_parts(g, t, at, mine + at, out, out, nullptr, len / esz, dtype, op, scale);
    });
    if (s != HVD_OK) return sync.fatal(s, "the reduction");
    sync.post(shm::Counter::kDone, t);
    return s;
}

// One chunk's round of the chunked algorithm.
struct ChunkRound {
    uint64_t t = 0;
    size_t base = 0;   // byte offset of the chunk in the buffer
    size_t elems = 0;  // elements in the chunk
};

// Stage: copies the other members' shares of the chunk from this member's input into its slot
// (this member's own share stays in its input).
void stage_chunk(ShmSync &sync, PieceList &list, const ChunkRound &r, size_t esz) {
    shm::Group &g = sync.group();
    char *mine = g.slot(sync.me(), r.t);
    StreamCopies copies;
    for (int32_t m = 0; m < g.size(); ++m) {
        Share sh = share_of(r.elems, esz, g.size(), m);
        if (m == sync.me() || sh.count == 0) continue;
        size_t at = sh.first * esz;
        list.for_range(r.base + at, r.base + at + sh.count * esz, copy_into(mine + at, copies));
    }
    copies.finish();
}

// Reduce: this member's share of the chunk (its part from its input, the others' from their
// slots, in member order) into the same share of its own slot, which nobody else reads in that
// round, and from there to its output.
hvd_status_t reduce_own_share(ShmSync &sync, PieceList &list, const ChunkRound &r, size_t esz,
                              int32_t dtype, int32_t op, double scale) {
    shm::Group &g = sync.group();
    Share own = share_of(r.elems, esz, g.size(), sync.me());
    if (own.count == 0) return HVD_OK;
    char *mine = g.slot(sync.me(), r.t);
    size_t at = own.first * esz;
    return list.for_range(r.base + at, r.base + at + own.count * esz,
                          [&](const char *in, char *out, size_t off, size_t len) {
                              char *slot = mine + at + off;
                              return reduce_parts(g, r.t, at + off, in, slot, slot, out, len / esz,
                                                  dtype, op, scale);
                          });
}

// Gather: copies the other members' reduced shares of the chunk from their slots to the output.
void gather_chunk(ShmSync &sync, PieceList &list, const ChunkRound &r, size_t esz) {
    shm::Group &g = sync.group();
    StreamCopies copies;
    for (int32_t m = 0; m < g.size(); ++m) {
        Share sh = share_of(r.elems, esz, g.size(), m);
        if (m == sync.me() || sh.count == 0) continue;
        size_t at = sh.first * esz;
        const char *theirs = g.slot(m, r.t) + at;
        list.for_range(r.base + at, r.base + at + sh.count * esz,
                       [&](const char *, char *out, size_t off, size_t len) {
                           copies.add(out, theirs + off, len);
                           return HVD_OK;
                       });
    }
    copies.finish();
}

// Finishes a round whose reduction this member has posted: waits for the others' reductions,
// gathers them, and frees the round's slots.
hvd_status_t finish_chunk(ShmSync &sync, PieceList &list, const ChunkRound &r, size_t esz) {
    hvd_status_t s = sync.all(shm::Counter::kReduced, r.t, "to reduce its share");
    if (s != HVD_OK) return s;
    gather_chunk(sync, list, r, esz);
    sync.post(shm::Counter::kDone, r.t);
    return HVD_OK;
}

// With the mapped path on, after every member's kReady of `round`, the first round of the
// allreduce: how the offers made in it settle. kNone: nobody offered, go on through the slots.
// kFinished: the mapped allreduce ran. kRestart: the round is dropped (some member offered and
// staged nothing), start again through the slots. Either way but kNone, this member's kDone is
// raised to `last` (the last round the allreduce has taken so far).
enum class Offers { kNone, kFinished, kRestart };
hvd_status_t settle_offers(ShmSync &sync, uint64_t round, uint64_t last, const Piece *pieces,
                           size_t n_pieces, size_t bytes, int32_t dtype, int32_t op, double scale,
                           Offers *outcome) {
    *outcome = Offers::kNone;
    const int32_t offers = count_offers(sync, round);
    if (offers == 0) return HVD_OK;
    *outcome = Offers::kRestart;
    if (offers == sync.group().size()) {
        bool dropped = false;
        hvd_status_t s =
            allreduce_mapped(sync, round, pieces, n_pieces, bytes, dtype, op, scale, &dropped);
        if (s != HVD_OK) return s;
        if (!dropped) *outcome = Offers::kFinished;
        if (last != round) sync.post(shm::Counter::kDone, last);  // allreduce_mapped ends `round`
    } else {
        sync.post(shm::Counter::kDone, last);
    }
    return HVD_OK;
}

hvd_status_t chunked(ShmSync &sync, PieceList &list, const Piece *pieces, size_t n_pieces,
                     size_t bytes, int32_t dtype, int32_t op, double scale, bool may_map);

// Two chunks, one per slot half, staged before a single wait (see the top of the file). With
// the mapped path on, the first round carries the offers as in chunked(); a member that offers
// stages neither chunk.
hvd_status_t paired(ShmSync &sync, PieceList &list, const Piece *pieces, size_t n_pieces,
                    size_t bytes, size_t chunk, int32_t dtype, int32_t op, double scale,
                    bool may_map) {
    const size_t esz = dtype_size(dtype);
    ChunkRound r[2];
    r[0].elems = chunk / esz;
    r[1].base = chunk;
    r[1].elems = (bytes - chunk) / esz;
    bool offered = false;
    for (ChunkRound &c : r) {
        hvd_status_t s = sync.begin(&c.t);
        if (s != HVD_OK) return s;
        if (&c == r) offered = may_map && offer_mapped(sync, c.t, pieces, n_pieces, bytes);
        if (!offered) stage_chunk(sync, list, c, esz);
        sync.post(shm::Counter::kReady, c.t);
    }
    for (ChunkRound &c : r) {
        hvd_status_t s = sync.all(shm::Counter::kReady, c.t, "to stage its chunk");
        if (s != HVD_OK) return s;
    }
    if (may_map) {
        Offers outcome;
        hvd_status_t s = settle_offers(sync, r[0].t, r[1].t, pieces, n_pieces, bytes, dtype, op,
                                       scale, &outcome);
        if (s != HVD_OK || outcome == Offers::kFinished) return s;
        if (outcome == Offers::kRestart)
            return chunked(sync, list, pieces, n_pieces, bytes, dtype, op, scale, false);
    }
    for (ChunkRound &c : r) {
        hvd_status_t s = reduce_own_share(sync, list, c, esz, dtype, op, scale);
        if (s != HVD_OK) return sync.fatal(s, "the reduction of its share");
        sync.post(shm::Counter::kReduced, c.t);
    }
    for (ChunkRound &c : r) {
        hvd_status_t s = sync.all(shm::Counter::kReduced, c.t, "to reduce its share");
        if (s != HVD_OK) return s;
        gather_chunk(sync, list, c, esz);
    }
    sync.post(shm::Counter::kDone, r[1].t);
    return HVD_OK;
}

// Pipelined over the two slot halves: a member stages chunk k, then gathers chunk k - 1 (whose
// reductions the others posted while it staged), then waits for chunk k's staging and reduces
// its share. One wait per chunk that can stall, instead of two.
//
// With the mapped path on for this size, the first round also tells whether every member's
// buffer is an hvd_mem_alloc region: a member whose buffer is offers it instead of staging.
// All offered: the mapped allreduce does the rest (unless a member cannot map the others'
// buffers). Some did: that round is dropped and the allreduce starts again through the slots
// (the members that offered staged nothing).
hvd_status_t chunked(ShmSync &sync, PieceList &list, const Piece *pieces, size_t n_pieces,
                     size_t bytes, int32_t dtype, int32_t op, double scale, bool may_map) {
    const size_t esz = dtype_size(dtype);
    const size_t chunk = sync.group().slot_bytes() / esz * esz;
    may_map = may_map && sync.group().mapped(bytes);
    if (bytes > chunk && bytes <= 2 * chunk)
        return paired(sync, list, pieces, n_pieces, bytes, chunk, dtype, op, scale, may_map);
    ChunkRound prev;
    for (size_t base = 0; base < bytes; base += chunk) {
        ChunkRound cur;
        cur.base = base;
        cur.elems = (bytes - base < chunk ? bytes - base : chunk) / esz;
        hvd_status_t s = sync.begin(&cur.t);
        if (s != HVD_OK) return s;
        const bool offered = may_map && offer_mapped(sync, cur.t, pieces, n_pieces, bytes);
        if (!offered) stage_chunk(sync, list, cur, esz);
        sync.post(shm::Counter::kReady, cur.t);
        if (prev.t != 0 && (s = finish_chunk(sync, list, prev, esz)) != HVD_OK) return s;
        s = sync.all(shm::Counter::kReady, cur.t, "to stage its chunk");
        if (s != HVD_OK) return s;
        if (may_map) {
            may_map = false;
            Offers outcome;
            s = settle_offers(sync, cur.t, cur.t, pieces, n_pieces, bytes, dtype, op, scale,
                              &outcome);
            if (s != HVD_OK || outcome == Offers::kFinished) return s;
            if (outcome == Offers::kRestart)
                return chunked(sync, list, pieces, n_pieces, bytes, dtype, op, scale, false);
        }
        s = reduce_own_share(sync, list, cur, esz, dtype, op, scale);
        if (s != HVD_OK) return sync.fatal(s, "the reduction of its share");
        sync.post(shm::Counter::kReduced, cur.t);
        prev = cur;
    }
    return prev.t != 0 ? finish_chunk(sync, list, prev, esz) : HVD_OK;
}

// The pieces with those that lie back to back in both input and output joined (tensors cut
// from one flat buffer): the slots then walk long parts, whose copies and reductions run as
// streams, instead of many short ones. Only for this rank's own walk: the offers of the
// mapped path name the pieces as every member has them.
const std::vector<Piece> &join_adjacent(const Piece *pieces, size_t n_pieces) {
    thread_local std::vector<Piece> joined;
    joined.clear();
    for (size_t i = 0; i < n_pieces; ++i) {
        const Piece &p = pieces[i];
        if (p.bytes == 0) continue;
        if (!joined.empty()) {
            Piece &last = joined.back();
            if (static_cast<const char *>(last.in) + last.bytes == p.in &&
                static_cast<char *>(last.out) + last.bytes == p.out) {
                last.bytes += p.bytes;
                continue;
            }
        }
        joined.push_back(p);
    }
    return joined;
}

hvd_status_t run(Comm &comm, const Piece *pieces, size_t n_pieces, size_t bytes, int32_t dtype,
                 int32_t op, double scale) {
    return comm.guarded(kName, [&] {
        ShmSync sync(comm, kName);
        const Piece *walk = pieces;
        size_t n_walk = n_pieces;
        if (n_pieces > 1) {
            const std::vector<Piece> &parts = join_adjacent(pieces, n_pieces);
            walk = parts.data();
            n_walk = parts.size();
        }
        PieceList list(walk, n_walk);
        if (bytes <= comm.shm->one_shot_max_bytes() && bytes <= comm.shm->slot_bytes())
            return one_shot(sync, list, bytes, dtype, op, scale);
        return chunked(sync, list, pieces, n_pieces, bytes, dtype, op, scale, true);
    });
}

}  // namespace

hvd_status_t allreduce_shm(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op) {
    hvd_status_t st = check_allreduce_args(comm, buf, count, dtype, op, kName);
    if (st == HVD_OK) st = check_shm_comm(comm, kName);
    if (st != HVD_OK || comm.size() == 1 || count == 0) return st;
    Piece whole{buf, buf, count * dtype_size(dtype)};
    return run(comm, &whole, 1, whole.bytes, dtype, op, 1.0);
}

hvd_status_t allreduce_shm_pieces(Comm &comm, const Piece *pieces, size_t n_pieces, int32_t dtype,
                                  int32_t op, double scale) {
    size_t bytes = 0;
    bool whole_elements = true;
    for (size_t i = 0; i < n_pieces; ++i) {
        bytes += pieces[i].bytes;
        whole_elements = whole_elements && dtype_valid(dtype) &&
                         pieces[i].bytes % dtype_size(dtype) == 0 &&
                         (pieces[i].bytes == 0 || (pieces[i].in && pieces[i].out));
    }
    const void *any = n_pieces > 0 ? pieces[0].out : nullptr;
    hvd_status_t st = check_allreduce_args(comm, bytes > 0 ? any : nullptr, 0, dtype, op, kName);
    if (st == HVD_OK) st = check_shm_comm(comm, kName);
    if (st == HVD_OK && !whole_elements) {
        st = HVD_ERR_INVALID_ARG;
        HVD_LOG(kError, comm.global_rank(), "%s: a piece is not whole elements or has no buffer",
                kName);
    }
    if (st != HVD_OK || bytes == 0) return st;
    if (comm.size() == 1) {
        const size_t esz = dtype_size(dtype);
        for (size_t i = 0; i < n_pieces && st == HVD_OK; ++i) {
            if (scale != 1.0)
                st = reduce::scale_into(pieces[i].out, pieces[i].in, pieces[i].bytes / esz, dtype,
                                        scale);
            else if (pieces[i].out != pieces[i].in && pieces[i].bytes > 0)
                stream_copy(pieces[i].out, pieces[i].in, pieces[i].bytes);
        }
        return st;
    }
    return run(comm, pieces, n_pieces, bytes, dtype, op, scale);
}

}  // namespace hvd::collectives
