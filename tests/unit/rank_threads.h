// SPDX-License-Identifier: Apache-2.0
// N ranks as N threads of one process for the collective algorithm tests: each rank has its
// own transport (UCX, or the in-process loopback transport where the test is built with
// HVD_TEST_LOOPBACK), Comm and scratch buffer; collectives run on the threads, assertions on
// the main thread afterwards (cmocka's asserts longjmp, which only the main thread may do).
// Also typed element access, written independently of the library's own conversions where
// it matters. Shared by test_collectives.cc and test_collectives_more.cc (each built over
// both transports) and the loopback tests.
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "common/dtype.h"
#include "common/half.h"
#include "shm/shm_group.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/ucx/ucx_transport.h"

namespace rank_threads {

using hvd::collectives::Comm;
using hvd::collectives::ScratchBuffer;

constexpr int64_t kDeadlineMs = 30000;
// One page per slot half: the shared-memory algorithms cross many chunk boundaries even for
// the small cases.
constexpr size_t kTestSlotBytes = 4096;
inline uint32_t g_next_seq = 1;  // each collective call gets a fresh one, the same on all ranks

enum class Backend { kUcx, kLoopback };
#ifdef HVD_TEST_LOOPBACK
constexpr Backend kDefaultBackend = Backend::kLoopback;
#else
constexpr Backend kDefaultBackend = Backend::kUcx;
#endif

struct World {
    // single_copy_from > 0: the shared-memory group's single-copy range is [that, any size]
    // (still off until a test enables it). slot_bytes: the group's slot half.
    explicit World(int32_t n, size_t single_copy_from = 0, size_t slot_bytes = kTestSlotBytes,
                   Backend backend = kDefaultBackend) {
        if (backend == Backend::kLoopback) {
            hub = std::make_unique<hvd::transport::LoopbackHub>(n);
            transports = hub->make_all();
        } else {
            std::vector<hvd::transport::Transport *> raw;
            for (int32_t r = 0; r < n; ++r) {
                transports.push_back(hvd::transport::make_ucx_transport(r, n));
                raw.push_back(transports.back().get());
            }
            hvd::transport::connect_local_transports(raw);
        }
        for (int32_t r = 0; r < n; ++r)
            scratch.push_back(std::make_unique<ScratchBuffer>());
        hvd::shm::Settings settings;
        settings.slot_bytes = slot_bytes;
        if (single_copy_from > 0) {
            settings.single_copy_min_bytes = single_copy_from;
            settings.single_copy_max_bytes = SIZE_MAX;
        }
        shm.push_back(hvd::shm::Group::create(n, 0, settings));
        for (int32_t r = 1; r < n; ++r)
            shm.push_back(hvd::shm::Group::open(shm[0]->name(), shm[0]->nonce(), n, r));
        shm[0]->unlink();
    }
    // Each rank closes its transport on its own thread, as separate processes would: a
    // closing endpoint waits for its peer's acknowledgement, which needs the peer's progress.
    ~World() {
        std::vector<std::thread> closers;
        for (auto &t : transports)
            closers.emplace_back([&t] { t.reset(); });
        for (auto &c : closers)
            c.join();
    }
    int32_t size() const { return static_cast<int32_t>(transports.size()); }

    std::unique_ptr<hvd::transport::LoopbackHub> hub;  // Backend::kLoopback
    std::vector<std::unique_ptr<hvd::transport::Transport>> transports;
    std::vector<std::unique_ptr<ScratchBuffer>> scratch;
    // A shared-memory group over the same ranks (member r is rank r). A Comm uses it only when
    // a test sets comm.shm; every test that does runs all ranks, so the rounds stay in step.
    std::vector<std::unique_ptr<hvd::shm::Group>> shm;
};

inline Comm make_comm(World &w, int32_t rank, uint32_t seq, int64_t deadline_ms = kDeadlineMs) {
    Comm c;
    c.transport = w.transports[rank].get();
    for (int32_t r = 0; r < w.size(); ++r)
        c.members.push_back(r);
    c.my_index = rank;
    c.seq = seq;
    c.deadline = hvd::Deadline::after_ms(deadline_ms);
    c.scratch = w.scratch[rank].get();
    return c;
}

// Runs `calls` collectives on every rank of w: body(rank, call, comm) with a fresh seq per
// call (the same on every rank). A rank stops at its first failure. Returns, per rank, the
// first failed status (HVD_OK if none).
inline std::vector<hvd_status_t> run_ranks(
    World &w, size_t calls, const std::function<hvd_status_t(int32_t, size_t, Comm &)> &body) {
    uint32_t first_seq = g_next_seq;
    g_next_seq += static_cast<uint32_t>(calls);
    std::vector<hvd_status_t> status(w.size(), HVD_OK);
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < w.size(); ++r) {
        threads.emplace_back([&, r] {
            for (size_t call = 0; call < calls && status[r] == HVD_OK; ++call) {
                Comm comm = make_comm(w, r, first_seq + static_cast<uint32_t>(call));
                status[r] = body(r, call, comm);
            }
        });
    }
    for (auto &t : threads)
        t.join();
    return status;
}

inline void assert_all_ok(const std::vector<hvd_status_t> &status) {
    for (hvd_status_t s : status)
        assert_int_equal(s, HVD_OK);
}

inline bool is_unsigned(int32_t dtype) {
    return dtype == HVD_DTYPE_UINT8 || dtype == HVD_DTYPE_UINT16 || dtype == HVD_DTYPE_BOOL;
}

inline void store(void *buf, size_t i, int32_t dtype, double v) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            static_cast<uint8_t *>(buf)[i] = static_cast<uint8_t>(v);
            break;
        case HVD_DTYPE_INT8:
            static_cast<int8_t *>(buf)[i] = static_cast<int8_t>(v);
            break;
        case HVD_DTYPE_UINT16:
            static_cast<uint16_t *>(buf)[i] = static_cast<uint16_t>(v);
            break;
        case HVD_DTYPE_INT16:
            static_cast<int16_t *>(buf)[i] = static_cast<int16_t>(v);
            break;
        case HVD_DTYPE_INT32:
            static_cast<int32_t *>(buf)[i] = static_cast<int32_t>(v);
            break;
        case HVD_DTYPE_INT64:
            static_cast<int64_t *>(buf)[i] = static_cast<int64_t>(v);
            break;
        case HVD_DTYPE_FLOAT16:
            static_cast<uint16_t *>(buf)[i] = hvd::float_to_fp16(static_cast<float>(v));
            break;
        case HVD_DTYPE_FLOAT32:
            static_cast<float *>(buf)[i] = static_cast<float>(v);
            break;
        case HVD_DTYPE_FLOAT64:
            static_cast<double *>(buf)[i] = v;
            break;
        case HVD_DTYPE_BOOL:
            static_cast<uint8_t *>(buf)[i] = v != 0 ? 1 : 0;
            break;
        case HVD_DTYPE_BFLOAT16:
            static_cast<uint16_t *>(buf)[i] = hvd::float_to_bf16(static_cast<float>(v));
            break;
    }
}

inline double load(const void *buf, size_t i, int32_t dtype) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            return static_cast<const uint8_t *>(buf)[i];
        case HVD_DTYPE_INT8:
            return static_cast<const int8_t *>(buf)[i];
        case HVD_DTYPE_UINT16:
            return static_cast<const uint16_t *>(buf)[i];
        case HVD_DTYPE_INT16:
            return static_cast<const int16_t *>(buf)[i];
        case HVD_DTYPE_INT32:
            return static_cast<const int32_t *>(buf)[i];
        case HVD_DTYPE_INT64:
            return static_cast<double>(static_cast<const int64_t *>(buf)[i]);
        case HVD_DTYPE_FLOAT16:
            return hvd::fp16_to_float(static_cast<const uint16_t *>(buf)[i]);
        case HVD_DTYPE_FLOAT32:
            return static_cast<const float *>(buf)[i];
        case HVD_DTYPE_FLOAT64:
            return static_cast<const double *>(buf)[i];
        case HVD_DTYPE_BOOL:
            return static_cast<const uint8_t *>(buf)[i];
        case HVD_DTYPE_BFLOAT16:
            return hvd::bf16_to_float(static_cast<const uint16_t *>(buf)[i]);
    }
    return NAN;
}

// Rank `rank`'s element i: small integers, so every result is exact in every dtype (sums of
// up to 6 values in [-2, 4] and products of up to 6 values in {-1, 1, 2} fit int8) and any
// reduction order gives the same bits.
inline int64_t input_value(int32_t rank, size_t i, int32_t dtype, int32_t op) {
    int64_t h = static_cast<int64_t>((i * 7 + static_cast<size_t>(rank) * 5 + i / 3) % 1009);
    if (dtype == HVD_DTYPE_BOOL) return h % 4 != 0;
    switch (op) {
        case HVD_OP_SUM:
            return is_unsigned(dtype) ? h % 5 : h % 5 - 2;
        case HVD_OP_PRODUCT: {
            static const int64_t kSigned[3] = {1, -1, 2}, kUnsigned[3] = {1, 2, 1};
            return (is_unsigned(dtype) ? kUnsigned : kSigned)[h % 3];
        }
        default:
            return is_unsigned(dtype) ? h % 11 : h % 11 - 5;  // min, max
    }
}

// Every rank's input of `count` elements of dtype (input_value for op), and an output of the
// same size filled with 0xA5 bytes.
struct RankBuffers {
    std::vector<std::vector<unsigned char>> in, out;
};
inline RankBuffers rank_buffers(int32_t n, size_t count, int32_t dtype, int32_t op) {
    const size_t esz = hvd::dtype_size(dtype);
    RankBuffers b;
    b.in.resize(static_cast<size_t>(n));
    b.out.resize(static_cast<size_t>(n));
    for (int32_t r = 0; r < n; ++r) {
        b.in[r].resize(count * esz);
        b.out[r].assign(count * esz, 0xA5);
        for (size_t i = 0; i < count; ++i)
            store(b.in[r].data(), i, dtype, static_cast<double>(input_value(r, i, dtype, op)));
    }
    return b;
}

// The reduction of input_value over ranks 0..n-1, computed independently of libhvd.
inline int64_t expected_value(int32_t n, size_t i, int32_t dtype, int32_t op) {
    int64_t acc = input_value(0, i, dtype, op);
    for (int32_t r = 1; r < n; ++r) {
        int64_t v = input_value(r, i, dtype, op);
        if (dtype == HVD_DTYPE_BOOL) {
            bool any = op == HVD_OP_SUM || op == HVD_OP_MAX;  // or; min/product are and
            acc = any ? (acc || v) : (acc && v);
        } else if (op == HVD_OP_SUM) {
            acc += v;
        } else if (op == HVD_OP_PRODUCT) {
            acc *= v;
        } else if (op == HVD_OP_MIN) {
            acc = v < acc ? v : acc;
        } else {
            acc = v > acc ? v : acc;
        }
    }
    return acc;
}

}  // namespace rank_threads
