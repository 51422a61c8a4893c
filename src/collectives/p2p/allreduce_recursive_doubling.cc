// SPDX-License-Identifier: Apache-2.0
// Recursive-doubling allreduce: log2(n) rounds of full-buffer exchange with the partner at
// distance 1, 2, 4, ... . Latency-optimal, so the choice for small messages.
//
// A group that is not a power of two is folded first (the standard scheme): of the first
// 2*extra members (extra = n - largest power of two), each even one sends its data to the odd
// one after it, sits out the doubling, and receives the result at the end. Core members are
// numbered so that a lower core number always stands for lower member indices; every combine
// puts the lower side's data on the left, so all members evaluate the same expression tree
// with the same operand order and end bitwise identical, whatever the op's float quirks.
#include "collectives/collectives.h"
#include "collectives/patterns/recursive_doubling.h"
#include "common/dtype.h"
#include "reduce/reduce.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "recursive doubling allreduce";

struct Args {
    void *buf;
    size_t count;
    int32_t dtype;
    int32_t op;
    size_t bytes;
    void *tmp;  // scratch receive buffer, bytes long
};

// buf = lower (op) higher, where `tmp` holds the partner's data.
hvd_status_t combine(const Comm &comm, const Args &a, bool partner_is_lower) {
    const void *left = partner_is_lower ? a.tmp : a.buf;
    const void *right = partner_is_lower ? a.buf : a.tmp;
    hvd_status_t st = reduce::reduce_into(a.buf, left, right, a.count, a.dtype, a.op);
    if (st != HVD_OK) return comm.abort_with(st, std::string(kName) + ": reduction kernel failed");
    return HVD_OK;
}

// Sends buf to `peer` and receives its buffer into tmp, concurrently.
hvd_status_t exchange(const Comm &comm, const Args &a, int32_t peer, transport::Completion *cs) {
    comm.recv(peer, a.tmp, a.bytes, &cs[0]);
    comm.send(peer, a.buf, a.bytes, &cs[1]);
    hvd_status_t st = comm.wait_recv(&cs[0], a.bytes, "recursive doubling: receive from", peer);
    if (st != HVD_OK) return st;
    return comm.wait(&cs[1], "recursive doubling: send to", peer);
}

// An even member of the fold: hands its data over, later gets the result back.
hvd_status_t fold_out(const Comm &comm, const Args &a, transport::Completion *cs) {
    int32_t partner = comm.my_index + 1;
    comm.send(partner, a.buf, a.bytes, &cs[0]);
    hvd_status_t st = comm.wait(&cs[0], "recursive doubling: fold send to", partner);
    if (st != HVD_OK) return st;
    comm.recv(partner, a.buf, a.bytes, &cs[1]);
    return comm.wait_recv(&cs[1], a.bytes, "recursive doubling: result from", partner);
}

hvd_status_t run(const Comm &comm, const Args &a) {
    transport::Completion *cs = comm.scratch->completions(2);
    DoublingFold fold(comm.size());
    int32_t me = comm.my_index;
    if (fold.folds_out(me)) return fold_out(comm, a, cs);
    hvd_status_t st = HVD_OK;
    if (fold.takes_fold(me)) {
        comm.recv(me - 1, a.tmp, a.bytes, &cs[0]);
        st = comm.wait_recv(&cs[0], a.bytes, "recursive doubling: fold receive from", me - 1);
        if (st == HVD_OK) st = combine(comm, a, /*partner_is_lower=*/true);
    }
    int32_t my_core = fold.core_number(me);
    for (int32_t d = 1; d < fold.core && st == HVD_OK; d *= 2) {
        int32_t partner_core = my_core ^ d;
        st = exchange(comm, a, fold.member(partner_core), cs);
        if (st == HVD_OK) st = combine(comm, a, partner_core < my_core);
    }
    if (st != HVD_OK || !fold.takes_fold(me)) return st;
    comm.send(me - 1, a.buf, a.bytes, &cs[0]);
    return comm.wait(&cs[0], "recursive doubling: result to", me - 1);
}

}  // namespace

hvd_status_t allreduce_recursive_doubling(Comm &comm, void *buf, size_t count, int32_t dtype,
                                          int32_t op) {
    hvd_status_t st = check_allreduce_args(comm, buf, count, dtype, op, kName);
    if (st != HVD_OK || comm.size() == 1 || count == 0) return st;
    return comm.guarded(kName, [&] {
        size_t bytes = count * dtype_size(dtype);
        Args a{buf, count, dtype, op, bytes, comm.scratch->get(bytes)};
        return run(comm, a);
    });
}

}  // namespace hvd::collectives
