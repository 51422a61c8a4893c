// SPDX-License-Identifier: Apache-2.0
// Gather in place of byte ranges (placed_gather.h) around the ring: at step k a member sends
// part (me - k) to its right and receives part (me - k - 1) from its left, a message per
// range, straight into the ranges of its buffer; n-1 steps, each byte crossing each link once.
// Every member knows every part, so both sides walk the same messages in the same order.
#include "collectives/collectives.h"
#include "collectives/placed_gather.h"

namespace hvd::collectives {

namespace {
constexpr const char *kName = "ring allgather of ranges";
}

hvd_status_t allgather_ranges_ring(Comm &comm, char *buf, const std::vector<Ranges> &parts) {
    hvd_status_t st = check_parts(comm, parts, kName);
    if (st != HVD_OK) return st;
    const int32_t n = comm.size(), me = comm.my_index;
    if (n == 1) return HVD_OK;
    const int32_t left = comm.ring_index(-1), right = comm.ring_index(1);
    auto part = [&](int32_t b) -> const Ranges & { return parts[((b % n) + n) % n]; };
    return comm.guarded(kName, [&] {
        size_t ranges = 0;
        for (const Ranges &p : parts)
            ranges += p.size();
        transport::Completion *recvs = comm.scratch->completions(2 * ranges);
        transport::Completion *sends = recvs + ranges;
        size_t posted = 0, sent = 0;
        for (int32_t k = 0; k < n - 1; ++k)
            for (const ByteRange &r : part(me - k - 1))
                comm.recv(left, buf + r.at, r.len, &recvs[posted++]);
        for (const ByteRange &r : part(me))
            comm.send(right, buf + r.at, r.len, &sends[sent++]);
        size_t waited = 0;
        for (int32_t k = 0; k < n - 1; ++k) {
            const Ranges &p = part(me - k - 1);
            for (const ByteRange &r : p) {
                hvd_status_t s = comm.wait_recv(&recvs[waited++], r.len,
                                                "ring allgather of ranges: receive from", left);
                if (s != HVD_OK) return s;
            }
            if (k < n - 2)
                for (const ByteRange &r : p)
                    comm.send(right, buf + r.at, r.len, &sends[sent++]);
        }
        return comm.wait_each(sends, sent, "ring allgather of ranges: send to", right);
    });
}

}  // namespace hvd::collectives
