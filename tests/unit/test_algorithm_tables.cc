// SPDX-License-Identifier: Apache-2.0
// The collectives' algorithm tables (collectives/algorithms.h): which entry each kind of call
// gets (shared memory on one host, recursive doubling or the ring by size, the broadcast tree
// or chain by size and group), that every host call finds an algorithm, that device memory
// finds none until a GPU back-end adds its entries, and that the dispatching entry points
// then fail with HVD_ERR_UNSUPPORTED before sending anything.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/collectives.h"
#include "transport/loopback/loopback_transport.h"

using hvd::collectives::Algorithm;
using hvd::collectives::choose;
using hvd::collectives::Comm;
using hvd::collectives::Memory;

namespace {

// A group of n members as member 0 sees it; no message is sent by these tests.
Comm group_of(int32_t n) {
    Comm c;
    for (int32_t r = 0; r < n; ++r)
        c.members.push_back(r);
    c.my_index = 0;
    return c;
}

// supports() only checks whether a shared-memory group is attached; no algorithm runs here.
alignas(64) char attached_group[64];
void attach_shared_memory(Comm *c) {
    c->shm = reinterpret_cast<hvd::shm::Group *>(attached_group);
}

template <typename Run>
std::string chosen(const std::vector<Algorithm<Run>> &table, const Comm &c, size_t bytes,
                   Memory memory = Memory::kHost) {
    const Algorithm<Run> *a = choose(table, c, bytes, memory);
    return a != nullptr ? a->name : "none";
}

void test_allreduce_by_size_and_host(void **) {
    const auto &t = hvd::collectives::allreduce_algorithms();
    const size_t rd_max = hvd::collectives::recursive_doubling_max_bytes();
    for (int32_t n = 2; n <= 4; ++n) {
        Comm c = group_of(n);
        assert_string_equal(chosen(t, c, 8).c_str(), "recursive doubling allreduce");
        assert_string_equal(chosen(t, c, rd_max).c_str(), "recursive doubling allreduce");
        assert_string_equal(chosen(t, c, rd_max + 1).c_str(), "ring allreduce");
        assert_string_equal(chosen(t, c, size_t{1} << 30).c_str(), "ring allreduce");
        attach_shared_memory(&c);
        assert_string_equal(chosen(t, c, 8).c_str(), "shm allreduce");
        assert_string_equal(chosen(t, c, size_t{1} << 30).c_str(), "shm allreduce");
    }
}

void test_broadcast_tree_or_chain(void **) {
    const auto &t = hvd::collectives::broadcast_algorithms();
    const size_t tree_max = hvd::collectives::broadcast_tree_max_bytes();
    Comm two = group_of(2), three = group_of(3), four = group_of(4);
    assert_string_equal(chosen(t, three, tree_max).c_str(), "binomial tree broadcast");
    assert_string_equal(chosen(t, three, tree_max + 1).c_str(), "chain broadcast");
    assert_string_equal(chosen(t, four, size_t{64} << 20).c_str(), "chain broadcast");
    // Two members: one link either way, and one whole message beats chunks.
    assert_string_equal(chosen(t, two, size_t{64} << 20).c_str(), "binomial tree broadcast");
    attach_shared_memory(&four);
    assert_string_equal(chosen(t, four, size_t{64} << 20).c_str(), "shm broadcast");
}

void test_other_collectives(void **) {
    Comm c = group_of(3);
    assert_string_equal(chosen(hvd::collectives::allgatherv_algorithms(), c, 1000).c_str(),
                        "ring allgatherv");
    assert_string_equal(chosen(hvd::collectives::alltoallv_algorithms(), c, 1000).c_str(),
                        "pairwise alltoallv");
    assert_string_equal(chosen(hvd::collectives::reducescatter_algorithms(), c, 1000).c_str(),
                        "ring reducescatter");
    attach_shared_memory(&c);
    assert_string_equal(chosen(hvd::collectives::allgatherv_algorithms(), c, 1000).c_str(),
                        "shm allgatherv");
    assert_string_equal(chosen(hvd::collectives::reducescatter_algorithms(), c, 1000).c_str(),
                        "shm reducescatter");
    // Two members: the transport's single copy does as well as the slots.
    Comm two = group_of(2);
    attach_shared_memory(&two);
    assert_string_equal(chosen(hvd::collectives::reducescatter_algorithms(), two, 1000).c_str(),
                        "ring reducescatter");
}

// Every table ends with an entry for any host call, has unique names, and has nothing for
// device memory yet.
template <typename Run>
void check_table(const std::vector<Algorithm<Run>> &t) {
    assert_true(!t.empty());
    std::set<std::string> names;
    for (const Algorithm<Run> &a : t)
        assert_true(names.insert(a.name).second);
    for (int32_t n = 1; n <= 4; ++n) {
        Comm c = group_of(n);
        for (size_t bytes :
             {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20, size_t{1} << 34}) {
            assert_true(choose(t, c, bytes, Memory::kHost) != nullptr);
            assert_null(choose(t, c, bytes, Memory::kDevice));
        }
    }
}

void test_every_table_is_complete_for_host_memory(void **) {
    check_table(hvd::collectives::allreduce_algorithms());
    check_table(hvd::collectives::broadcast_algorithms());
    check_table(hvd::collectives::allgatherv_algorithms());
    check_table(hvd::collectives::alltoallv_algorithms());
    check_table(hvd::collectives::reducescatter_algorithms());
}

// Device memory on a real two-member group: every entry point refuses at once, with nothing
// sent (the peer never takes part) and the buffers untouched.
void test_device_memory_is_unsupported(void **) {
    hvd::transport::LoopbackHub hub(2);
    std::unique_ptr<hvd::transport::Transport> t0 = hub.make(0);
    std::unique_ptr<hvd::transport::Transport> t1 = hub.make(1);
    std::atomic<int32_t> abort_status{0};
    hvd::collectives::ScratchBuffer scratch;
    Comm c = group_of(2);
    c.transport = t0.get();
    c.deadline = hvd::Deadline::after_ms(5000);
    c.abort_status = &abort_status;
    c.scratch = &scratch;
    c.memory = Memory::kDevice;
    float buf[4] = {1, 2, 3, 4};
    float out[8] = {};
    std::vector<size_t> bytes{sizeof buf, sizeof buf};
    std::vector<size_t> counts{2, 2};
    assert_int_equal(hvd::collectives::allreduce(c, buf, 4, HVD_DTYPE_FLOAT32, HVD_OP_SUM),
                     HVD_ERR_UNSUPPORTED);
    assert_int_equal(hvd::collectives::broadcast(c, buf, sizeof buf, 1), HVD_ERR_UNSUPPORTED);
    assert_int_equal(hvd::collectives::allgatherv(c, buf, out, bytes), HVD_ERR_UNSUPPORTED);
    assert_int_equal(hvd::collectives::alltoallv(c, buf, std::vector<size_t>{8, 8}, out,
                                                 std::vector<size_t>{8, 8}),
                     HVD_ERR_UNSUPPORTED);
    assert_int_equal(
        hvd::collectives::reducescatter(c, buf, out, counts, HVD_DTYPE_FLOAT32, HVD_OP_SUM),
        HVD_ERR_UNSUPPORTED);
    assert_true(buf[0] == 1 && buf[3] == 4);
    hvd::transport::Completion probe;
    std::string payload;
    t1->progress();
    assert_false(t1->try_recv_any(0, 0, &payload, &probe));  // nothing reached the peer
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_by_size_and_host),
        cmocka_unit_test(test_broadcast_tree_or_chain),
        cmocka_unit_test(test_other_collectives),
        cmocka_unit_test(test_every_table_is_complete_for_host_memory),
        cmocka_unit_test(test_device_memory_is_unsupported),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
