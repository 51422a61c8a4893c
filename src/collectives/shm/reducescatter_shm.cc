// SPDX-License-Identifier: Apache-2.0
// Reduce-scatter through the shared-memory group of one host, over blocks of any sizes.
//
// Round k takes piece k of every block: elements [k q, (k + 1) q) of it, where q is what a
// slot half holds divided by the members (whole 64-byte lines). Every member copies the
// pieces of the other members' blocks from its input into its slot, block m's at m q; member
// m then reduces piece k of block m, its own part from its input and the others' from their
// slots in member order, straight into its output (the sums before the last, with three
// members or more, go to the unused place for block m in its own slot, since the output may be
// the own part's input). Every member ends with its block only, in the same order of
// operations on every member, so the bits never depend on timing.
//
// Rounds are pipelined over the slot's two halves: a member stages round k before it waits
// for the others' staging of round k - 1 and reduces it, so its copies overlap theirs, and
// only that wait can stall.
#include <algorithm>
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/shm/shm_sync.h"
#include "collectives/stream_copy.h"
#include "common/dtype.h"
#include "common/log.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "shm reducescatter";

struct Blocks {
    const char *in;
    char *out;
    std::vector<size_t> first;  // element offset of each block in `in`
    const std::vector<size_t> &counts;
    size_t esz;
    size_t quota;  // elements of each block per round

    // Elements of block m in round k.
    size_t piece(int32_t m, size_t k) const {
        const size_t begin = k * quota;
        return counts[m] > begin ? std::min(quota, counts[m] - begin) : 0;
    }
    const char *input(int32_t m, size_t k) const { return in + (first[m] + k * quota) * esz; }
    size_t slot_at(int32_t m) const { return m * quota * esz; }
};

void stage_round(ShmSync &sync, const Blocks &b, size_t k, uint64_t t) {
    char *mine = sync.group().slot(sync.me(), t);
    StreamCopies copies;
    for (int32_t m = 0; m < sync.group().size(); ++m) {
        const size_t elems = b.piece(m, k);
        if (m != sync.me() && elems > 0)
            copies.add(mine + b.slot_at(m), b.input(m, k), elems * b.esz);
    }
    copies.finish();
}

hvd_status_t reduce_round(ShmSync &sync, const Blocks &b, size_t k, uint64_t t, int32_t dtype,
                          int32_t op) {
    hvd_status_t s = sync.all(shm::Counter::kReady, t, "to stage its pieces");
    if (s != HVD_OK) return s;
    const int32_t me = sync.me();
    const size_t elems = b.piece(me, k);
    if (elems > 0) {
        const size_t at = b.slot_at(me);
        s = reduce_parts(sync.group(), t, at, b.input(me, k), sync.group().slot(me, t) + at,
                         b.out + k * b.quota * b.esz, nullptr, elems, dtype, op, 1.0);
        if (s != HVD_OK) return sync.fatal(s, "the reduction of its block");
    }
    sync.post(shm::Counter::kDone, t);
    return HVD_OK;
}

}  // namespace

hvd_status_t reducescatter_shm(Comm &comm, const void *in, void *out,
                               const std::vector<size_t> &counts, int32_t dtype, int32_t op) {
    hvd_status_t st = check_reducescatter_args(comm, in, out, counts, dtype, op, kName);
    if (st == HVD_OK) st = check_shm_comm(comm, kName);
    if (st != HVD_OK) return st;
    const size_t esz = dtype_size(dtype);
    const int32_t n = comm.size();
    size_t count = 0, largest = 0;
    for (size_t c : counts) {
        count += c;
        largest = std::max(largest, c);
    }
    if (count == 0) return HVD_OK;
    if (n == 1) {
        if (out != in) std::memcpy(out, in, count * esz);
        return HVD_OK;
    }
    size_t per_member = comm.shm->slot_bytes() / n;
    if (per_member >= 64) per_member -= per_member % 64;
    if (per_member < esz) {
        HVD_LOG(kError, comm.global_rank(),
                "%s: a slot of %zu bytes cannot hold an element of %s for each of %d members "
                "(raise HVD_SHM_SLOT_BYTES)",
                kName, comm.shm->slot_bytes(), dtype_name(dtype), n);
        return HVD_ERR_UNSUPPORTED;
    }
    Blocks b{
        static_cast<const char *>(in), static_cast<char *>(out), {}, counts, esz, per_member / esz};
    b.first.resize(n);
    for (int32_t m = 1; m < n; ++m)
        b.first[m] = b.first[m - 1] + counts[m - 1];
    const size_t rounds = (largest + b.quota - 1) / b.quota;
    return comm.guarded(kName, [&] {
        ShmSync sync(comm, kName);
        uint64_t prev = 0;
        for (size_t k = 0; k < rounds; ++k) {
            uint64_t t = 0;
            hvd_status_t s = sync.begin(&t);
            if (s != HVD_OK) return s;
            stage_round(sync, b, k, t);
            sync.post(shm::Counter::kReady, t);
            if (prev != 0 && (s = reduce_round(sync, b, k - 1, prev, dtype, op)) != HVD_OK)
                return s;
            prev = t;
        }
        return reduce_round(sync, b, rounds - 1, prev, dtype, op);
    });
}

}  // namespace hvd::collectives
