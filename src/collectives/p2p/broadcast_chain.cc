// SPDX-License-Identifier: Apache-2.0
// Pipelined chain broadcast: root -> root+1 -> ... -> root-1, the buffer cut into chunks that
// each member forwards as soon as it has received them. Each byte crosses each link once and
// the root sends the buffer only once, so for large messages it approaches the bandwidth of
// one link; the price is n-2 chunk latencies to fill the pipe. Chosen over scatter+allgather,
// which moves 2(n-1)/n of the buffer per link, i.e. up to twice the bytes.
#include <algorithm>

#include "collectives/collectives.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "chain broadcast";

struct Chunks {
    char *buf;
    size_t bytes;
    size_t chunk;
    size_t count() const { return (bytes + chunk - 1) / chunk; }
    char *at(size_t i) const { return buf + i * chunk; }
    size_t size(size_t i) const { return std::min(chunk, bytes - i * chunk); }
};

hvd_status_t run_root(const Comm &comm, const Chunks &ch, int32_t next) {
    transport::Completion *sends = comm.scratch->completions(ch.count());
    for (size_t i = 0; i < ch.count(); ++i)
        comm.send(next, ch.at(i), ch.size(i), &sends[i]);
    return comm.wait_each(sends, ch.count(), "chain broadcast: send to", next);
}

// next < 0: the end of the chain, which only receives.
hvd_status_t run_member(const Comm &comm, const Chunks &ch, int32_t prev, int32_t next) {
    size_t k = ch.count();
    transport::Completion *recvs = comm.scratch->completions(2 * k);
    transport::Completion *sends = recvs + k;
    // Chunks land in disjoint parts of buf: post every receive at once.
    for (size_t i = 0; i < k; ++i)
        comm.recv(prev, ch.at(i), ch.size(i), &recvs[i]);
    size_t sent = 0;
    for (size_t i = 0; i < k; ++i) {
        hvd_status_t st =
            comm.wait_recv(&recvs[i], ch.size(i), "chain broadcast: receive from", prev);
        if (st != HVD_OK) return st;
        if (next >= 0) comm.send(next, ch.at(i), ch.size(i), &sends[sent++]);
    }
    return comm.wait_each(sends, sent, "chain broadcast: send to", next);
}

}  // namespace

hvd_status_t broadcast_chain(Comm &comm, void *buf, size_t bytes, int32_t root_index,
                             size_t chunk_bytes) {
    hvd_status_t st = check_broadcast_args(comm, buf, bytes, root_index, kName);
    if (st != HVD_OK || comm.size() == 1 || bytes == 0) return st;
    int32_t n = comm.size();
    int32_t v = (comm.my_index - root_index + n) % n;
    int32_t prev = comm.ring_index(-1);
    int32_t next = v == n - 1 ? -1 : comm.ring_index(1);
    Chunks ch{static_cast<char *>(buf), bytes, std::max<size_t>(1, chunk_bytes)};
    return comm.guarded(kName, [&] {
        return v == 0 ? run_root(comm, ch, next) : run_member(comm, ch, prev, next);
    });
}

hvd_status_t broadcast_chain(Comm &comm, void *buf, size_t bytes, int32_t root_index) {
    return broadcast_chain(comm, buf, bytes, root_index, broadcast_chunk_bytes());
}

}  // namespace hvd::collectives
