// Waiting on the shared-memory group within a collective, and the split of a chunk into shares.
#include "collectives/shm_sync.h"

#include <cstring>

#include "common/env.h"
#include "common/log.h"

namespace hvd::collectives {

hvd_status_t ShmSync::begin(uint64_t *round) {
    *round = group_.next_round();
    int32_t laggard = -1;
    hvd_status_t s = group_.wait_slot_free(*round, comm_.deadline, comm_.abort_status, &laggard);
    return s == HVD_OK ? s : failed(s, laggard, "to finish reading the previous round");
}

hvd_status_t ShmSync::all(shm::Counter c, uint64_t round, const char *what) {
    int32_t laggard = -1;
    hvd_status_t s = group_.wait_all(c, round, comm_.deadline, comm_.abort_status, &laggard);
    return s == HVD_OK ? s : failed(s, laggard, what);
}

hvd_status_t ShmSync::one(int32_t member, shm::Counter c, uint64_t round, const char *what) {
    hvd_status_t s = group_.wait(member, c, round, comm_.deadline, comm_.abort_status);
    return s == HVD_OK ? s : failed(s, member, what);
}

namespace {
struct BlockAddress {
    uint64_t addr;
    uint64_t len;
};
}  // namespace

void ShmSync::publish(uint64_t round, const void *addr, size_t len) {
    BlockAddress a{reinterpret_cast<uint64_t>(addr), len};
    std::memcpy(group_.slot(comm_.my_index, round), &a, sizeof a);
}

hvd_status_t ShmSync::fetch(int32_t member, uint64_t round, void *dst, size_t len) {
    BlockAddress a;
    std::memcpy(&a, group_.slot(member, round), sizeof a);
    if (a.len != len)
        return comm_.abort_with(HVD_ERR_INTERNAL,
                                strprintf("%s: rank %d published %llu bytes, expected %zu "
                                          "(members disagree on sizes)",
                                          algorithm_, comm_.members[member],
                                          static_cast<unsigned long long>(a.len), len));
    std::string error;
    hvd_status_t s = group_.read_remote(member, a.addr, dst, len, &error);
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

size_t shm_one_shot_max_bytes() {
    static const size_t v = [] {
        int64_t b =
            env_setting_int("SHM_ONE_SHOT_MAX_BYTES", static_cast<int64_t>(kShmOneShotMaxBytes));
        return b < 0 ? kShmOneShotMaxBytes : static_cast<size_t>(b);
    }();
    return v;
}

hvd_status_t check_shm_comm(const Comm &comm, const char *algorithm) {
    hvd_status_t st = comm.validate(algorithm);
    if (st != HVD_OK) return st;
    const shm::Group *g = comm.shm;
    if (g != nullptr && g->size() == comm.size() && g->my_index() == comm.my_index) return HVD_OK;
    HVD_LOG(kError, comm.global_rank(), "%s: %s", algorithm,
            g == nullptr ? "no shared memory group" : "the group does not match the members");
    return HVD_ERR_INVALID_ARG;
}

}  // namespace hvd::collectives
