// SPDX-License-Identifier: Apache-2.0
// plan_fusion: which responses of a batch are chained with fuse_next, against the rules
// written out here: same kind, set, dtype and reduction; runs up to the threshold; tensors
// above 1 MiB alone; and, appended to a queue that already holds responses, only the new ones
// are planned and a run never reaches back into the old ones.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <deque>
#include <vector>

#include "hvd/hvd.h"
#include "negotiation/fusion_planner.h"

using hvd::negotiation::OpType;
using hvd::negotiation::plan_fusion;
using hvd::negotiation::Response;

namespace {

Response allreduce(int64_t floats, int32_t dtype = HVD_DTYPE_FLOAT32) {
    Response r;
    r.type = OpType::kAllreduce;
    r.dtype = dtype;
    r.reduce_op = HVD_OP_SUM;
    r.shape = {floats};
    return r;
}

template <class Seq>
std::vector<bool> flags(const Seq &seq) {
    std::vector<bool> out;
    for (const Response &r : seq)
        out.push_back(r.fuse_next);
    return out;
}

void test_runs_up_to_the_threshold(void **) {
    // 4 KiB each, threshold 10 KiB: runs of two, then of two, then one alone.
    std::vector<Response> batch(5, allreduce(1024));
    plan_fusion(batch, 10 * 1024);
    assert_true(flags(batch) == std::vector<bool>({true, false, true, false, false}));
}

void test_what_breaks_a_run(void **) {
    std::vector<Response> batch = {allreduce(16), allreduce(16, HVD_DTYPE_FLOAT64),
                                   allreduce(16), allreduce(300000),
                                   allreduce(16), allreduce(16)};
    batch[4].reduce_op = HVD_OP_MAX;  // another reduction
    plan_fusion(batch, 64 << 20);
    // dtype differs, dtype differs back, 1.2 MB runs alone, op differs, last has no successor
    assert_true(flags(batch) == std::vector<bool>({false, false, false, false, false, false}));
    batch[4].reduce_op = HVD_OP_SUM;
    plan_fusion(batch, 64 << 20);
    assert_true(flags(batch) == std::vector<bool>({false, false, false, false, true, false}));
}

void test_appended_batch_only(void **) {
    std::deque<Response> queue(3, allreduce(1024));
    queue[0].fuse_next = true;  // an earlier batch's run, not yet run: left as it is
    queue[1].fuse_next = false;
    queue[2].fuse_next = true;  // must be left alone too
    const size_t first = queue.size();
    for (int i = 0; i < 3; ++i)
        queue.push_back(allreduce(1024));
    plan_fusion(queue, first, 1 << 20);
    assert_true(flags(queue) == std::vector<bool>({true, false, true, true, true, false}));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_up_to_the_threshold),
        cmocka_unit_test(test_what_breaks_a_run),
        cmocka_unit_test(test_appended_batch_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
