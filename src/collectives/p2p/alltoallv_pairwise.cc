// SPDX-License-Identifier: Apache-2.0
// Pairwise alltoallv: at step k (1..n-1) a member sends its block for member (me + k) and
// receives the block from member (me - k), so at every step each member sends to one peer and
// receives from one peer: no member is the target of everyone at once, as it would be if all
// sent in member order. The own block is a memcpy.
//
// Every block lands straight in its place in out, so all receives of a window can be posted
// before the sends and nothing is staged. At most kStepsInFlight steps are outstanding, which
// bounds the messages (and the rendezvous state) a large group has in flight; a window slides
// only after its first step completed, and a step's matching send/receive lie in the same step
// on both sides, so the waits depend only on earlier steps and cannot form a cycle.
// Zero-byte blocks cost no message: sender and receiver both know the size and both skip it.
#include <algorithm>
#include <cstring>

#include "collectives/collectives.h"
#include "common/log.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "pairwise alltoallv";
constexpr int32_t kStepsInFlight = 16;

hvd_status_t check_args(const Comm &comm, const void *in, const std::vector<size_t> &send_bytes,
                        const void *out, const std::vector<size_t> &recv_bytes) {
    hvd_status_t st = comm.validate(kName);
    if (st != HVD_OK) return st;
    size_t n = static_cast<size_t>(comm.size()), me = static_cast<size_t>(comm.my_index);
    size_t total_send = 0, total_recv = 0;
    for (size_t b : send_bytes)
        total_send += b;
    for (size_t b : recv_bytes)
        total_recv += b;
    const char *problem = nullptr;
    if (send_bytes.size() != n || recv_bytes.size() != n) {
        problem = "one send and one receive size per member expected";
    } else if (send_bytes[me] != recv_bytes[me]) {
        problem = "the block this member sends itself differs from the one it receives";
    } else if (in == nullptr && total_send > 0) {
        problem = "null input";
    } else if (out == nullptr && total_recv > 0) {
        problem = "null output";
    }
    if (problem == nullptr) return HVD_OK;
    HVD_LOG(kError, comm.global_rank(), "%s: %s (%zu send sizes, %zu receive sizes, group of %d)",
            kName, problem, send_bytes.size(), recv_bytes.size(), comm.size());
    return HVD_ERR_INVALID_ARG;
}

// Byte offsets of consecutive blocks, written into offsets[0..n).
void block_offsets(const std::vector<size_t> &bytes, size_t *offsets) {
    size_t total = 0;
    for (size_t r = 0; r < bytes.size(); ++r) {
        offsets[r] = total;
        total += bytes[r];
    }
}

struct Exchange {
    const Comm &comm;
    const char *in;
    char *out;
    const std::vector<size_t> &send_bytes;
    const std::vector<size_t> &recv_bytes;
    const size_t *send_offsets;
    const size_t *recv_offsets;
    transport::Completion *recvs;  // index = step
    transport::Completion *sends;  // index = step

    int32_t to(int32_t step) const { return comm.ring_index(step); }
    int32_t from(int32_t step) const { return comm.ring_index(-step); }

    void post_recv(int32_t step) const {
        int32_t src = from(step);
        if (recv_bytes[src] > 0)
            comm.recv(src, out + recv_offsets[src], recv_bytes[src], &recvs[step]);
    }
    void post_send(int32_t step) const {
        int32_t dst = to(step);
        if (send_bytes[dst] > 0)
            comm.send(dst, in + send_offsets[dst], send_bytes[dst], &sends[step]);
    }

    hvd_status_t finish(int32_t step) const {
        int32_t src = from(step), dst = to(step);
        if (recv_bytes[src] > 0) {
            hvd_status_t st = comm.wait_recv(&recvs[step], recv_bytes[src],
                                             "pairwise alltoallv: receive from", src);
            if (st != HVD_OK) return st;
        }
        if (send_bytes[dst] == 0) return HVD_OK;
        return comm.wait(&sends[step], "pairwise alltoallv: send to", dst);
    }
};

hvd_status_t run(const Exchange &x, int32_t n) {
    int32_t me = x.comm.my_index;
    int32_t posted = std::min(n, 1 + kStepsInFlight);
    // Receives first, so that early messages find their buffer instead of being staged.
    for (int32_t step = 1; step < posted; ++step)
        x.post_recv(step);
    for (int32_t step = 1; step < posted; ++step)
        x.post_send(step);
    if (x.send_bytes[me] > 0)
        std::memcpy(x.out + x.recv_offsets[me], x.in + x.send_offsets[me], x.send_bytes[me]);
    for (int32_t step = 1; step < n; ++step) {
        hvd_status_t st = x.finish(step);
        if (st != HVD_OK) return st;
        if (posted < n) {
            x.post_recv(posted);
            x.post_send(posted++);
        }
    }
    return HVD_OK;
}

}  // namespace

hvd_status_t alltoallv_pairwise(Comm &comm, const void *in, const std::vector<size_t> &send_bytes,
                                void *out, const std::vector<size_t> &recv_bytes) {
    hvd_status_t st = check_args(comm, in, send_bytes, out, recv_bytes);
    if (st != HVD_OK) return st;
    return comm.guarded(kName, [&] {
        size_t n = static_cast<size_t>(comm.size());
        // Offsets live in scratch (the exchange itself needs none): no allocation.
        auto *offsets = static_cast<size_t *>(comm.scratch->get(2 * n * sizeof(size_t)));
        block_offsets(send_bytes, offsets);
        block_offsets(recv_bytes, offsets + n);
        transport::Completion *cs = comm.scratch->completions(2 * n);
        Exchange x{comm,
                   static_cast<const char *>(in),
                   static_cast<char *>(out),
                   send_bytes,
                   recv_bytes,
                   offsets,
                   offsets + n,
                   cs,
                   cs + n};
        return run(x, comm.size());
    });
}

}  // namespace hvd::collectives
