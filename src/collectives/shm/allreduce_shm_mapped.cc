// SPDX-License-Identifier: Apache-2.0
// The mapped allreduce: every member's buffers (one tensor, or the pieces of a fused allreduce)
// lie in hvd_mem_alloc regions, which every other member maps. Member m reduces share m of the
// concatenated pieces (whole 64-byte lines) from all members' inputs, in member order, and
// stores the result into every member's output; then all wait until every share is written.
// Before anyone writes, every member says whether it could map all the others' buffers; if one
// could not, all of them redo the allreduce through the slots. Each input byte is read once and
// each output byte written once, by one core, with no staging copy and no slot in between:
// several times faster than through the slots for large buffers (docs/performance.md).
//
// Shares are disjoint, so in place is safe: the only member that reads a byte of any input is
// the one that then overwrites it. The order of the operands is the slots' (member order), so
// both paths give identical bits.
#include <cstring>

#include "collectives/shm/shm_sync.h"
#include "collectives/stream_copy.h"
#include "common/dtype.h"
#include "common/log.h"
#include "reduce/reduce.h"
#include "shm/shared_memory.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "shm mapped allreduce";
// Members beyond two reduce through a block that stays in cache, then copy it to every output.
constexpr size_t kBlockBytes = 64 * 1024;

// What a member writes into its slot half when it offers: a header, then its pieces as runs,
// each a stretch of consecutive pieces that lie back to back in one input region and one
// output region (a fused op's tensors carved from one buffer make one run).
struct OfferHeader {
    uint64_t bytes;  // of all pieces together
    uint64_t n_pieces;
    uint64_t n_runs;
};
struct RunOffer {
    shm::SharedRef in;  // where the run's first piece starts
    shm::SharedRef out;
    uint64_t bytes;
    uint64_t first_piece;
    uint64_t n_pieces;
};

bool fits(const shm::SharedRef &r, uint64_t bytes) {
    return r.offset <= r.bytes && bytes <= r.bytes - r.offset;
}

// Every member's pieces in this process: ins[m][i] and outs[m][i] are member m's piece i.
struct Buffers {
    std::vector<std::vector<const char *>> ins;
    std::vector<std::vector<char *>> outs;
};

// Maps member m's runs and points its pieces into them; consecutive runs in one region cost
// one lookup.
bool resolve_member(shm::Group &g, int32_t m, const char *offer, const Piece *pieces,
                    size_t n_pieces, size_t bytes, Buffers *b, std::string *error) {
    OfferHeader head;
    std::memcpy(&head, offer, sizeof head);
    if (head.bytes != bytes || head.n_pieces != n_pieces || head.n_runs > n_pieces) {
        *error = strprintf("member %d offered %llu pieces of %llu bytes for %zu of %zu", m,
                           static_cast<unsigned long long>(head.n_pieces),
                           static_cast<unsigned long long>(head.bytes), n_pieces, bytes);
        return false;
    }
    uint64_t last_id = 0;
    uint64_t last_bytes = 0;
    char *last_base = nullptr;
    auto map = [&](const shm::SharedRef &ref) -> char * {
        if (last_base == nullptr || ref.id != last_id || ref.bytes != last_bytes) {
            last_base = g.map_region(m, ref, error);
            last_id = ref.id;
            last_bytes = ref.bytes;
        }
        return last_base == nullptr ? nullptr : last_base + ref.offset;
    };
    size_t next = 0;  // the piece the next run must start at
    for (uint64_t r = 0; r < head.n_runs; ++r) {
        RunOffer run;
        std::memcpy(&run, offer + sizeof head + r * sizeof run, sizeof run);
        bool matches =
            run.first_piece == next && run.n_pieces > 0 && run.n_pieces <= n_pieces - next;
        size_t run_bytes = 0;
        for (size_t i = next; matches && i < next + run.n_pieces; ++i)
            run_bytes += pieces[i].bytes;
        matches = matches && run_bytes == run.bytes && fits(run.in, run.bytes) &&
                  fits(run.out, run.bytes);
        if (!matches) {
            *error = strprintf(
                "member %d offered a run of %llu pieces from %llu (%llu bytes) "
                "that does not match this allreduce",
                m, static_cast<unsigned long long>(run.n_pieces),
                static_cast<unsigned long long>(run.first_piece),
                static_cast<unsigned long long>(run.bytes));
            return false;
        }
        const char *in = nullptr;
        char *out = nullptr;
        if (run.bytes > 0) {
            in = map(run.in);
            out = in != nullptr ? map(run.out) : nullptr;
            if (out == nullptr) return false;
        }
        for (size_t i = next; i < next + run.n_pieces; ++i) {
            b->ins[m][i] = in;
            b->outs[m][i] = out;
            if (in != nullptr) {
                in += pieces[i].bytes;
                out += pieces[i].bytes;
            }
        }
        next += run.n_pieces;
    }
    if (next != n_pieces) {
        *error = strprintf("member %d offered runs of %zu pieces for %zu", m, next, n_pieces);
        return false;
    }
    return true;
}

bool resolve(ShmSync &sync, uint64_t round, const Piece *pieces, size_t n_pieces, size_t bytes,
             Buffers *b, std::string *error) {
    shm::Group &g = sync.group();
    const size_t n = static_cast<size_t>(g.size());
    b->ins.assign(n, std::vector<const char *>(n_pieces));
    b->outs.assign(n, std::vector<char *>(n_pieces));
    for (int32_t m = 0; m < g.size(); ++m) {
        if (m != sync.me()) {
            if (!resolve_member(g, m, g.slot(m, round), pieces, n_pieces, bytes, b, error))
                return false;
            continue;
        }
        for (size_t i = 0; i < n_pieces; ++i) {
            b->ins[m][i] = static_cast<const char *>(pieces[i].in);
            b->outs[m][i] = static_cast<char *>(pieces[i].out);
        }
    }
    return true;
}

// Elements [at, at + len) of piece i: the reduction of every member's input, stored to every
// member's output.
hvd_status_t reduce_part(ShmSync &sync, const Buffers &b, size_t i, size_t at, size_t len,
                         int32_t dtype, int32_t op, double scale) {
    const size_t esz = dtype_size(dtype);
    const int32_t n = static_cast<int32_t>(b.ins.size());
    auto in = [&](int32_t m) { return b.ins[m][i] + at; };
    auto out = [&](int32_t m) { return b.outs[m][i] + at; };
    if (n == 2)  // one pass: both outputs stored from the same registers
        return reduce::reduce_into_scaled(out(sync.me()), out(1 - sync.me()), in(0), in(1),
                                          len / esz, dtype, op, scale);
    char *acc = static_cast<char *>(sync.comm().scratch->get(kBlockBytes));
    const size_t block = kBlockBytes / esz * esz;
    for (size_t done = 0; done < len; done += block) {
        const size_t part = len - done < block ? len - done : block;
        hvd_status_t s =
            reduce::reduce_into(acc, in(0) + done, in(1) + done, part / esz, dtype, op);
        for (int32_t m = 2; m < n && s == HVD_OK; ++m)
            s = m + 1 < n ? reduce::reduce_into(acc, acc, in(m) + done, part / esz, dtype, op)
                          : reduce::reduce_into_scaled(acc, nullptr, acc, in(m) + done, part / esz,
                                                       dtype, op, scale);
        if (s != HVD_OK) return s;
        StreamCopies copies;
        for (int32_t m = 0; m < n; ++m)
            copies.add(out(m) + done, acc, part);
    }
    return HVD_OK;
}

// Whether piece i (len bytes) ends where piece i + 1 starts, in and out, on every member.
bool adjacent(const Buffers &b, size_t i, size_t len) {
    for (size_t m = 0; m < b.ins.size(); ++m)
        if (b.ins[m][i] == nullptr || b.ins[m][i] + len != b.ins[m][i + 1] ||
            b.outs[m][i] + len != b.outs[m][i + 1])
            return false;
    return true;
}

// This member's share of the concatenated pieces. Pieces that lie back to back on every member
// (a framework's flat buffer, tensors allocated in one block) are reduced as one run, which the
// kernels then walk in streams (slightly faster on a 256 x 16 KiB step, no change at 4 KiB).
hvd_status_t reduce_share(ShmSync &sync, const Buffers &b, const Piece *pieces, size_t n_pieces,
                          size_t begin, size_t end, int32_t dtype, int32_t op, double scale) {
    size_t start = 0;
    for (size_t i = 0; i < n_pieces && start < end;) {
        size_t last = i;
        size_t run_end = start + pieces[i].bytes;
        while (last + 1 < n_pieces && run_end < end && adjacent(b, last, pieces[last].bytes))
            run_end += pieces[++last].bytes;
        const size_t lo = begin > start ? begin : start;
        const size_t hi = end < run_end ? end : run_end;
        if (hi > lo) {
            hvd_status_t s = reduce_part(sync, b, i, lo - start, hi - lo, dtype, op, scale);
            if (s != HVD_OK) return s;
        }
        start = run_end;
        i = last + 1;
    }
    return HVD_OK;
}

// shm::shared_find for many ranges in a row: a range inside the region found last needs no
// registry lookup (the pieces of a fused op mostly share one region).
class RegionCursor {
  public:
    bool find(const void *p, size_t len, shm::SharedRef *ref) {
        const char *at = static_cast<const char *>(p);
        if (base_ == nullptr || at < base_ || static_cast<size_t>(at - base_) > last_.bytes ||
            len > last_.bytes - static_cast<size_t>(at - base_)) {
            if (!shm::shared_find(p, len, &last_)) return false;
            base_ = at - last_.offset;
        }
        *ref = last_;
        ref->offset = static_cast<uint64_t>(at - base_);
        return true;
    }

  private:
    const char *base_ = nullptr;
    shm::SharedRef last_;
};

}  // namespace

bool offer_mapped(ShmSync &sync, uint64_t round, const Piece *pieces, size_t n_pieces,
                  size_t bytes) {
    shm::Group &g = sync.group();
    char *slot = g.slot(sync.me(), round);
    const size_t max_runs = (g.slot_bytes() - sizeof(OfferHeader)) / sizeof(RunOffer);
    // The others keep at most kPerMember of this member's regions mapped: an op needing more
    // would unmap its own buffers while it still uses them, so it goes through the slots.
    uint64_t regions[shm::PeerRegions::kPerMember];
    size_t n_regions = 0;
    auto count_region = [&](uint64_t id) {
        for (size_t k = 0; k < n_regions; ++k)
            if (regions[k] == id) return true;
        if (n_regions == shm::PeerRegions::kPerMember) return false;
        regions[n_regions++] = id;
        return true;
    };
    RegionCursor ins, outs;
    RunOffer run{};
    const char *run_in = nullptr;  // where the run starts in this process
    const char *run_out = nullptr;
    size_t n_runs = 0;
    bool ok = true;
    auto flush = [&]() {
        if (run.n_pieces == 0) return true;
        if (n_runs == max_runs) return false;
        std::memcpy(slot + sizeof(OfferHeader) + n_runs++ * sizeof run, &run, sizeof run);
        return true;
    };
    for (size_t i = 0; i < n_pieces && ok; ++i) {
        const size_t len = pieces[i].bytes;
        const char *in = static_cast<const char *>(pieces[i].in);
        const char *out = static_cast<const char *>(pieces[i].out);
        // Back to back with the run, inside its regions: the run grows.
        const bool extends =
            run.n_pieces > 0 &&
            (len == 0 || (run.bytes > 0 && in == run_in + run.bytes && out == run_out + run.bytes &&
                          fits(run.in, run.bytes + len) && fits(run.out, run.bytes + len)));
        if (extends) {
            run.bytes += len;
            ++run.n_pieces;
            continue;
        }
        ok = flush();
        run = RunOffer{};
        run.first_piece = i;
        run.n_pieces = 1;
        run.bytes = len;
        run_in = in;
        run_out = out;
        if (ok && len > 0)
            ok = ins.find(in, len, &run.in) && outs.find(out, len, &run.out) &&
                 count_region(run.in.id) && count_region(run.out.id);
    }
    ok = ok && flush();
    if (ok) {
        OfferHeader head{bytes, n_pieces, n_runs};
        std::memcpy(slot, &head, sizeof head);
    }
    g.mark(shm::Mark::kMapped, round, ok);
    return ok;
}

int32_t count_offers(const ShmSync &sync, uint64_t round) {
    int32_t n = 0;
    for (int32_t m = 0; m < sync.group().size(); ++m)
        n += sync.group().marked(m, shm::Mark::kMapped, round) ? 1 : 0;
    return n;
}

hvd_status_t allreduce_mapped(ShmSync &sync, uint64_t round, const Piece *pieces, size_t n_pieces,
                              size_t bytes, int32_t dtype, int32_t op, double scale,
                              bool *dropped) {
    shm::Group &g = sync.group();
    *dropped = false;
    Buffers b;
    std::string error;
    // Every member must have mapped every other's buffers before anyone writes into them; one
    // that could not (out of descriptors or mappings) makes all of them use the slots.
    const bool ok = resolve(sync, round, pieces, n_pieces, bytes, &b, &error);
    if (!ok)
        HVD_LOG(kWarning, sync.comm().global_rank(),
                "%s: %s: this allreduce goes through the slots instead", kName, error.c_str());
    g.mark(shm::Mark::kResolved, round, ok);
    sync.post(shm::Counter::kReduced, round);
    hvd_status_t s = sync.all(shm::Counter::kReduced, round, "to map the others' buffers");
    if (s != HVD_OK) return s;
    for (int32_t m = 0; m < g.size(); ++m) {
        if (g.marked(m, shm::Mark::kResolved, round)) continue;
        sync.post(shm::Counter::kDone, round);
        *dropped = true;
        return HVD_OK;
    }
    const size_t esz = dtype_size(dtype);
    Share own = share_of(bytes / esz, esz, g.size(), sync.me());
    s = reduce_share(sync, b, pieces, n_pieces, own.first * esz, (own.first + own.count) * esz,
                     dtype, op, scale);
    if (s != HVD_OK) return sync.fatal(s, "the reduction of its share");
    sync.post(shm::Counter::kDone, round);
    return sync.all(shm::Counter::kDone, round, "to write its share into every buffer");
}

}  // namespace hvd::collectives
