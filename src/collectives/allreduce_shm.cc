// Allreduce through the shared-memory group of a single-host job.
//
// One shot (small buffers): every member copies its buffer into its slot; once all have, each
// reduces all slots in member order into its own buffer. One round, one wait.
//
// Chunked (the rest): a chunk of the slot size is split into one share per member. Every member
// copies the other members' shares of its chunk into its slot; member m reduces share m (its
// own part from its buffer, the others' from their slots, in member order) into share m of its
// own slot, which nobody else reads that round, and copies the result to its buffer; then every
// member copies the other shares' results from their owners' slots. Each byte of the buffer is
// read from and written to main memory about once; the slots stay in cache.
//
// Both orders are the same on every member, so every member ends with identical bits.
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/shm_sync.h"
#include "common/dtype.h"
#include "reduce/reduce.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "shm allreduce";

// dst = part(0) op part(1) op ... over `count` elements at byte offset `at`, where part(m) is
// member m's slot, or `own` for this member (its data may stay in its own buffer). dst must
// not overlap any part.
hvd_status_t reduce_parts(const shm::Group &g, uint64_t round, size_t at, const char *own,
                          void *dst, size_t count, int32_t dtype, int32_t op) {
    auto part = [&](int32_t m) -> const char * {
        return m == g.my_index() ? own : g.slot(m, round) + at;
    };
    hvd_status_t s = reduce::reduce_into(dst, part(0), part(1), count, dtype, op);
    for (int32_t m = 2; m < g.size() && s == HVD_OK; ++m)
        s = reduce::reduce_inplace(dst, part(m), count, dtype, op);
    return s;
}

hvd_status_t one_shot(ShmSync &sync, char *buf, size_t count, int32_t dtype, int32_t op) {
    shm::Group &g = sync.group();
    uint64_t t = 0;
    hvd_status_t s = sync.begin(&t);
    if (s != HVD_OK) return s;
    std::memcpy(g.slot(sync.me(), t), buf, count * dtype_size(dtype));
    sync.post(shm::Counter::kReady, t);
    s = sync.all(shm::Counter::kReady, t, "to stage its data");
    if (s != HVD_OK) return s;
    s = reduce_parts(g, t, 0, g.slot(sync.me(), t), buf, count, dtype, op);
    sync.post(shm::Counter::kDone, t);
    return s;
}

hvd_status_t chunked(ShmSync &sync, char *buf, size_t count, int32_t dtype, int32_t op) {
    shm::Group &g = sync.group();
    const size_t esz = dtype_size(dtype);
    const size_t chunk = g.slot_bytes() / esz;
    const int32_t n = g.size();
    for (size_t done = 0; done < count; done += chunk) {
        const size_t elems = count - done < chunk ? count - done : chunk;
        char *base = buf + done * esz;
        uint64_t t = 0;
        hvd_status_t s = sync.begin(&t);
        if (s != HVD_OK) return s;
        char *mine = g.slot(sync.me(), t);
        for (int32_t m = 0; m < n; ++m) {  // the others' shares; this member's stays put
            Share sh = share_of(elems, esz, n, m);
            if (m != sync.me() && sh.count > 0)
                std::memcpy(mine + sh.first * esz, base + sh.first * esz, sh.count * esz);
        }
        sync.post(shm::Counter::kReady, t);
        s = sync.all(shm::Counter::kReady, t, "to stage its chunk");
        if (s != HVD_OK) return s;
        Share own = share_of(elems, esz, n, sync.me());
        if (own.count > 0) {
            size_t at = own.first * esz;
            s = reduce_parts(g, t, at, base + at, mine + at, own.count, dtype, op);
            if (s != HVD_OK) return s;
            std::memcpy(base + at, mine + at, own.count * esz);
        }
        sync.post(shm::Counter::kReduced, t);
        s = sync.all(shm::Counter::kReduced, t, "to reduce its share");
        if (s != HVD_OK) return s;
        for (int32_t m = 0; m < n; ++m) {
            Share sh = share_of(elems, esz, n, m);
            if (m == sync.me() || sh.count == 0) continue;
            size_t at = sh.first * esz;
            std::memcpy(base + at, g.slot(m, t) + at, sh.count * esz);
        }
        sync.post(shm::Counter::kDone, t);
    }
    return HVD_OK;
}

}  // namespace

hvd_status_t allreduce_shm(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op) {
    hvd_status_t st = check_allreduce_args(comm, buf, count, dtype, op, kName);
    if (st == HVD_OK) st = check_shm_comm(comm, kName);
    if (st != HVD_OK || comm.size() == 1 || count == 0) return st;
    return comm.guarded(kName, [&] {
        ShmSync sync(comm, kName);
        char *b = static_cast<char *>(buf);
        size_t bytes = count * dtype_size(dtype);
        if (bytes <= shm_one_shot_max_bytes() && bytes <= comm.shm->slot_bytes())
            return one_shot(sync, b, count, dtype, op);
        return chunked(sync, b, count, dtype, op);
    });
}

}  // namespace hvd::collectives
