// SPDX-License-Identifier: Apache-2.0
// Gather in place of byte ranges (placed_gather.h) through a host's shared-memory group. Single
// copy (the largest part from the group's single-copy minimum on): every member publishes its
// buffer's address and reads each other member's ranges straight from that member's buffer
// into the same places of its own, one round. Staged: a part is a stream of its ranges; in
// round k every member copies piece k (slot-sized) of its stream into its slot, then copies
// every other member's piece k into its ranges.
#include "collectives/collectives.h"
#include "collectives/placed_gather.h"
#include "collectives/shm/shm_sync.h"
#include "collectives/stream_copy.h"

namespace hvd::collectives {

namespace {
constexpr const char *kName = "shm allgather of ranges";
}

hvd_status_t allgather_ranges_shm(Comm &comm, char *buf, size_t buf_bytes,
                                  const std::vector<Ranges> &parts) {
    hvd_status_t st = check_parts(comm, parts, kName);
    if (st == HVD_OK) st = check_shm_comm(comm, kName);
    if (st != HVD_OK) return st;
    const int32_t n = comm.size(), me = comm.my_index;
    size_t largest = 0;
    for (const Ranges &p : parts)
        largest = std::max(largest, ranges_bytes(p));
    if (largest == 0 || n == 1) return HVD_OK;
    return comm.guarded(kName, [&] {
        ShmSync sync(comm, kName);
        shm::Group &g = sync.group();
        if (g.single_copy_unbounded(largest)) {
            uint64_t t = 0;
            hvd_status_t s = sync.publish_to_all(buf, buf_bytes, &t);
            for (int32_t m = 0; m < n && s == HVD_OK; ++m)
                for (size_t i = 0; m != me && i < parts[m].size() && s == HVD_OK; ++i)
                    s = sync.fetch(m, t, parts[m][i].at, buf + parts[m][i].at, parts[m][i].len,
                                   buf_bytes);
            // The others read this member's ranges: the buffer stays until they are done.
            return s == HVD_OK ? sync.end_reads(t) : s;
        }
        const size_t piece = g.slot_bytes(), own_bytes = ranges_bytes(parts[me]);
        for (size_t from = 0; from < largest; from += piece) {
            uint64_t t = 0;
            hvd_status_t s = sync.begin(&t);
            if (s != HVD_OK) return s;
            if (from < own_bytes) {
                char *slot = g.slot(me, t);
                for_each_piece(parts[me], from, piece, [&](size_t at, size_t off, size_t len) {
                    stream_copy(slot + off, buf + at, len);
                });
            }
            sync.post(shm::Counter::kReady, t);
            s = sync.all(shm::Counter::kReady, t, "to stage its ranges");
            if (s != HVD_OK) return s;
            for (int32_t m = 0; m < n; ++m) {
                if (m == me) continue;
                const char *slot = g.slot(m, t);
                for_each_piece(parts[m], from, piece, [&](size_t at, size_t off, size_t len) {
                    stream_copy(buf + at, slot + off, len);
                });
            }
            sync.post(shm::Counter::kDone, t);
        }
        return HVD_OK;
    });
}

}  // namespace hvd::collectives
