// SPDX-License-Identifier: Apache-2.0
// Sizes past 64 bits: every enqueue rejects a shape whose size in bytes overflows (each
// collective and grouped variant, input and output), a negative dimension and NULL data with a
// non-zero size, with HVD_ERR_INVALID_ARG and a message naming the problem; alltoall rejects an
// even split past int32; and sizes put together across ranks (an allgather's rows, the rows an
// alltoall member receives) fail on every rank with an error naming the op. Never HVD_OK,
// never a crash: no data is touched by an op that fails.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cstring>
#include <string>
#include <vector>

#include "assert_contains.h"
#include "hvd/hvd.h"
#include "inprocess_job.h"
#include "util/shape.h"

namespace {

using inprocess_job::join_job;
using inprocess_job::tensor;

constexpr int64_t k2p32 = int64_t{1} << 32;
constexpr int64_t k2p60 = int64_t{1} << 60;
constexpr int64_t k2p62 = int64_t{1} << 62;

std::string last_error() {
    char msg[1024];
    hvd_last_error(msg, sizeof msg);
    return msg;
}

// A real buffer for tensors whose (huge) shape is rejected before any byte is read.
char g_bytes[64];

struct OneRank {
    OneRank() {
        hvd_unique_id_t id;
        assert_int_equal(hvd_get_unique_id(&id), HVD_OK);
        assert_int_equal(join_job(id, 0, 1, &ctx), HVD_OK);
    }
    ~OneRank() { hvd_finalize(ctx); }
    hvd_context_h ctx = nullptr;
};

// status must be HVD_ERR_INVALID_ARG, with every needle in the message.
void assert_invalid(hvd_status_t status, std::initializer_list<const char *> needles) {
    std::string msg = last_error();
    if (status != HVD_ERR_INVALID_ARG)
        fail_msg("status %d (%s), expected HVD_ERR_INVALID_ARG; last error '%s'", status,
                 hvd_status_name(status), msg.c_str());
    for (const char *n : needles)
        assert_contains(msg, n);
}

// Each needle with "input" made "output": the same tensor passed as an output.
std::vector<std::string> as_output(std::initializer_list<const char *> needles) {
    std::vector<std::string> out;
    for (const char *n : needles) {
        std::string s = n;
        size_t at = s.find("input");
        if (at != std::string::npos) s.replace(at, 5, "output");
        out.push_back(s);
    }
    return out;
}

// Every single-tensor enqueue of `in` (out = in where the op has an output).
void assert_every_op_rejects(hvd_context_h ctx, const hvd_tensor_t &in,
                             std::initializer_list<const char *> needles) {
    hvd_request_h req = nullptr;
    assert_invalid(hvd_allreduce_enqueue(ctx, &in, &in, nullptr, &req), needles);
    assert_invalid(hvd_allgather_enqueue(ctx, &in, nullptr, &req), needles);
    assert_invalid(hvd_broadcast_enqueue(ctx, &in, &in, nullptr, &req), needles);
    assert_invalid(hvd_alltoall_enqueue(ctx, &in, nullptr, &req), needles);
    assert_invalid(hvd_reducescatter_enqueue(ctx, &in, nullptr, &req), needles);
    // As the input, then as the output, of an allgather into.
    std::vector<int64_t> no_rows(in.shape, in.shape + in.ndim);
    no_rows[0] = 0;
    for (size_t i = 1; i < no_rows.size(); ++i)
        if (no_rows[i] < 0) no_rows[i] = 0;
    hvd_tensor_t empty = tensor(g_bytes, in.dtype, in.ndim, no_rows.data());
    assert_invalid(hvd_allgather_into_enqueue(ctx, &in, &empty, nullptr, &req), needles);
    hvd_status_t s = hvd_allgather_into_enqueue(ctx, &empty, &in, nullptr, &req);
    assert_int_equal(s, HVD_ERR_INVALID_ARG);
    std::string msg = last_error();
    for (const std::string &n : as_output(needles))
        assert_contains(msg, n);
    // As member 1 of each grouped op, after a valid member 0.
    int64_t one[1] = {0};
    hvd_tensor_t ok = tensor(g_bytes, in.dtype, 1, one);
    const hvd_tensor_t *ins[2] = {&ok, &in};
    assert_invalid(hvd_grouped_allreduce_enqueue(ctx, ins, ins, 2, nullptr, &req), needles);
    assert_invalid(hvd_grouped_allgather_enqueue(ctx, ins, 2, nullptr, &req), needles);
    assert_invalid(hvd_grouped_reducescatter_enqueue(ctx, ins, 2, nullptr, &req), needles);
    assert_null(req);  // never written
}

void test_shape_overflow_rejected_at_enqueue(void **) {
    OneRank r;
    // The audit's cases: [2^32, 2^32] (2^64 elements), [2^62, 4] (2^64 elements), NULL data.
    int64_t square[2] = {k2p32, k2p32};
    hvd_tensor_t t = tensor(nullptr, HVD_DTYPE_UINT8, 2, square);
    assert_every_op_rejects(r.ctx, t,
                            {"input shape [4294967296,4294967296] is too large",
                             "overflows a 64-bit integer at dimension 1 (4294967296)"});
    t.data = g_bytes;  // not about NULL data
    assert_every_op_rejects(r.ctx, t, {"overflows a 64-bit integer at dimension 1"});
    int64_t tall[2] = {k2p62, 4};
    t = tensor(nullptr, HVD_DTYPE_INT8, 2, tall);
    assert_every_op_rejects(r.ctx, t,
                            {"[4611686018427387904,4] is too large", "at dimension 1 (4)"});
    // The element count fits, the bytes do not: 2^62 float32 elements.
    int64_t wide[2] = {1, k2p62};
    t = tensor(g_bytes, HVD_DTYPE_FLOAT32, 2, wide);
    assert_every_op_rejects(r.ctx, t, {"elements of 4 bytes", "dimension 1 (4611686018427387904)"});
    // A zero dimension does not hide an overflow of the others.
    int64_t empty_huge[3] = {0, k2p32, k2p32};
    t = tensor(nullptr, HVD_DTYPE_UINT8, 3, empty_huge);
    assert_every_op_rejects(r.ctx, t, {"overflows", "dimension 2"});
}

void test_negative_dims_and_null_data_rejected(void **) {
    OneRank r;
    int64_t negative[2] = {4, -1};
    hvd_tensor_t t = tensor(g_bytes, HVD_DTYPE_FLOAT32, 2, negative);
    assert_every_op_rejects(r.ctx, t, {"input dimension 1 is negative (-1)"});
    int64_t big[2] = {k2p60, 2};  // 2^61 bytes: fits, but NULL
    t = tensor(nullptr, HVD_DTYPE_UINT8, 2, big);
    assert_every_op_rejects(r.ctx, t, {"input data is NULL", "2305843009213693952 bytes"});
    // Data whose end would wrap around the address space.
    int64_t wraps[2] = {k2p60, 4};
    t = tensor(reinterpret_cast<void *>(~uintptr_t{0} - 15), HVD_DTYPE_UINT8, 2, wraps);
    assert_every_op_rejects(r.ctx, t, {"wraps around the address space"});
}

// Empty tensors stay valid with NULL data.
void test_empty_tensor_with_null_data_runs(void **) {
    OneRank r;
    int64_t shape[2] = {0, 4};
    hvd_tensor_t t = tensor(nullptr, HVD_DTYPE_FLOAT32, 2, shape);
    hvd_request_h req;
    assert_int_equal(hvd_allreduce_enqueue(r.ctx, &t, &t, nullptr, &req), HVD_OK);
    assert_int_equal(hvd_request_wait(req, 30000), HVD_OK);
    hvd_request_release(req);
    assert_int_equal(hvd_allgather_enqueue(r.ctx, &t, nullptr, &req), HVD_OK);
    assert_int_equal(hvd_request_wait(req, 30000), HVD_OK);
    hvd_tensor_t out;
    assert_int_equal(hvd_request_output(req, 0, &out), HVD_OK);
    assert_int_equal(out.shape[0], 0);
    hvd_request_release(req);
}

// The audit's case: a first dimension of 2^32 + 8 split evenly used to send 8 rows.
void test_alltoall_even_split_past_int32(void **) {
    OneRank r;
    int64_t shape[1] = {k2p32 + 8};
    hvd_tensor_t t = tensor(g_bytes, HVD_DTYPE_UINT8, 1, shape);
    hvd_request_h req = nullptr;
    assert_invalid(hvd_alltoall_enqueue(r.ctx, &t, nullptr, &req),
                   {"hvd_alltoall_enqueue",
                    "even split of first dimension 4294967304 among 1 "
                    "ranks is 4294967304 rows per rank, more than a split "
                    "holds (2147483647)"});
    assert_null(req);
}

// Both ranks' tensors fit; what the op puts together from them does not.
std::string cross_rank_overflows(const hvd_unique_id_t &id, int32_t rank, int32_t size) {
    hvd_context_h ctx;
    if (join_job(id, rank, size, &ctx) != HVD_OK) return "init failed";
    std::string err;
    hvd_request_h req = nullptr;  // read by expect_failure after its enqueue argument ran
    auto expect_failure = [&](hvd_status_t enq, const char *what,
                              std::initializer_list<const char *> needles) {
        if (!err.empty()) return;
        if (enq != HVD_OK) {
            err = std::string(what) + ": enqueue failed: " + last_error();
            return;
        }
        hvd_status_t s = hvd_request_wait(req, 30000);
        char msg[1024];
        hvd_request_message(req, msg, sizeof msg);
        hvd_request_release(req);
        if (s != HVD_ERR_INVALID_ARG) {
            err = std::string(what) + ": status " + hvd_status_name(s) + ": " + msg;
            return;
        }
        for (const char *n : needles)
            if (std::strstr(msg, n) == nullptr)
                err = std::string(what) + ": '" + msg + "' lacks '" + n + "'";
    };
    hvd_op_params_t p;
    std::memset(&p, 0, sizeof p);
    p.field_mask = HVD_OP_FIELD_NAME;

    // Allgather: 2^62 + 2^62 rows pass int64.
    int64_t rows[1] = {k2p62};
    hvd_tensor_t t = tensor(g_bytes, HVD_DTYPE_UINT8, 1, rows);
    p.name = "rows";
    expect_failure(hvd_allgather_enqueue(ctx, &t, &p, &req), "allgather rows",
                   {"allgather 'rows': the first dimensions of ranks [0,1] "
                    "([4611686018427387904,4611686018427387904]) add up to more rows than a "
                    "64-bit integer holds"});
    // Allgather: 2^61 rows of 4 bytes: 2^63 bytes.
    int64_t floats[1] = {k2p60};
    hvd_tensor_t f = tensor(g_bytes, HVD_DTYPE_FLOAT32, 1, floats);
    p.name = "bytes";
    expect_failure(hvd_allgather_enqueue(ctx, &f, &p, &req), "allgather bytes",
                   {"allgather 'bytes': the output of 2305843009213693952 rows",
                    "is too large: its size in bytes overflows"});
    // The same as member 1 of a group.
    int64_t one[1] = {1};
    hvd_tensor_t small = tensor(g_bytes, HVD_DTYPE_UINT8, 1, one);
    const hvd_tensor_t *ins[2] = {&small, &t};
    p.name = "group";
    expect_failure(hvd_grouped_allgather_enqueue(ctx, ins, 2, &p, &req), "grouped allgather",
                   {"allgather 'group.1': the first dimensions of ranks [0,1]", "add up to more"});
    // Allgather into: the output's row count cannot match a sum that overflows.
    int64_t out_rows[1] = {INT64_MAX};
    hvd_tensor_t out = tensor(g_bytes, HVD_DTYPE_UINT8, 1, out_rows);
    p.name = "into";
    expect_failure(hvd_allgather_into_enqueue(ctx, &t, &out, &p, &req), "allgather into",
                   {"allgather 'into': the first dimensions of ranks [0,1]"});
    // Alltoall: each rank sends its one row of 2^62 bytes to rank 1, which would receive 2^63.
    int64_t row[2] = {1, k2p62};
    hvd_tensor_t a = tensor(g_bytes, HVD_DTYPE_UINT8, 2, row);
    int32_t splits[2] = {0, 1};
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_SPLITS;
    p.splits = splits;
    p.num_splits = 2;
    p.name = "a2a";
    expect_failure(hvd_alltoall_enqueue(ctx, &a, &p, &req), "alltoall",
                   {"alltoall 'a2a': rank 1 would receive 2 rows ([1,1] from ranks [0,1]), an "
                    "output too large: its size in bytes overflows a 64-bit integer"});

    // The context still works.
    float x[2] = {1, 2};
    int64_t xs[1] = {2};
    hvd_tensor_t xt = tensor(x, HVD_DTYPE_FLOAT32, 1, xs);
    if (err.empty() && (hvd_allreduce_enqueue(ctx, &xt, &xt, nullptr, &req) != HVD_OK ||
                        hvd_request_wait(req, 30000) != HVD_OK))
        err = "allreduce after the failures: " + last_error();
    else if (err.empty())
        hvd_request_release(req);
    if (err.empty() && (x[0] != 2 || x[1] != 4)) err = "allreduce after the failures: wrong sum";
    if (hvd_finalize(ctx) != HVD_OK && err.empty()) err = "finalize failed";
    return err;
}

void test_cross_rank_sizes_overflow_on_every_rank(void **) {
    inprocess_job::run_on_ranks(2, cross_rank_overflows);
}

void test_checked_size(void **) {
    using hvd::util::checked_size;
    using hvd::util::kSizeFits;
    int64_t bytes = -1;
    int64_t fits[3] = {3, 0, 5};
    assert_int_equal(checked_size(fits, fits + 3, 4, &bytes), kSizeFits);
    assert_int_equal(bytes, 0);
    assert_int_equal(checked_size(fits, fits, 4, &bytes), kSizeFits);  // a scalar
    assert_int_equal(bytes, 4);
    int64_t max[1] = {INT64_MAX};
    assert_int_equal(checked_size(max, max + 1, 1, &bytes), kSizeFits);
    assert_int_equal(bytes, INT64_MAX);
    assert_int_equal(checked_size(max, max + 1, 2, &bytes), 0);
    int64_t over[3] = {2, k2p62, 1};
    assert_int_equal(checked_size(over, over + 3, 1, &bytes), 1);
    int64_t neg[2] = {2, -3};
    assert_int_equal(checked_size(neg, neg + 2, 1, &bytes), 1);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checked_size),
        cmocka_unit_test(test_shape_overflow_rejected_at_enqueue),
        cmocka_unit_test(test_negative_dims_and_null_data_rejected),
        cmocka_unit_test(test_empty_tensor_with_null_data_runs),
        cmocka_unit_test(test_alltoall_even_split_past_int32),
        cmocka_unit_test(test_cross_rank_sizes_overflow_on_every_rank),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
