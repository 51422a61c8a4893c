// SPDX-License-Identifier: Apache-2.0
// Ragged allgather around the ring: at step k a member sends block (me - k) to its right and
// receives block (me - k - 1) from its left, straight into its place in out; n-1 steps. Every
// member must receive every other block anyway, and the ring does it with each byte crossing
// each link exactly once and no member sending more than its share per step. Empty blocks are
// skipped by both sides (each knows all sizes), so they cost no message.
#include <cstring>

#include "collectives/collectives.h"
#include "common/log.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "ring allgatherv";

struct Blocks {
    char *out;
    const std::vector<size_t> &bytes;
    const size_t *offsets;
    int32_t n;
    int32_t wrap(int32_t b) const { return (b % n + n) % n; }
    char *at(int32_t b) const { return out + offsets[wrap(b)]; }
    size_t size(int32_t b) const { return bytes[wrap(b)]; }
};

hvd_status_t run(const Comm &comm, const void *in, const Blocks &blk) {
    int32_t n = blk.n, me = comm.my_index, left = comm.ring_index(-1), right = comm.ring_index(1);
    transport::Completion *recvs = comm.scratch->completions(2 * static_cast<size_t>(n - 1));
    transport::Completion *sends = recvs + (n - 1);
    for (int32_t k = 0; k < n - 1; ++k)
        if (blk.size(me - k - 1) > 0)
            comm.recv(left, blk.at(me - k - 1), blk.size(me - k - 1), &recvs[k]);
    size_t sent = 0;
    if (blk.size(me) > 0) comm.send(right, in, blk.size(me), &sends[sent++]);
    if (in != blk.at(me) && blk.size(me) > 0) std::memcpy(blk.at(me), in, blk.size(me));
    for (int32_t k = 0; k < n - 1; ++k) {
        int32_t b = me - k - 1;
        if (blk.size(b) == 0) continue;
        hvd_status_t st =
            comm.wait_recv(&recvs[k], blk.size(b), "ring allgatherv: receive from", left);
        if (st != HVD_OK) return st;
        if (k < n - 2) comm.send(right, blk.at(b), blk.size(b), &sends[sent++]);
    }
    return comm.wait_each(sends, sent, "ring allgatherv: send to", right);
}

}  // namespace

hvd_status_t allgatherv_ring(Comm &comm, const void *in, void *out,
                             const std::vector<size_t> &bytes) {
    hvd_status_t st = check_allgatherv_args(comm, in, out, bytes, kName);
    if (st != HVD_OK) return st;
    return comm.guarded(kName, [&] {
        int32_t n = comm.size();
        // The block offsets live in scratch (the ring itself needs none): no allocation.
        auto *offsets = static_cast<size_t *>(comm.scratch->get(n * sizeof(size_t)));
        size_t total = 0;
        for (int32_t r = 0; r < n; ++r) {
            offsets[r] = total;
            total += bytes[r];
        }
        Blocks blk{static_cast<char *>(out), bytes, offsets, n};
        if (n == 1) {
            if (in != out && bytes[0] > 0) std::memcpy(out, in, bytes[0]);
            return HVD_OK;
        }
        return run(comm, in, blk);
    });
}

}  // namespace hvd::collectives
