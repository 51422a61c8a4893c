// Binomial-tree broadcast: members are numbered relative to the root (v = index - root mod n);
// v receives the whole buffer from v minus its lowest set bit, then sends it on to v + 2^j for
// every 2^j below that bit (the root: below n), largest subtree first. ceil(log2 n) rounds,
// so the choice for small messages.
#include "collectives/collectives.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "binomial tree broadcast";

// Lowest set bit of v; for the root (v = 0) the first power of two >= n, so that every
// other member is in its subtree.
int32_t subtree_span(int32_t v, int32_t n) {
    if (v != 0) return v & -v;
    int32_t span = 1;
    while (span < n)
        span *= 2;
    return span;
}

hvd_status_t run(const Comm &comm, void *buf, size_t bytes, int32_t root) {
    int32_t n = comm.size();
    int32_t v = (comm.my_index - root + n) % n;
    auto member = [&](int32_t rel) { return (rel + root) % n; };
    int32_t span = subtree_span(v, n);
    transport::Completion *cs = comm.scratch->completions(1 + 31);  // a parent, < 31 children
    if (v != 0) {
        int32_t parent = member(v - span);
        comm.recv(parent, buf, bytes, &cs[0]);
        hvd_status_t st = comm.wait_recv(&cs[0], bytes, "tree broadcast: receive from", parent);
        if (st != HVD_OK) return st;
    }
    size_t sent = 0;
    for (int32_t step = span / 2; step >= 1; step /= 2)
        if (v + step < n) comm.send(member(v + step), buf, bytes, &cs[1 + sent++]);
    return comm.wait_each(cs + 1, sent, "tree broadcast: send to", -1);
}

}  // namespace

hvd_status_t broadcast_binomial_tree(Comm &comm, void *buf, size_t bytes, int32_t root_index) {
    hvd_status_t st = check_broadcast_args(comm, buf, bytes, root_index, kName);
    if (st != HVD_OK || comm.size() == 1 || bytes == 0) return st;
    return comm.guarded(kName, [&] { return run(comm, buf, bytes, root_index); });
}

}  // namespace hvd::collectives
