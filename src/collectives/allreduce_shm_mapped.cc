// The mapped allreduce: every member's buffer lies in an hvd_mem_alloc region, which every
// other member maps. Member m reduces share m of the buffer (whole 64-byte lines) from all
// members' inputs, in member order, and stores the result into every member's output; then
// all wait until every share is written. Each input byte is read once and each output byte
// written once, by one core, with no staging copy and no slot in between: 2 ranks, 64 MiB
// in place, 3.1 ms against 8.3-9.0 ms through the slots (a two-process model, with each rank
// rewriting its buffer before every reduction: the same).
//
// Shares are disjoint, so in place is safe: the only member that reads a byte of any input is
// the one that then overwrites it. The order of the operands is the slots' (member order), so
// both paths give identical bits.
#include <cstring>

#include "collectives/shm_sync.h"
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

// What a member writes into its slot half when it offers.
struct Offer {
    shm::SharedRef in;
    shm::SharedRef out;
    uint64_t bytes;
};

bool fits(const shm::SharedRef &r, uint64_t bytes) {
    return r.offset <= r.bytes && bytes <= r.bytes - r.offset;
}

// Every member's input and output in this process; false with *error if one cannot be mapped
// or a member's offer does not match this allreduce.
bool resolve(ShmSync &sync, uint64_t round, const Piece &mine, size_t bytes,
             std::vector<const char *> *ins, std::vector<char *> *outs, std::string *error) {
    shm::Group &g = sync.group();
    for (int32_t m = 0; m < g.size(); ++m) {
        if (m == sync.me()) {
            (*ins)[m] = static_cast<const char *>(mine.in);
            (*outs)[m] = static_cast<char *>(mine.out);
            continue;
        }
        Offer offer;
        std::memcpy(&offer, g.slot(m, round), sizeof offer);
        if (offer.bytes != bytes || !fits(offer.in, bytes) || !fits(offer.out, bytes)) {
            *error = strprintf("member %d offered a buffer of %llu bytes for %zu", m,
                               static_cast<unsigned long long>(offer.bytes), bytes);
            return false;
        }
        char *in = g.map_region(m, offer.in, error);
        char *out = in != nullptr ? g.map_region(m, offer.out, error) : nullptr;
        if (out == nullptr) return false;
        (*ins)[m] = in + offer.in.offset;
        (*outs)[m] = out + offer.out.offset;
    }
    return true;
}

// This member's share: the reduction of every input over [at, at + count elements), stored to
// every output.
hvd_status_t reduce_share(ShmSync &sync, const std::vector<const char *> &ins,
                          const std::vector<char *> &outs, size_t at, size_t count, int32_t dtype,
                          int32_t op) {
    const size_t esz = dtype_size(dtype);
    const int32_t n = static_cast<int32_t>(ins.size());
    if (n == 2)  // one pass: both outputs stored from the same registers
        return reduce::reduce_into_twice(outs[sync.me()] + at, outs[1 - sync.me()] + at,
                                         ins[0] + at, ins[1] + at, count, dtype, op);
    const size_t block = kBlockBytes / esz;
    char *acc = static_cast<char *>(sync.comm().scratch->get(block * esz));
    for (size_t done = 0; done < count; done += block) {
        const size_t len = count - done < block ? count - done : block;
        const size_t off = at + done * esz;
        hvd_status_t s = reduce::reduce_into(acc, ins[0] + off, ins[1] + off, len, dtype, op);
        for (int32_t m = 2; m < n && s == HVD_OK; ++m)
            s = reduce::reduce_into(acc, acc, ins[m] + off, len, dtype, op);
        if (s != HVD_OK) return s;
        StreamCopies copies;
        for (int32_t m = 0; m < n; ++m)
            copies.add(outs[m] + off, acc, len * esz);
    }
    return HVD_OK;
}

}  // namespace

bool offer_mapped(ShmSync &sync, uint64_t round, const Piece *pieces, size_t n_pieces,
                  size_t bytes) {
    shm::Group &g = sync.group();
    Offer offer{};
    offer.bytes = bytes;
    bool ok = n_pieces == 1 && shm::shared_find(pieces[0].in, bytes, &offer.in) &&
              shm::shared_find(pieces[0].out, bytes, &offer.out);
    if (ok) std::memcpy(g.slot(sync.me(), round), &offer, sizeof offer);
    g.mark(round, ok);
    return ok;
}

int32_t count_offers(const ShmSync &sync, uint64_t round) {
    int32_t n = 0;
    for (int32_t m = 0; m < sync.group().size(); ++m)
        n += sync.group().marked(m, round) ? 1 : 0;
    return n;
}

hvd_status_t allreduce_mapped(ShmSync &sync, uint64_t round, const Piece &mine, size_t bytes,
                              int32_t dtype, int32_t op) {
    shm::Group &g = sync.group();
    std::vector<const char *> ins(static_cast<size_t>(g.size()));
    std::vector<char *> outs(static_cast<size_t>(g.size()));
    std::string error;
    if (!resolve(sync, round, mine, bytes, &ins, &outs, &error))
        return sync.comm().abort_with(
            HVD_ERR_INTERNAL,
            strprintf("%s: %s while the others wait on this rank (HVD_SHM_MAPPED_MIN_BYTES=0 "
                      "turns this path off)",
                      kName, error.c_str()));
    const size_t esz = dtype_size(dtype);
    Share own = share_of(bytes / esz, esz, g.size(), sync.me());
    hvd_status_t s = own.count == 0
                         ? HVD_OK
                         : reduce_share(sync, ins, outs, own.first * esz, own.count, dtype, op);
    if (s != HVD_OK) return sync.fatal(s, "the reduction of its share");
    sync.post(shm::Counter::kDone, round);
    return sync.all(shm::Counter::kDone, round, "to write its share into every buffer");
}

}  // namespace hvd::collectives
