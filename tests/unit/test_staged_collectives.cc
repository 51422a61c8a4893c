// SPDX-License-Identifier: Apache-2.0
// The chunked allreduce and broadcast of the host-staged GPU path (engine/staged_chunks.h), on
// host memory: each rank stages its input through a few slots of one chunk, as the GPU path
// stages CUDA tensors through pinned memory, copying a chunk in when it is asked for and out
// when it is done. 1 to 4 ranks as threads, over UCX and through a shared-memory group: every
// dtype and reduction, chunks that do and do not divide the buffer, prescale and postscale, a
// rank that joined taking part with zeros, broadcasts from the first and the last rank. Every
// element is checked against a reference computed here, and every rank's calls against the
// order the GPU path relies on.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "assert_contains.h"
#include "common/dtype.h"
#include "engine/staged_allreduce.h"
#include "engine/staged_broadcast.h"
#include "host_cluster.h"
#include "rank_threads.h"

namespace {

using namespace rank_threads;
using hvd::engine::allreduce_staged;
using hvd::engine::StagedChunk;
using hvd::engine::StagedChunks;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kSlots = 3;

// One rank's staging: `in` is copied into a slot on arrive (null: the slot is filled with
// 0xA5 bytes instead, as a broadcast's receivers bring nothing), the slot into `out` on done.
// Notes every departure from the order run_staged_chunks promises (arrive k, done k, arrive
// k + 1) and a chunk done outside its slot; fails arrive of chunk `fail_at`.
class HostChunks : public StagedChunks {
  public:
    HostChunks(const unsigned char *in, unsigned char *out, size_t chunk_bytes,
               size_t fail_at = SIZE_MAX)
        : in_(in),
          out_(out),
          slots_(kSlots * (chunk_bytes > 0 ? chunk_bytes : 1)),
          chunk_bytes_(chunk_bytes),
          fail_at_(fail_at) {}

    char *arrive(const StagedChunk &c, hvd_status_t *status, std::string *message) override {
        if (c.index != next_ || waiting_ || c.offset != c.index * chunk_bytes_)
            problem("arrive of chunk " + std::to_string(c.index) + " out of order");
        waiting_ = true;
        if (c.index == fail_at_) {
            *status = HVD_ERR_DEVICE;
            *message = "injected failure";
            return nullptr;
        }
        char *slot = slots_.data() + (c.index % kSlots) * chunk_bytes_;
        if (in_ != nullptr)
            std::memcpy(slot, in_ + c.offset, c.bytes);
        else
            std::memset(slot, 0xA5, c.bytes);
        return slot;
    }
    void done(const StagedChunk &c, char *at) override {
        if (c.index != next_ || !waiting_) problem("done of chunk " + std::to_string(c.index));
        if (at != slots_.data() + (c.index % kSlots) * chunk_bytes_)
            problem("chunk " + std::to_string(c.index) + " reduced outside its slot");
        std::memcpy(out_ + c.offset, at, c.bytes);
        bytes_done_ += c.bytes;
        waiting_ = false;
        ++next_;
    }
    size_t chunks_done() const { return next_; }
    size_t bytes_done() const { return bytes_done_; }
    const std::string &problems() const { return problems_; }

  private:
    void problem(const std::string &what) { problems_ += what + "; "; }

    const unsigned char *in_;
    unsigned char *out_;
    std::vector<char> slots_;
    size_t chunk_bytes_, fail_at_;
    size_t next_ = 0, bytes_done_ = 0;
    bool waiting_ = false;
    std::string problems_;
};

// The stored value of the reduction of ranks' inputs, each times `pre`, then times `post`:
// the exact sum, then the rounding of the dtype (integers truncated toward zero; the float
// types rounded on the way out; bool unchanged by nonzero factors).
double reference(int32_t n, size_t i, int32_t dtype, int32_t op, double pre, double post) {
    const int64_t exact = expected_value(n, i, dtype, op);
    if (dtype == HVD_DTYPE_BOOL) return static_cast<double>(exact != 0);
    double want = static_cast<double>(exact) * pre;  // pre is 1 or 2: exact in every dtype
    if (dtype == HVD_DTYPE_FLOAT32 || dtype == HVD_DTYPE_FLOAT16 || dtype == HVD_DTYPE_BFLOAT16)
        want = static_cast<double>(static_cast<float>(want) * static_cast<float>(post));
    else if (dtype == HVD_DTYPE_FLOAT64)
        want *= post;
    else
        want = std::trunc(want * post);
    unsigned char cell[8];
    store(cell, 0, dtype, want);
    return load(cell, 0, dtype);
}

struct Case {
    int32_t dtype, op;
    size_t count, chunk_elems;
    double pre = 1.0, post = 1.0;
    bool shm = false;
};

void check(World &w, const Case &c) {
    const int32_t n = w.size();
    const size_t esz = hvd::dtype_size(c.dtype);
    RankBuffers b = rank_buffers(n, c.count, c.dtype, c.op);
    std::vector<std::string> messages(n), problems(n);
    std::vector<size_t> bytes_done(n);
    assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
        if (c.shm) comm.shm = w.shm[r].get();
        HostChunks chunks(b.in[r].data(), b.out[r].data(), c.chunk_elems * esz);
        hvd_status_t s = allreduce_staged(comm, c.count * esz, c.chunk_elems * esz, c.dtype, c.op,
                                          c.pre, c.post, "test", &chunks, &messages[r]);
        problems[r] = chunks.problems();
        bytes_done[r] = chunks.bytes_done();
        return s;
    }));
    for (int32_t r = 0; r < n; ++r) {
        if (!problems[r].empty()) fail_msg("rank %d: %s", r, problems[r].c_str());
        assert_int_equal(bytes_done[r], c.count * esz);
    }
    for (size_t i = 0; i < c.count; ++i) {
        const double got = load(b.out[0].data(), i, c.dtype);
        const double want = reference(n, i, c.dtype, c.op, c.pre, c.post);
        if (got != want)
            fail_msg(
                "n=%d %s dtype %d op %d count %zu chunk %zu pre %g post %g: element %zu is "
                "%g, want %g",
                n, c.shm ? "shm" : "ucx", c.dtype, c.op, c.count, c.chunk_elems, c.pre, c.post, i,
                got, want);
    }
    for (int32_t r = 1; r < n; ++r)
        assert_memory_equal(b.out[0].data(), b.out[r].data(), c.count * esz);
}

void check_ranks(int32_t n) {
    World w(n);
    const int32_t ops[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
    for (bool shm : {false, true}) {
        for (int32_t dtype : kAllDtypes) {
            for (int32_t op : ops) {
                check(w, {dtype, op, 517, 64, 1.0, 1.0, shm});  // 9 chunks, the last short
                check(w, {dtype, op, 512, 64, 1.0, 1.0, shm});  // 8 whole chunks
            }
            check(w, {dtype, HVD_OP_SUM, 300, 1000, 1.0, 1.0, shm});  // one chunk, shorter
            check(w, {dtype, HVD_OP_SUM, 7, 1, 1.0, 1.0, shm});       // an element each
            // Average's 1 / size, a postscale and a prescale, folded or not into the store.
            check(w, {dtype, HVD_OP_SUM, 333, 40, 1.0, 1.0 / n, shm});
            check(w, {dtype, HVD_OP_SUM, 333, 40, 2.0, 2.5 / n, shm});
        }
    }
}

void test_one_rank(void **) {
    check_ranks(1);
}
void test_two_ranks(void **) {
    check_ranks(2);
}
void test_three_ranks(void **) {
    check_ranks(3);
}
void test_four_ranks(void **) {
    check_ranks(4);
}

// The chunks every member derives from the run's size alone.
void test_chunk_sizes(void **) {
    using hvd::engine::staged_chunk_bytes;
    assert_int_equal(staged_chunk_bytes(0), 0);
    assert_int_equal(staged_chunk_bytes(1), 1);
    assert_int_equal(staged_chunk_bytes(4 * kMiB), 4 * kMiB);      // one chunk
    assert_int_equal(staged_chunk_bytes(4 * kMiB + 1), 2 * kMiB);  // no 1-byte fifth chunk
    assert_int_equal(staged_chunk_bytes(4 * kMiB + 8), 2 * kMiB);
    assert_int_equal(staged_chunk_bytes(6 * kMiB), 2 * kMiB);
    assert_int_equal(staged_chunk_bytes(16 * kMiB), 4 * kMiB);
    assert_int_equal(staged_chunk_bytes(24 * kMiB + 4), 7 * kMiB);
    assert_int_equal(staged_chunk_bytes(32 * kMiB), 8 * kMiB);
    assert_int_equal(staged_chunk_bytes(size_t{5} << 30), 8 * kMiB);
    // Pieces of a block cut for C chunks: whole 256 bytes, C of them covering the block.
    using hvd::engine::staged_piece_bytes;
    assert_int_equal(staged_piece_bytes(1000, 0), 0);
    assert_int_equal(staged_piece_bytes(0, 3), 0);
    assert_int_equal(staged_piece_bytes(1, 3), 256);
    assert_int_equal(staged_piece_bytes(3 * 256, 3), 256);
    assert_int_equal(staged_piece_bytes(3 * 256 + 1, 3), 512);
    assert_int_equal(staged_piece_bytes(6 * kMiB + 6, 3), 2 * kMiB + 256);
    for (size_t block : {size_t{1}, size_t{255}, size_t{4097}, 7 * kMiB + 3})
        for (size_t chunks : {size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
            const size_t piece = staged_piece_bytes(block, chunks);
            assert_int_equal(piece % 256, 0);
            assert_true(piece * chunks >= block);
            assert_true(piece < 256 + (block + chunks - 1) / chunks);
        }
}

// Three ranks, the last joined: ranks 0 and 1 stage their inputs as the GPU path does, rank 2
// takes part in the same chunks with zeros (three chunks: 2, 2 MiB and the rest).
void test_joined_rank_with_zeros(void **) {
    World w(3);
    const int32_t dtype = HVD_DTYPE_FLOAT32;
    const size_t count = (4 * kMiB + 12) / 4;
    const size_t bytes = count * 4;
    RankBuffers b = rank_buffers(3, count, dtype, HVD_OP_SUM);
    std::vector<std::string> messages(3);
    size_t chunks_done = 0;
    hvd::collectives::ScratchBuffer zeros_scratch;
    for (bool shm : {false, true}) {
        assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
            if (shm) comm.shm = w.shm[r].get();
            if (r == 2)
                return hvd::engine::allreduce_staged_zeros(comm, bytes, dtype, HVD_OP_SUM, 1.0, 0.5,
                                                           &zeros_scratch, &messages[r]);
            HostChunks chunks(b.in[r].data(), b.out[r].data(),
                              hvd::engine::staged_chunk_bytes(bytes));
            hvd_status_t s =
                allreduce_staged(comm, bytes, hvd::engine::staged_chunk_bytes(bytes), dtype,
                                 HVD_OP_SUM, 1.0, 0.5, "test", &chunks, &messages[r]);
            if (r == 0) chunks_done = chunks.chunks_done();
            return s;
        }));
        assert_int_equal(chunks_done, 3);
        for (size_t i = 0; i < count; ++i) {
            const double want = 0.5 * static_cast<double>(input_value(0, i, dtype, HVD_OP_SUM) +
                                                          input_value(1, i, dtype, HVD_OP_SUM));
            for (int32_t r = 0; r < 2; ++r)
                if (load(b.out[r].data(), i, dtype) != want)
                    fail_msg("%s: rank %d element %zu is %g, want %g", shm ? "shm" : "ucx", r, i,
                             load(b.out[r].data(), i, dtype), want);
        }
    }
}

// Broadcasts of `bytes` bytes from `root` in chunks of `chunk`: the root stages its input, the
// others nothing; every rank's output must be the root's input.
void check_broadcast(World &w, bool shm, size_t bytes, size_t chunk, int32_t root) {
    const int32_t n = w.size();
    std::vector<std::vector<unsigned char>> in(n), out(n);
    for (int32_t r = 0; r < n; ++r) {
        out[r].assign(bytes, 0x5A);
        for (size_t i = 0; i < bytes; ++i)
            in[r].push_back(static_cast<unsigned char>((i * 131 + i / 251 + 7 * r) & 0xff));
    }
    std::vector<std::string> messages(n), problems(n);
    assert_all_ok(run_ranks(w, 1, [&](int32_t r, size_t, Comm &comm) {
        if (shm) comm.shm = w.shm[r].get();
        HostChunks chunks(r == root ? in[r].data() : nullptr, out[r].data(),
                          chunk > 0 ? chunk : bytes);  // 0: one chunk of the whole run
        hvd_status_t s = hvd::engine::broadcast_staged(comm, bytes, chunk, root, "broadcast 'b'",
                                                       &chunks, &messages[r]);
        problems[r] = chunks.problems();
        return s;
    }));
    for (int32_t r = 0; r < n; ++r) {
        if (!problems[r].empty()) fail_msg("rank %d: %s", r, problems[r].c_str());
        if (out[r] != in[root])
            fail_msg("n=%d %s bytes %zu chunk %zu root %d: rank %d's output differs", n,
                     shm ? "shm" : "ucx", bytes, chunk, root, r);
    }
}

void test_broadcast(void **) {
    for (int32_t n = 1; n <= 4; ++n) {
        World w(n);
        for (bool shm : {false, true})
            for (int32_t root : {0, n - 1}) {
                check_broadcast(w, shm, 1000, 96, root);     // 11 chunks, the last short
                check_broadcast(w, shm, 70000, 8192, root);  // past the tree's size per chunk
                check_broadcast(w, shm, 50, 0, root);        // one chunk
            }
    }
}

// A chunk that never reaches the host ends the allreduce with its status and message; the
// chunks before it are done, none after.
void test_failed_arrival(void **) {
    World w(1);
    std::vector<unsigned char> in(400, 1), out(400, 0);
    HostChunks chunks(in.data(), out.data(), 40, 2);
    std::string message;
    hvd_status_t s = HVD_OK;
    run_ranks(w, 1, [&](int32_t, size_t, Comm &comm) {
        s = allreduce_staged(comm, 400, 40, HVD_DTYPE_UINT8, HVD_OP_SUM, 1.0, 1.0, "allreduce 'x'",
                             &chunks, &message);
        return HVD_OK;
    });
    assert_int_equal(s, HVD_ERR_DEVICE);
    assert_contains(message, "injected failure");
    assert_int_equal(chunks.chunks_done(), 2);
    // A collective that fails: the message names the rank, the op and the chunk.
    HostChunks bad(in.data(), out.data(), 40);
    run_ranks(w, 1, [&](int32_t, size_t, Comm &comm) {
        s = hvd::engine::run_staged_chunks(
            comm, 400, 40, "allreduce 'x'", &bad,
            [&](char *, const hvd::engine::StagedChunk &c) {
                return c.index == 3 ? HVD_ERR_TRANSPORT : HVD_OK;
            },
            &message);
        return HVD_OK;
    });
    assert_int_equal(s, HVD_ERR_TRANSPORT);
    assert_contains(message, "rank 0: allreduce 'x': chunk 4 of 10 (bytes 120 to 160 of 400)");
    assert_int_equal(bad.chunks_done(), 3);
    assert_true(chunks.problems().empty());
    assert_true(bad.problems().empty());
}

// Average must come as a Sum and its factor, and Adasum never comes here: both are refused
// with a message naming the rank, before any chunk.
void test_refused_ops(void **) {
    World w(1);
    std::vector<unsigned char> in(64), out(64);
    for (int32_t op : {HVD_OP_AVERAGE, HVD_OP_ADASUM}) {
        HostChunks chunks(in.data(), out.data(), 16);
        std::string message;
        hvd_status_t s = HVD_OK;
        run_ranks(w, 1, [&](int32_t, size_t, Comm &comm) {
            s = allreduce_staged(comm, 64, 16, HVD_DTYPE_FLOAT32, op, 1.0, 1.0, "allreduce 'y'",
                                 &chunks, &message);
            return HVD_OK;
        });
        assert_int_equal(s, HVD_ERR_INTERNAL);
        assert_contains(message, "rank 0: allreduce 'y'");
        assert_contains(message, "cannot run");
        assert_int_equal(chunks.chunks_done(), 0);
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_sizes), cmocka_unit_test(test_failed_arrival),
        cmocka_unit_test(test_refused_ops), cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_two_ranks),   cmocka_unit_test(test_three_ranks),
        cmocka_unit_test(test_four_ranks),  cmocka_unit_test(test_joined_rank_with_zeros),
        cmocka_unit_test(test_broadcast),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
