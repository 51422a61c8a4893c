// SPDX-License-Identifier: Apache-2.0
// Waiting on the shared-memory group within a collective, and the split of a chunk into shares.
#include "collectives/shm/shm_sync.h"

#include <cstring>

#include "collectives/stream_copy.h"
#include "common/log.h"
#include "shm/shared_memory.h"

namespace hvd::collectives {

hvd_status_t ShmSync::begin(uint64_t *round) {
    *round = group_.next_round();
    int32_t laggard = -1;
    hvd_status_t s =
        group_.wait_slot_free(*round, comm_.deadline, comm_.abort_status, &laggard, drive_);
    if (s != HVD_OK) return failed(s, laggard, "to finish reading the previous round");
    group_.stamp(*round, comm_.seq);
    return HVD_OK;
}

hvd_status_t ShmSync::all(shm::Counter c, uint64_t round, const char *what) {
    int32_t laggard = -1;
    hvd_status_t s =
        group_.wait_all(c, round, comm_.deadline, comm_.abort_status, &laggard, drive_);
    if (s != HVD_OK) return failed(s, laggard, what);
    for (int32_t m = 0; m < comm_.size() && c == shm::Counter::kReady && s == HVD_OK; ++m)
        if (m != comm_.my_index) s = check_stamp(m, round);
    return s;
}

hvd_status_t ShmSync::one(int32_t member, shm::Counter c, uint64_t round, const char *what) {
    hvd_status_t s = group_.wait(member, c, round, comm_.deadline, comm_.abort_status, drive_);
    if (s != HVD_OK) return failed(s, member, what);
    return c == shm::Counter::kReady ? check_stamp(member, round) : HVD_OK;
}

hvd_status_t ShmSync::check_stamp(int32_t member, uint64_t round) const {
    if (group_.stamped(member, round, comm_.seq)) return HVD_OK;
    return comm_.abort_with(
        HVD_ERR_INTERNAL,
        strprintf("%s: rank %d wrote round %llu for another collective "
                  "(the ranks are out of step)",
                  algorithm_, comm_.members[member], static_cast<unsigned long long>(round)));
}

hvd_status_t ShmSync::fatal(hvd_status_t cause, const char *what) const {
    return comm_.abort_with(HVD_ERR_INTERNAL,
                            strprintf("%s: %s failed (%s) while the others wait on this rank",
                                      algorithm_, what, status_name(cause)));
}

namespace {
struct BlockAddress {
    uint64_t addr;
    uint64_t len;
    shm::SharedRef region;  // where the block lies when it is hvd_mem_alloc memory (id 0: not)
};
}  // namespace

void ShmSync::publish(uint64_t round, const void *addr, size_t len) {
    BlockAddress a{reinterpret_cast<uint64_t>(addr), len, {}};
    if (!group_.may_map() || !shm::shared_find(addr, len, &a.region)) a.region.id = 0;
    std::memcpy(group_.slot(comm_.my_index, round), &a, sizeof a);
}

hvd_status_t ShmSync::publish_to_all(const void *addr, size_t len, uint64_t *round) {
    hvd_status_t s = begin(round);
    if (s != HVD_OK) return s;
    publish(*round, addr, len);
    post(shm::Counter::kReady, *round);
    return all(shm::Counter::kReady, *round, "to publish its data");
}

hvd_status_t ShmSync::end_reads(uint64_t round) {
    post(shm::Counter::kDone, round);
    return all(shm::Counter::kDone, round, "to read this rank's data");
}

hvd_status_t ShmSync::copy(int32_t member, uint64_t round, size_t offset, void *local, size_t len,
                           size_t total, bool to_remote) {
    BlockAddress a;
    std::memcpy(&a, group_.slot(member, round), sizeof a);
    if (a.len != total || offset + len > total)
        return comm_.abort_with(HVD_ERR_INTERNAL,
                                strprintf("%s: rank %d published %llu bytes, expected %zu "
                                          "(members disagree on sizes)",
                                          algorithm_, comm_.members[member],
                                          static_cast<unsigned long long>(a.len), total));
    std::string error;
    // hvd_mem_alloc memory: read (or written) in place through this process's mapping of it.
    // A region that cannot be mapped goes by cross-memory attach like any other memory.
    char *base = a.region.id != 0 && group_.may_map() ? group_.map_region(member, a.region, &error)
                                                      : nullptr;
    if (base != nullptr) {
        char *remote = base + a.region.offset + offset;
        if (to_remote)
            stream_copy(remote, local, len);
        else
            stream_copy(local, remote, len);
        return HVD_OK;
    }
    hvd_status_t s = group_.copy_remote(member, a.addr + offset, local, len, to_remote, &error);
    if (s == HVD_OK) return s;
    return comm_.abort_with(
        s, strprintf("%s: rank %d: %s", algorithm_, comm_.members[member], error.c_str()));
}

hvd_status_t ShmSync::failed(hvd_status_t s, int32_t laggard, const char *what) const {
    int32_t rank = laggard >= 0 && laggard < comm_.size() ? comm_.members[laggard] : -1;
    return comm_.abort_with(
        s, strprintf("%s: rank %d did not come %s (shared memory)", algorithm_, rank, what));
}

Share share_of(size_t total, size_t element_bytes, int32_t n, int32_t index) {
    size_t line = element_bytes >= 64 ? 1 : 64 / element_bytes;  // elements per cache line
    size_t lines = (total + line - 1) / line;
    size_t per = (lines + static_cast<size_t>(n) - 1) / static_cast<size_t>(n) * line;
    size_t first = per * static_cast<size_t>(index);
    if (first >= total) return {total, 0};
    size_t count = total - first < per ? total - first : per;
    return {first, count};
}

hvd_status_t check_shm_comm(const Comm &comm, const char *algorithm) {
    const shm::Group *g = comm.shm;
    if (g != nullptr && g->size() == comm.size() && g->my_index() == comm.my_index) return HVD_OK;
    HVD_LOG(kError, comm.global_rank(), "%s: %s", algorithm,
            g == nullptr ? "no shared memory group" : "the group does not match the members");
    return HVD_ERR_INVALID_ARG;
}

}  // namespace hvd::collectives
