// SPDX-License-Identifier: Apache-2.0
// Broadcast through the shared-memory group of a single-host job.
// Staged: per chunk of the slot size, the root copies the chunk into its slot and every other
// member copies it out; the root runs up to two chunks ahead (the two halves of its slot).
// Single copy (sizes in the group's single-copy range): the root publishes its buffer's
// address and the others read it straight from its process; with two members each copies
// half (split_copy). Either way the root returns once everyone has
// the data.
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/shm/shm_sync.h"
#include "collectives/stream_copy.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "shm broadcast";

// Two members, single copy: each moves half (measured much faster than staging from 2 MiB, the
// gain shrinking toward 256 MiB). The other member reads the first half from the root's buffer
// while the root writes the second half into the other's buffer, so both CPUs copy at once. Each
// waits for the other before returning: its buffer is being read or written.
hvd_status_t split_copy(ShmSync &sync, char *buf, size_t bytes, bool root) {
    const int32_t other = 1 - sync.me();
    uint64_t t = 0;
    hvd_status_t s = sync.begin(&t);
    if (s != HVD_OK) return s;
    sync.publish(t, buf, bytes);
    sync.post(shm::Counter::kReady, t);
    s = sync.one(other, shm::Counter::kReady, t, "to publish its buffer");
    if (s != HVD_OK) return s;
    const size_t half = bytes / 2 / 64 * 64;
    s = root ? sync.deliver(other, t, half, buf + half, bytes - half, bytes)
             : sync.fetch(other, t, 0, buf, half, bytes);
    if (s != HVD_OK) return s;
    sync.post(shm::Counter::kDone, t);
    return sync.one(other, shm::Counter::kDone, t,
                    root ? "to read its half" : "to write this rank's half");
}

}  // namespace

hvd_status_t broadcast_shm(Comm &comm, void *buf, size_t bytes, int32_t root_index) {
    hvd_status_t st = check_broadcast_args(comm, buf, bytes, root_index, kName);
    if (st == HVD_OK) st = check_shm_comm(comm, kName);
    if (st != HVD_OK || comm.size() == 1 || bytes == 0) return st;
    return comm.guarded(kName, [&] {
        ShmSync sync(comm, kName);
        shm::Group &g = sync.group();
        char *b = static_cast<char *>(buf);
        const bool root = sync.me() == root_index;
        // Only the root writes its slot: the others just take the round's number.
        auto start_round = [&](uint64_t *t) {
            if (root) return sync.begin(t);
            *t = g.next_round();
            return HVD_OK;
        };
        uint64_t last = 0;
        if (comm.size() == 2 && g.single_copy_unbounded(bytes))
            return split_copy(sync, b, bytes, root);
        if (g.single_copy(bytes)) {
            uint64_t t = 0;
            hvd_status_t s = start_round(&t);
            if (s != HVD_OK) return s;
            if (root) {
                sync.publish(t, b, bytes);
                sync.post(shm::Counter::kReady, t);
                sync.post(shm::Counter::kDone, t);
                return sync.all(shm::Counter::kDone, t, "to read the root's buffer");
            }
            s = sync.one(root_index, shm::Counter::kReady, t, "to publish its buffer");
            if (s == HVD_OK) s = sync.fetch(root_index, t, 0, b, bytes, bytes);
            if (s != HVD_OK) return s;
            sync.post(shm::Counter::kDone, t);
            // A root that gave up waiting (its deadline) may have reused its buffer during the
            // read: its failure aborts the job, and the data read then is not reported good.
            int32_t a = comm.abort_status ? comm.abort_status->load(std::memory_order_acquire) : 0;
            return a != 0 ? static_cast<hvd_status_t>(a) : HVD_OK;
        }
        for (size_t done = 0; done < bytes; done += g.slot_bytes()) {
            size_t len = bytes - done < g.slot_bytes() ? bytes - done : g.slot_bytes();
            uint64_t t = 0;
            hvd_status_t s = start_round(&t);
            if (s != HVD_OK) return s;
            if (root) {
                stream_copy(g.slot(root_index, t), b + done, len);
                sync.post(shm::Counter::kReady, t);
            } else {
                s = sync.one(root_index, shm::Counter::kReady, t, "to stage its chunk");
                if (s != HVD_OK) return s;
                stream_copy(b + done, g.slot(root_index, t), len);
            }
            sync.post(shm::Counter::kDone, t);
            last = t;
        }
        // The root waits until every member has its copy: a root that ran ahead would have its
        // next op's negotiation wait for the slower members anyway, and asleep by then.
        return root ? sync.all(shm::Counter::kDone, last, "to copy the last chunk") : HVD_OK;
    });
}

}  // namespace hvd::collectives
