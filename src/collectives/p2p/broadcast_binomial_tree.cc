// SPDX-License-Identifier: Apache-2.0
// Binomial-tree broadcast (patterns/binomial_tree.h): each member receives the whole buffer
// from its parent, then sends it on to its children, largest subtree first. ceil(log2 n)
// rounds, so the choice for small messages.
#include "collectives/collectives.h"
#include "collectives/patterns/binomial_tree.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "binomial tree broadcast";

hvd_status_t run(const Comm &comm, void *buf, size_t bytes, int32_t root) {
    BinomialTree tree(comm.size(), root, comm.my_index);
    transport::Completion *cs = comm.scratch->completions(1 + 31);  // a parent, < 31 children
    if (!tree.is_root()) {
        int32_t parent = tree.parent();
        comm.recv(parent, buf, bytes, &cs[0]);
        hvd_status_t st = comm.wait_recv(&cs[0], bytes, "tree broadcast: receive from", parent);
        if (st != HVD_OK) return st;
    }
    const int32_t children = tree.children();
    for (int32_t k = 0; k < children; ++k)
        comm.send(tree.child(k), buf, bytes, &cs[1 + k]);
    return comm.wait_each(cs + 1, static_cast<size_t>(children), "tree broadcast: send to", -1);
}

}  // namespace

hvd_status_t broadcast_binomial_tree(Comm &comm, void *buf, size_t bytes, int32_t root_index) {
    hvd_status_t st = check_broadcast_args(comm, buf, bytes, root_index, kName);
    if (st != HVD_OK || comm.size() == 1 || bytes == 0) return st;
    return comm.guarded(kName, [&] { return run(comm, buf, bytes, root_index); });
}

}  // namespace hvd::collectives
