// SPDX-License-Identifier: Apache-2.0
// The NCCL path of several ranks, and the host-staged path of ranks sharing a device, through
// the C API where no GPU is: a job's ranks run as threads of this process on the devices of
// tests/gpu/fake_gpu_device.cc (host memory; streams that run asynchronously on threads of
// their own; an NCCL among the ranks of the process). Rank r uses device r, so every member
// has a device of its own and the NCCL path runs: every NCCL dtype x op of allreduce, fused
// and grouped allreduces with scaling, ragged and even allgathers, broadcast, alltoall with
// splits, even and uneven reduce-scatters, dtypes NCCL lacks (host-staged in an NCCL job), a
// process set, and an op ordered on the caller's stream. Ranks on one device take the
// host-staged path, the chunked pipeline included. Results are checked against references
// computed here, on 1 to 4 ranks; scripts/gpu_check.sh runs the same paths on a GPU.
#include <cmocka.h>
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "dtype_elements.h"
#include "fake_device_job.h"
#include "gpu/gpu_module_api.h"
#include "hvd/hvd.h"
#include "inprocess_job.h"

namespace {

using namespace fake_device_job;

// What a test body does with NCCL: runs collectives on it, none, or starts one that never
// completes (a failure test).
enum class Nccl { kUsed, kUnused, kStarted };

// Runs a test body and checks its use of NCCL (rounds on the fake module) and that no device
// work touched freed memory.
void expect_nccl(Nccl use, const std::function<void()> &body) {
    // With HVD_GPU_OPERATIONS=host (the test's second run) every op takes the host path: the
    // staged collectives, or for one rank the device-local copies.
    const char *ops = std::getenv("HVD_GPU_OPERATIONS");
    if (ops != nullptr && std::strcmp(ops, "host") == 0) use = Nccl::kUnused;
    const uint64_t before = g_rounds();
    body();
    const uint64_t ran = g_rounds() - before;
    if (use == Nccl::kUsed && ran == 0) fail_msg("the NCCL path did not run");
    if (use == Nccl::kUnused && ran != 0)
        fail_msg("%llu NCCL rounds ran", static_cast<unsigned long long>(ran));
    char misuses[4096];
    if (g_misuses(misuses, sizeof misuses) != 0)
        fail_msg("device work on freed memory:\n%s", misuses);
}

// Runs body on `size` ranks, rank r on device device_of(r).
void run_job(int32_t size, const std::function<int32_t(int32_t)> &device_of,
             const std::function<std::string(Rank &)> &body) {
    inprocess_job::run_on_ranks(size, [&](const hvd_unique_id_t &id, int32_t rank, int32_t n) {
        Rank me;
        me.rank = rank;
        me.size = n;
        me.device = device_of(rank);
        if (inprocess_job::join_job(id, rank, n, &me.ctx) != HVD_OK) return std::string("init");
        std::string err = body(me);
        hvd_finalize(me.ctx);
        return err;
    });
}

int32_t own_device(int32_t rank) {
    return rank;
}
int32_t shared_device(int32_t) {
    return 0;
}

// ------------------------------------------------------------------ allreduce

void test_allreduce_every_dtype_and_op(void **) {
    expect_nccl(Nccl::kUsed, [] {
        for (int32_t n = 1; n <= 4; ++n)
            run_job(n, own_device, [](Rank &me) {
                return allreduce_everything(
                    me, std::vector<int32_t>(std::begin(kNcclDtypes), std::end(kNcclDtypes)));
            });
    });
}

// int16, uint16 and bool, which NCCL does not reduce, take the host path in the same job.
void test_dtypes_nccl_lacks(void **) {
    expect_nccl(Nccl::kUnused, [] {
        for (int32_t n = 2; n <= 3; ++n)
            run_job(n, own_device, [](Rank &me) {
                std::vector<int32_t> dtypes = {HVD_DTYPE_INT16, HVD_DTYPE_UINT16};
                std::string err = allreduce_everything(me, dtypes);
                if (!err.empty()) return err;
                DeviceArray b(me.device, HVD_DTYPE_BOOL, {9}), out(me.device, HVD_DTYPE_BOOL, {9});
                for (size_t i = 0; i < b.count; ++i)
                    store(HVD_DTYPE_BOOL, b.data, i, value(HVD_DTYPE_BOOL, HVD_OP_MAX, me.rank, i));
                Params p("ar.bool");
                p.field_mask |= HVD_OP_FIELD_REDUCE_OP;
                p.reduce_op = HVD_OP_MAX;
                hvd_tensor_t in = b.tensor(), o = out.tensor();
                hvd_request_h req;
                if (hvd_allreduce_enqueue(me.ctx, &in, &o, &p, &req) != HVD_OK)
                    return enqueue_failed("ar.bool");
                err = finish(req, "bool allreduce");
                if (!err.empty()) return err;
                return compare("bool max", HVD_DTYPE_BOOL, out.data, out.count, [&](size_t i) {
                    return reference(HVD_DTYPE_BOOL, HVD_OP_MAX, me.size, i);
                });
            });
    });
}

// Twenty float32 tensors of different sizes, averaged: one fused run through the device fusion
// buffer, its copies scaled on the way.
void test_fused_and_grouped(void **) {
    expect_nccl(Nccl::kUsed, [] {
        for (int32_t n = 2; n <= 4; ++n)
            run_job(n, own_device, [](Rank &me) {
                std::vector<std::unique_ptr<DeviceArray>> xs;
                std::vector<hvd_request_h> reqs;
                for (int t = 0; t < 20; ++t) {
                    xs.push_back(std::make_unique<DeviceArray>(me.device, HVD_DTYPE_FLOAT32,
                                                               std::vector<int64_t>{1 + t * 13}));
                    for (size_t i = 0; i < xs.back()->count; ++i)
                        store(HVD_DTYPE_FLOAT32, xs.back()->data, i,
                              value(HVD_DTYPE_FLOAT32, HVD_OP_SUM, me.rank, i, t));
                    Params p("fused." + std::to_string(t));
                    p.field_mask |= HVD_OP_FIELD_REDUCE_OP;
                    p.reduce_op = HVD_OP_AVERAGE;
                    hvd_tensor_t x = xs.back()->tensor();
                    hvd_request_h req;
                    if (hvd_allreduce_enqueue(me.ctx, &x, &x, &p, &req) != HVD_OK)
                        return enqueue_failed("fused");
                    reqs.push_back(req);
                }
                for (int t = 0; t < 20; ++t) {
                    std::string err = finish(reqs[t], "fused allreduce " + std::to_string(t));
                    if (err.empty())
                        err = compare("fused " + std::to_string(t), HVD_DTYPE_FLOAT32, xs[t]->data,
                                      xs[t]->count, [&](size_t i) {
                                          return reference(HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE,
                                                           me.size, i, 1.0, 1.0, t);
                                      });
                    if (!err.empty()) return err;
                }
                // A grouped allreduce of five float64 tensors, two of them out of place.
                std::vector<std::unique_ptr<DeviceArray>> ins, outs;
                std::vector<hvd_tensor_t> tin(5), tout(5);
                std::vector<const hvd_tensor_t *> pin(5), pout(5);
                for (int t = 0; t < 5; ++t) {
                    ins.push_back(std::make_unique<DeviceArray>(me.device, HVD_DTYPE_FLOAT64,
                                                                std::vector<int64_t>{3, 1 + t}));
                    for (size_t i = 0; i < ins.back()->count; ++i)
                        store(HVD_DTYPE_FLOAT64, ins.back()->data, i,
                              value(HVD_DTYPE_FLOAT64, HVD_OP_SUM, me.rank, i, t));
                    const bool apart = t % 2 == 1;
                    outs.push_back(
                        apart ? std::make_unique<DeviceArray>(me.device, HVD_DTYPE_FLOAT64,
                                                              std::vector<int64_t>{3, 1 + t})
                              : nullptr);
                    tin[t] = ins[t]->tensor();
                    tout[t] = apart ? outs[t]->tensor() : tin[t];
                    pin[t] = &tin[t];
                    pout[t] = &tout[t];
                }
                Params p("grouped");
                p.field_mask |= HVD_OP_FIELD_SCALE;
                p.prescale = 1.0;
                p.postscale = 0.25;
                hvd_request_h req;
                if (hvd_grouped_allreduce_enqueue(me.ctx, pin.data(), pout.data(), 5, &p, &req) !=
                    HVD_OK)
                    return enqueue_failed("grouped");
                std::string err = finish(req, "grouped allreduce");
                for (int t = 0; t < 5 && err.empty(); ++t)
                    err = compare("grouped " + std::to_string(t), HVD_DTYPE_FLOAT64, tout[t].data,
                                  ins[t]->count, [&](size_t i) {
                                      return reference(HVD_DTYPE_FLOAT64, HVD_OP_SUM, me.size, i,
                                                       1.0, 0.25, t);
                                  });
                return err;
            });
    });
}

// ------------------------------------------------------------------ data movement

// From the last rank, in place and out of place.
std::string broadcasts(Rank &me) {
    const int32_t root = me.size - 1;
    DeviceArray x(me.device, HVD_DTYPE_BFLOAT16, {7}), out(me.device, HVD_DTYPE_BFLOAT16, {7});
    for (size_t i = 0; i < x.count; ++i)
        store(HVD_DTYPE_BFLOAT16, x.data, i, value(HVD_DTYPE_BFLOAT16, HVD_OP_SUM, me.rank, i));
    Params p("bc.apart");
    p.field_mask |= HVD_OP_FIELD_ROOT;
    p.root_rank = root;
    hvd_tensor_t in = x.tensor(), o = out.tensor();
    hvd_request_h req;
    if (hvd_broadcast_enqueue(me.ctx, &in, &o, &p, &req) != HVD_OK) return enqueue_failed("bc");
    std::string err = finish(req, "broadcast out of place");
    auto want = [&](size_t i) { return value(HVD_DTYPE_BFLOAT16, HVD_OP_SUM, root, i); };
    if (err.empty()) err = compare("broadcast out of place", HVD_DTYPE_BFLOAT16, out.data, 7, want);
    if (!err.empty()) return err;
    p.rename("bc.inplace");
    if (hvd_broadcast_enqueue(me.ctx, &in, &in, &p, &req) != HVD_OK) return enqueue_failed("bc");
    err = finish(req, "broadcast in place");
    return err.empty() ? compare("broadcast in place", HVD_DTYPE_BFLOAT16, x.data, 7, want) : err;
}

// A completed alltoall's received splits against rows_from(sender), then its output (rows of
// `cols` values of dtype, sender after sender) against want(sender, k, column) for row k of
// each sender's; releases req. "" or what differs.
std::string check_alltoall(hvd_request_h req, const Rank &me, const std::string &what,
                           int32_t dtype, int64_t cols,
                           const std::function<int64_t(int32_t)> &rows_from,
                           const std::function<double(int32_t, int64_t, int64_t)> &want) {
    std::vector<int32_t> received(static_cast<size_t>(me.size));
    hvd_request_received_splits(req, received.data(), me.size);
    std::vector<std::pair<int32_t, int64_t>> row_of;  // (sender, k)
    for (int32_t j = 0; j < me.size; ++j) {
        if (received[j] != rows_from(j)) {
            hvd_request_release(req);
            return what + ": " + std::to_string(received[j]) + " rows from rank " +
                   std::to_string(j);
        }
        for (int64_t k = 0; k < received[j]; ++k)
            row_of.push_back({j, k});
    }
    std::string err = check_outstore(
        req, what, dtype, static_cast<int64_t>(row_of.size()), cols,
        [&](int64_t row, int64_t c) { return want(row_of[row].first, row_of[row].second, c); });
    hvd_request_release(req);
    return err;
}

// Rank r sends (r + j + 1) % 3 rows to rank j; row k of those holds 1000 r + 10 j + k.
std::string alltoalls(Rank &me) {
    const int64_t cols = 2;
    auto rows_to = [](int32_t from, int32_t to) { return (from + to + 1) % 3; };
    std::vector<int32_t> splits;
    int64_t total = 0;
    for (int32_t j = 0; j < me.size; ++j) {
        splits.push_back(rows_to(me.rank, j));
        total += splits.back();
    }
    // Two rows past the splits, which nobody receives.
    DeviceArray x(me.device, HVD_DTYPE_INT64, {total + 2, cols});
    size_t e = 0;
    for (int32_t j = 0; j < me.size; ++j)
        for (int32_t k = 0; k < rows_to(me.rank, j); ++k)
            for (int64_t c = 0; c < cols; ++c)
                store(HVD_DTYPE_INT64, x.data, e++, 1000.0 * me.rank + 10 * j + k);
    while (e < x.count)
        store(HVD_DTYPE_INT64, x.data, e++, -1);
    Params p("a2a");
    p.field_mask |= HVD_OP_FIELD_SPLITS;
    p.splits = splits.data();
    p.num_splits = me.size;
    hvd_tensor_t t = x.tensor();
    hvd_request_h req;
    if (hvd_alltoall_enqueue(me.ctx, &t, &p, &req) != HVD_OK) return enqueue_failed("a2a");
    std::string err = wait_only(req, "alltoall");
    if (!err.empty()) return err;
    return check_alltoall(
        req, me, "alltoall", HVD_DTYPE_INT64, cols,
        [&](int32_t from) { return rows_to(from, me.rank); },
        [&](int32_t from, int64_t k, int64_t) {
            return 1000.0 * from + 10 * me.rank + static_cast<double>(k);
        });
}

// d0 rows split so that the first d0 % n ranks get one more; Sum of an even split (one
// ncclReduceScatter) and Average with prescale of an uneven one (a reduce per rank).
std::string reducescatters(Rank &me) {
    const int64_t cols = 2;
    for (int64_t d0 : {2 * static_cast<int64_t>(me.size), 2 * static_cast<int64_t>(me.size) + 1}) {
        const bool even = d0 % me.size == 0;
        const int32_t op = even ? HVD_OP_SUM : HVD_OP_AVERAGE;
        const double pre = even ? 1.0 : 2.0;
        DeviceArray x(me.device, HVD_DTYPE_FLOAT32, {d0, cols});
        for (size_t i = 0; i < x.count; ++i)
            store(HVD_DTYPE_FLOAT32, x.data, i, value(HVD_DTYPE_FLOAT32, HVD_OP_SUM, me.rank, i));
        const std::string name = even ? "rs.even" : "rs.uneven";
        Params p(name);
        p.field_mask |= HVD_OP_FIELD_REDUCE_OP | HVD_OP_FIELD_SCALE;
        p.reduce_op = op;
        p.prescale = pre;
        p.postscale = 1.0;
        hvd_tensor_t t = x.tensor();
        hvd_request_h req;
        if (hvd_reducescatter_enqueue(me.ctx, &t, &p, &req) != HVD_OK) return enqueue_failed(name);
        std::string err = wait_only(req, name);
        if (!err.empty()) return err;
        int64_t first = 0;
        for (int32_t r = 0; r < me.rank; ++r)
            first += d0 / me.size + (r < d0 % me.size ? 1 : 0);
        const int64_t mine = d0 / me.size + (me.rank < d0 % me.size ? 1 : 0);
        err =
            check_outstore(req, name, HVD_DTYPE_FLOAT32, mine, cols, [&](int64_t row, int64_t col) {
                const size_t i = static_cast<size_t>((first + row) * cols + col);
                return reference(HVD_DTYPE_FLOAT32, op, me.size, i, pre);
            });
        hvd_request_release(req);
        if (!err.empty()) return err;
    }
    return "";
}

// Reduce-scatters of several chunks: a grouped one of two tensors of uneven rows, Average
// with both scales, into library-owned outputs; a Sum of int32 on the caller's stream, whose
// input lands there behind a long copy and whose output is read there before the release.
std::string chunked_reducescatters(Rank &me) {
    const int64_t n = me.size;
    auto rows_before = [n](int64_t d0, int64_t r) {
        int64_t first = 0;
        for (int64_t q = 0; q < r; ++q)
            first += d0 / n + (q < d0 % n ? 1 : 0);
        return first;
    };
    const int64_t shapes[2][2] = {{1001, 1500}, {777, 4000}};  // 18.4 MiB of float32
    std::vector<std::unique_ptr<DeviceArray>> xs;
    std::vector<hvd_tensor_t> ts;
    for (int t = 0; t < 2; ++t) {
        xs.push_back(std::make_unique<DeviceArray>(
            me.device, HVD_DTYPE_FLOAT32, std::vector<int64_t>{shapes[t][0], shapes[t][1]}));
        for (size_t i = 0; i < xs[t]->count; ++i)
            store(HVD_DTYPE_FLOAT32, xs[t]->data, i,
                  value(HVD_DTYPE_FLOAT32, HVD_OP_SUM, me.rank, i, t));
        ts.push_back(xs[t]->tensor());
    }
    const hvd_tensor_t *ins[] = {&ts[0], &ts[1]};
    Params p("rs.grouped");
    p.field_mask |= HVD_OP_FIELD_REDUCE_OP | HVD_OP_FIELD_SCALE;
    p.reduce_op = HVD_OP_AVERAGE;
    p.prescale = 2.0;
    p.postscale = 3.0;
    hvd_request_h req;
    // Copies of a chunk take a while: a completion that does not wait for them comes early.
    g_slow_copies(5000);
    if (hvd_grouped_reducescatter_enqueue(me.ctx, ins, 2, &p, &req) != HVD_OK)
        return enqueue_failed("rs.grouped");
    std::string err = wait_only(req, "grouped reducescatter in chunks");
    g_slow_copies(0);
    if (!err.empty()) return err;
    for (int t = 0; t < 2 && err.empty(); ++t) {
        const int64_t d0 = shapes[t][0], cols = shapes[t][1];
        const int64_t first = rows_before(d0, me.rank);
        const int64_t mine = rows_before(d0, me.rank + 1) - first;
        err = check_outstore(
            req, "grouped reducescatter " + std::to_string(t), HVD_DTYPE_FLOAT32, mine, cols,
            [&](int64_t row, int64_t col) {
                const size_t i = static_cast<size_t>((first + row) * cols + col);
                return reference(HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE, me.size, i, 2.0, 3.0, t);
            },
            t);
    }
    hvd_request_release(req);
    if (!err.empty()) return err;

    CallerStream s(me.device);
    const size_t big = 64 << 20;
    std::vector<char> filler(big, 1);
    void *slow = device_alloc(me.device, big);
    const int64_t d0 = (1 << 20) + 3, cols = 3;  // 12 MiB of int32
    DeviceArray x(me.device, HVD_DTYPE_INT32, {d0, cols});
    std::vector<int32_t> input(x.count);
    for (size_t i = 0; i < input.size(); ++i)
        input[i] = static_cast<int32_t>(value(HVD_DTYPE_INT32, HVD_OP_SUM, me.rank, i));
    s.copy(slow, filler.data(), big);  // the input lands late on the stream
    s.copy(x.data, input.data(), x.count * sizeof(int32_t));
    Params ps("rs.stream");
    ps.field_mask |= HVD_OP_FIELD_STREAM;
    ps.stream = s.stream;
    hvd_tensor_t t = x.tensor();
    if (hvd_reducescatter_enqueue(me.ctx, &t, &ps, &req) != HVD_OK) {
        device_free(me.device, slow);
        return enqueue_failed("rs.stream");
    }
    err = wait_only(req, "reducescatter on the caller's stream");
    const int64_t first = rows_before(d0, me.rank);
    const int64_t mine = rows_before(d0, me.rank + 1) - first;
    std::vector<int32_t> got(static_cast<size_t>(mine * cols), -1);
    if (err.empty()) {
        hvd_tensor_t out;
        hvd_request_output(req, 0, &out);
        if (out.shape[0] != mine) err = "reducescatter on the stream: wrong rows";
        s.copy(slow, filler.data(), big);  // the read comes late on the stream
        s.copy(got.data(), out.data, got.size() * sizeof(int32_t));
        hvd_request_release(req);
    }
    if (!s.sync()) err = "the caller's stream did not finish";
    device_free(me.device, slow);
    for (size_t i = 0; i < got.size() && err.empty(); ++i) {
        const double want =
            reference(HVD_DTYPE_INT32, HVD_OP_SUM, me.size, static_cast<size_t>(first * cols) + i);
        if (got[i] != want)
            err = "reducescatter on the stream: element " + std::to_string(i) + " is " +
                  std::to_string(got[i]) + ", not " + std::to_string(want);
    }
    return err;
}

// An alltoall of several chunks: ranks but the last exchange 1.2 to 3.6 MiB with each other,
// the last rank only keeps its own rows (a member with nothing to move, or for two ranks no
// chunk at all). Row k of those rank r sends to rank j holds r 1e6 + j 1e4 + k + column.
std::string chunked_alltoall(Rank &me) {
    const int64_t cols = 2047;  // rows of 8188 bytes: pieces cut elements apart
    const int32_t last = me.size - 1;
    auto rows_to = [last](int32_t from, int32_t to) -> int64_t {
        if (from != to && (from == last || to == last)) return 0;
        return 149 * (from + 2 * to + 1) + 1;
    };
    auto cell = [](int32_t from, int32_t to, int64_t k, int64_t c) {
        return 1e6 * from + 1e4 * to + static_cast<double>(k + c);
    };
    std::vector<int32_t> splits;
    int64_t total = 0;
    for (int32_t j = 0; j < me.size; ++j) {
        splits.push_back(static_cast<int32_t>(rows_to(me.rank, j)));
        total += splits.back();
    }
    DeviceArray x(me.device, HVD_DTYPE_INT32, {total, cols});
    size_t e = 0;
    for (int32_t j = 0; j < me.size; ++j)
        for (int64_t k = 0; k < rows_to(me.rank, j); ++k)
            for (int64_t c = 0; c < cols; ++c)
                store(HVD_DTYPE_INT32, x.data, e++, cell(me.rank, j, k, c));
    Params p("a2a.chunks");
    p.field_mask |= HVD_OP_FIELD_SPLITS;
    p.splits = splits.data();
    p.num_splits = me.size;
    hvd_tensor_t t = x.tensor();
    hvd_request_h req;
    // Copies of a chunk take a while: a completion that does not wait for them comes early.
    g_slow_copies(5000);
    if (hvd_alltoall_enqueue(me.ctx, &t, &p, &req) != HVD_OK) return enqueue_failed("a2a.chunks");
    std::string err = wait_only(req, "alltoall in chunks");
    g_slow_copies(0);
    if (!err.empty()) return err;
    return check_alltoall(
        req, me, "alltoall in chunks", HVD_DTYPE_INT32, cols,
        [&](int32_t from) { return rows_to(from, me.rank); },
        [&](int32_t from, int64_t k, int64_t c) { return cell(from, me.rank, k, c); });
}

void test_data_movement(void **) {
    expect_nccl(Nccl::kUsed, [] {
        for (int32_t n = 1; n <= 4; ++n)
            run_job(n, own_device, [](Rank &me) {
                for (auto step : {allgathers, broadcasts, alltoalls, reducescatters}) {
                    std::string err = step(me);
                    if (!err.empty()) return err;
                }
                return std::string();
            });
    });
}

// A set of the first and the last rank: a communicator of its own.
void test_process_set(void **) {
    expect_nccl(Nccl::kUsed, [] {
        for (int32_t n = 3; n <= 4; ++n)
            run_job(n, own_device, [](Rank &me) {
                const int32_t ranks[] = {0, me.size - 1};
                hvd_process_set_h ps;
                if (hvd_process_set_create(me.ctx, ranks, 2, &ps) != HVD_OK)
                    return enqueue_failed("process set");
                if (me.rank != 0 && me.rank != me.size - 1) return std::string();
                DeviceArray x(me.device, HVD_DTYPE_FLOAT32, {11});
                for (size_t i = 0; i < x.count; ++i)
                    store(HVD_DTYPE_FLOAT32, x.data, i, 1.0 + me.rank + static_cast<double>(i));
                Params p("set.ar");
                p.field_mask |= HVD_OP_FIELD_PROCESS_SET;
                p.process_set = ps;
                hvd_tensor_t t = x.tensor();
                hvd_request_h req;
                if (hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &req) != HVD_OK)
                    return enqueue_failed("set.ar");
                std::string err = finish(req, "allreduce in a process set");
                if (err.empty())
                    err = compare("process set", HVD_DTYPE_FLOAT32, x.data, 11,
                                  [&](size_t i) { return 2.0 + (me.size - 1) + 2.0 * i; });
                if (!err.empty()) return err;
                // An allgather there: member 0 has 1 row, member 1 has 3 (rows of 2 int64).
                const int32_t member = me.rank == 0 ? 0 : 1;
                DeviceArray rows(me.device, HVD_DTYPE_INT64, {1 + 2 * member, 2});
                for (size_t i = 0; i < rows.count; ++i)
                    store(HVD_DTYPE_INT64, rows.data, i, 10.0 * me.rank + static_cast<double>(i));
                p.rename("set.ag");
                t = rows.tensor();
                if (hvd_allgather_enqueue(me.ctx, &t, &p, &req) != HVD_OK)
                    return enqueue_failed("set.ag");
                err = wait_only(req, "allgather in a process set");
                if (!err.empty()) return err;
                err = check_outstore(req, "allgather in a process set", HVD_DTYPE_INT64, 4, 2,
                                     [&](int64_t row, int64_t col) {
                                         return row == 0
                                                    ? static_cast<double>(col)
                                                    : 10.0 * (me.size - 1) +
                                                          static_cast<double>((row - 1) * 2 + col);
                                     });
                hvd_request_release(req);
                return err;
            });
    });
}

// ------------------------------------------------------------------ streams

// Two grouped allreduces on the caller's stream, behind a long copy there, the second larger:
// the fusion buffer grows while the first run may still wait on the stream, so its old memory
// must go in stream order. Checked once the stream's work is done.
std::string grouped_on_stream(Rank &me, CallerStream &s, void *slow,
                              const std::vector<char> &filler) {
    std::vector<std::unique_ptr<DeviceArray>> xs;
    std::vector<hvd_tensor_t> ts(6);
    for (size_t k = 0; k < 6; ++k) {
        xs.push_back(std::make_unique<DeviceArray>(me.device, HVD_DTYPE_FLOAT32,
                                                   std::vector<int64_t>{k < 3 ? 100 : 5000}));
        for (size_t i = 0; i < xs[k]->count; ++i)
            store(HVD_DTYPE_FLOAT32, xs[k]->data, i,
                  value(HVD_DTYPE_FLOAT32, HVD_OP_SUM, me.rank, i, static_cast<int>(k)));
        ts[k] = xs[k]->tensor();
    }
    s.copy(slow, filler.data(), filler.size());
    for (size_t first : {0, 3}) {
        const hvd_tensor_t *ps[3] = {&ts[first], &ts[first + 1], &ts[first + 2]};
        Params p("stream.grouped." + std::to_string(first));
        p.field_mask |= HVD_OP_FIELD_STREAM;
        p.stream = s.stream;
        hvd_request_h req;
        if (hvd_grouped_allreduce_enqueue(me.ctx, ps, ps, 3, &p, &req) != HVD_OK)
            return enqueue_failed(p.label);
        std::string err = finish(req, p.label);
        if (!err.empty()) return err;
    }
    if (!s.sync()) return "the caller's stream did not finish";
    for (size_t k = 0; k < xs.size(); ++k) {
        std::string err = compare("grouped on the stream", HVD_DTYPE_FLOAT32, xs[k]->data,
                                  xs[k]->count, [&](size_t i) {
                                      return reference(HVD_DTYPE_FLOAT32, HVD_OP_SUM, me.size, i,
                                                       1.0, 1.0, static_cast<int>(k));
                                  });
        if (!err.empty()) return err;
    }
    return "";
}

// With a stream and no ready event, an op reads what the caller queued there before it (here
// a write of the input behind a long copy), and its result is valid on that stream with no
// host wait; an allgather's output, read there, is freed there at release.
void test_caller_stream(void **) {
    expect_nccl(Nccl::kUsed, [] {
        for (int32_t n = 1; n <= 3; ++n)
            run_job(n, own_device, [](Rank &me) {
                CallerStream s(me.device);
                const size_t big = 64 << 20;
                std::vector<char> filler(big, 1);
                void *slow = device_alloc(me.device, big);
                DeviceArray x(me.device, HVD_DTYPE_FLOAT32, {1000});
                std::vector<float> pattern(1000), back(1000, -1.0f),
                    gathered(1000 * me.size, -1.0f);
                for (size_t i = 0; i < pattern.size(); ++i)
                    pattern[i] = static_cast<float>(me.rank * 1000 + i);
                s.copy(slow, filler.data(), big);  // keeps the stream busy before the input lands
                s.copy(x.data, pattern.data(), x.count * sizeof(float));
                Params p("stream.ar");
                p.field_mask |= HVD_OP_FIELD_STREAM;
                p.stream = s.stream;
                hvd_tensor_t t = x.tensor();
                hvd_request_h ar, ag;
                if (hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &ar) != HVD_OK)
                    return enqueue_failed("stream.ar");
                std::string err = finish(ar, "allreduce on the caller's stream");
                if (!err.empty()) return err;
                s.copy(back.data(), x.data, x.count * sizeof(float));
                p.rename("stream.ag");
                if (hvd_allgather_enqueue(me.ctx, &t, &p, &ag) != HVD_OK)
                    return enqueue_failed("stream.ag");
                err = wait_only(ag, "allgather on the caller's stream");
                if (!err.empty()) return err;
                hvd_tensor_t out;
                hvd_request_output(ag, 0, &out);
                // The read comes late on the stream (behind another long copy): the release
                // must free the output after it, on the stream, not when it is called.
                s.copy(slow, filler.data(), big);
                s.copy(gathered.data(), out.data, gathered.size() * sizeof(float));
                hvd_request_release(ag);
                err = grouped_on_stream(me, s, slow, filler);
                if (!err.empty()) return err;
                if (!s.sync()) return std::string("the caller's stream did not finish");
                device_free(me.device, slow);
                const double sum_base = 1000.0 * me.size * (me.size - 1) / 2;
                for (size_t i = 0; i < back.size(); ++i)
                    if (back[i] != static_cast<float>(sum_base + me.size * static_cast<double>(i)))
                        return "allreduce on the stream: element " + std::to_string(i) + " is " +
                               std::to_string(back[i]);
                for (size_t i = 0; i < gathered.size(); ++i)
                    if (gathered[i] !=
                        static_cast<float>(sum_base + me.size * static_cast<double>(i % 1000)))
                        return "allgather on the stream: element " + std::to_string(i) + " is " +
                               std::to_string(gathered[i]);
                return std::string();
            });
    });
}

// An op given a stream that is capturing a CUDA graph is refused at enqueue on every rank,
// saying why, and nothing runs; the same op on the stream outside the capture runs.
// "" where an enqueue of `what` was refused with `want`, no request and a last error that
// holds every one of `parts`; else what went wrong.
std::string refusal_problem(const char *what, hvd_status_t st, hvd_status_t want, hvd_request_h req,
                            std::initializer_list<const char *> parts) {
    char msg[512];
    hvd_last_error(msg, sizeof msg);
    if (st != want || req != nullptr)
        return std::string(what) + " was not refused: " + hvd_status_name(st);
    for (const char *part : parts)
        if (std::strstr(msg, part) == nullptr)
            return "the refusal does not say why: " + std::string(msg);
    return "";
}

void test_graph_capture_refused(void **) {
    expect_nccl(Nccl::kUsed, [] {
        run_job(2, own_device, [](Rank &me) {
            CallerStream s(me.device);
            DeviceArray x(me.device, HVD_DTYPE_FLOAT32, {8});
            for (size_t i = 0; i < x.count; ++i)
                store(HVD_DTYPE_FLOAT32, x.data, i, static_cast<double>(i));
            Params p("captured");
            p.field_mask |= HVD_OP_FIELD_STREAM;
            p.stream = s.stream;
            hvd_tensor_t t = x.tensor();
            hvd_request_h req = nullptr;
            g_capture(s.stream, 1);
            const hvd_status_t st = hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &req);
            g_capture(s.stream, 0);
            std::string err = refusal_problem("a capturing stream", st, HVD_ERR_UNSUPPORTED, req,
                                              {"capturing a CUDA graph", "'captured'"});
            if (!err.empty()) return err;
            if (hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &req) != HVD_OK)
                return enqueue_failed("captured, after the capture");
            err = finish(req, "allreduce after the capture");
            if (err.empty() && !s.sync()) err = "the caller's stream did not finish";
            if (err.empty())
                err = compare("allreduce after the capture", HVD_DTYPE_FLOAT32, x.data, x.count,
                              [](size_t i) { return 2.0 * static_cast<double>(i); });
            return err;
        });
    });
}

// On NCCL, a tensor whose members bring equal rows is gathered by one ncclAllGather, fused with
// others or not; one of ragged rows by a broadcast per member (allgathers() says how many).
void test_allgather_calls(void **) {
    const char *ops = std::getenv("HVD_GPU_OPERATIONS");
    const bool nccl = ops == nullptr || std::strcmp(ops, "host") != 0;
    expect_nccl(Nccl::kUsed, [nccl] {
        for (int32_t n = 2; n <= 3; ++n) {
            const uint64_t gathers = g_nccl_calls("allgather"), casts = g_nccl_calls("broadcast");
            run_job(n, own_device, [](Rank &me) { return allgathers(me); });
            const uint64_t g = g_nccl_calls("allgather") - gathers;
            const uint64_t b = g_nccl_calls("broadcast") - casts;
            const uint64_t want_g = nccl ? 2 * n : 0, want_b = nccl ? 2 * n * n : 0;
            if (g != want_g || b != want_b)
                fail_msg(
                    "%d ranks: %llu ncclAllGather and %llu ncclBroadcast calls, not %llu "
                    "and %llu",
                    n, static_cast<unsigned long long>(g), static_cast<unsigned long long>(b),
                    static_cast<unsigned long long>(want_g),
                    static_cast<unsigned long long>(want_b));
        }
    });
}

// A CUDA tensor whose data is not aligned to its elements is refused at enqueue, naming it,
// and the job goes on.
void test_misaligned_refused(void **) {
    expect_nccl(Nccl::kUsed, [] {
        run_job(2, own_device, [](Rank &me) {
            DeviceArray x(me.device, HVD_DTYPE_FLOAT32, {9});
            for (size_t i = 0; i < x.count; ++i)
                store(HVD_DTYPE_FLOAT32, x.data, i, static_cast<double>(i));
            Params p("misaligned");
            hvd_tensor_t t = x.tensor();
            const int64_t eight = 8;  // elements from byte 2 on, inside the array
            t.data = static_cast<char *>(x.data) + 2;
            t.shape = &eight;
            hvd_request_h req = nullptr;
            const hvd_status_t st = hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &req);
            std::string err =
                refusal_problem("a misaligned tensor", st, HVD_ERR_INVALID_ARG, req,
                                {"input tensor", "not aligned to its 4-byte elements"});
            if (!err.empty()) return err;
            hvd_tensor_t aligned = x.tensor();
            if (hvd_allreduce_enqueue(me.ctx, &aligned, &aligned, &p, &req) != HVD_OK)
                return enqueue_failed("misaligned, then aligned");
            err = finish(req, "allreduce after the refusal");
            if (err.empty())
                err = compare("allreduce after the refusal", HVD_DTYPE_FLOAT32, x.data, x.count,
                              [](size_t i) { return 2.0 * static_cast<double>(i); });
            return err;
        });
    });
}

// ------------------------------------------------------------------ ranks sharing a device

// Ranks on one device stage through host memory: a 40 MiB allreduce in chunks (slots
// reused), in place and out of place, a broadcast in chunks, allgathers in chunks, into
// library-owned and callers' outputs, in place and on the caller's stream, reduce-scatters
// of one chunk and of several, grouped and on the caller's stream, and alltoalls of one chunk
// and of several.
void test_shared_device_host_path(void **) {
    expect_nccl(Nccl::kUnused, [] {
        for (int32_t n = 2; n <= 3; ++n)
            run_job(n, shared_device, [](Rank &me) {
                const int64_t count = (40 << 20) / 4;
                DeviceArray x(me.device, HVD_DTYPE_FLOAT32, {count}),
                    out(me.device, HVD_DTYPE_FLOAT32, {count});
                auto v = [](int32_t r, size_t i) {
                    return static_cast<double>((i * 7 + r * 3) % 1001);
                };
                for (size_t i = 0; i < x.count; ++i)
                    store(HVD_DTYPE_FLOAT32, x.data, i, v(me.rank, i));
                Params p("big.apart");
                hvd_tensor_t in = x.tensor(), o = out.tensor();
                hvd_request_h req;
                if (hvd_allreduce_enqueue(me.ctx, &in, &o, &p, &req) != HVD_OK)
                    return enqueue_failed("big.apart");
                std::string err = finish(req, "staged allreduce out of place");
                auto sum = [&](size_t i) {
                    double s = 0;
                    for (int32_t r = 0; r < me.size; ++r)
                        s += v(r, i);
                    return s;
                };
                if (err.empty())
                    err = compare("staged out of place", HVD_DTYPE_FLOAT32, out.data, x.count, sum);
                if (err.empty())
                    err = compare("staged input kept", HVD_DTYPE_FLOAT32, x.data, x.count,
                                  [&](size_t i) { return v(me.rank, i); });
                if (!err.empty()) return err;
                p.rename("big.inplace");
                if (hvd_allreduce_enqueue(me.ctx, &in, &in, &p, &req) != HVD_OK)
                    return enqueue_failed("big.inplace");
                err = finish(req, "staged allreduce in place");
                if (err.empty())
                    err = compare("staged in place", HVD_DTYPE_FLOAT32, x.data, x.count, sum);
                if (!err.empty()) return err;
                Params pb("big.bcast");
                pb.field_mask |= HVD_OP_FIELD_ROOT;
                pb.root_rank = me.size - 1;
                for (size_t i = 0; i < out.count; ++i)
                    store(HVD_DTYPE_FLOAT32, out.data, i, v(me.rank, i));
                if (hvd_broadcast_enqueue(me.ctx, &o, &o, &pb, &req) != HVD_OK)
                    return enqueue_failed("big.bcast");
                err = finish(req, "staged broadcast");
                if (err.empty())
                    err = compare("staged broadcast", HVD_DTYPE_FLOAT32, out.data, out.count,
                                  [&](size_t i) { return v(me.size - 1, i); });
                if (!err.empty()) return err;
                err = allgathers(me);
                if (err.empty()) err = grouped_allgather(me);  // a fused run of two row sizes
                // 6 MiB per rank: 18 or 36 MiB in all, 4 or 5 chunks
                if (err.empty()) err = allgathers_into(me, 6);
                if (err.empty()) err = reducescatters(me);  // one chunk each
                if (err.empty()) err = chunked_reducescatters(me);
                if (err.empty()) err = alltoalls(me);  // one chunk
                return err.empty() ? chunked_alltoall(me) : err;
            });
    });
}

// Four ranks on one device: the staged reduce-scatters and alltoalls, of one chunk and of
// several (the last rank keeps only its own rows of the chunked alltoall).
void test_shared_device_four_ranks(void **) {
    expect_nccl(Nccl::kUnused, [] {
        run_job(4, shared_device, [](Rank &me) {
            for (auto step :
                 {reducescatters, chunked_reducescatters, alltoalls, chunked_alltoall}) {
                std::string err = step(me);
                if (!err.empty()) return err;
            }
            return std::string();
        });
    });
}

// A job of one rank runs every op on its device: NCCL, or on the host path (NCCL's missing
// dtypes; everything with HVD_GPU_OPERATIONS=host) copies or scales there, no data through
// host memory.
void test_one_rank_stays_on_device(void **) {
    const uint64_t before = g_pinned_allocs();
    run_job(1, own_device, [](Rank &me) {
        std::vector<int32_t> dtypes(std::begin(kNcclDtypes), std::end(kNcclDtypes));
        dtypes.push_back(HVD_DTYPE_INT16);
        dtypes.push_back(HVD_DTYPE_UINT16);
        std::string err = allreduce_everything(me, dtypes);
        for (auto step : {allgathers, broadcasts, alltoalls, reducescatters})
            if (err.empty()) err = step(me);
        return err;
    });
    const uint64_t pinned = g_pinned_allocs() - before;
    if (pinned != 0)
        fail_msg("%llu pinned buffers: data went through host memory",
                 static_cast<unsigned long long>(pinned));
}

// ------------------------------------------------------------------ failures

// An allreduce of 1000 floats; its status and message, waited for at most 60 s.
hvd_status_t allreduce_status(Rank &me, const std::string &name, hvd_op_params_t *p,
                              std::string *message) {
    DeviceArray x(me.device, HVD_DTYPE_FLOAT32, {1000});
    hvd_tensor_t t = x.tensor();
    hvd_request_h req;
    if (hvd_allreduce_enqueue(me.ctx, &t, &t, p, &req) != HVD_OK) {
        *message = enqueue_failed(name);
        return hvd_context_error(me.ctx);
    }
    const hvd_status_t s = hvd_request_wait(req, 60000);
    char msg[512];
    hvd_request_message(req, msg, sizeof msg);
    *message = msg;
    hvd_request_release(req);
    return s;
}

// An asynchronous NCCL error fails the op on every rank with HVD_ERR_DEVICE and NCCL's
// message (or with the failure of the rank that saw it first), within seconds, and the
// context stays failed; nothing hangs.
void test_nccl_error(void **) {
    const char *ops = std::getenv("HVD_GPU_OPERATIONS");
    if (ops != nullptr && std::strcmp(ops, "host") == 0) skip();  // no NCCL to fail
    for (int32_t n = 2; n <= 3; ++n) {
        g_fail_rounds(1, "unhandled cuda error (run with NCCL_DEBUG=INFO for details)");
        expect_nccl(Nccl::kUsed, [n] {
            run_job(n, own_device, [](Rank &me) {
                Params p("fails");
                std::string message;
                const auto start = std::chrono::steady_clock::now();
                hvd_status_t s = allreduce_status(me, "fails", &p, &message);
                const double took =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                if (s == HVD_OK || s == HVD_INPROGRESS)
                    return "the op did not fail: " + std::string(hvd_status_name(s));
                if (took > 15) return "the failure took " + std::to_string(took) + " s";
                const bool own = s == HVD_ERR_DEVICE &&
                                 message.find("unhandled cuda error") != std::string::npos;
                const bool peer = message.find("rank") != std::string::npos;
                if (!own && !peer)
                    return "the failure does not say what failed: " +
                           std::string(hvd_status_name(s)) + ": " + message;
                Params again("after");
                s = allreduce_status(me, "after", &again, &message);
                if (s == HVD_OK) return std::string("the context went on after the failure");
                return std::string();
            });
        });
    }
}

// A rank whose device never reaches an NCCL call (its stream held by the caller's work)
// leaves its peer inside NCCL: the op timeout fails the peer's op, the communicators are
// aborted and every rank's context fails within the timeout and seconds; nothing hangs.
void test_stalled_peer(void **) {
    expect_nccl(Nccl::kStarted, [] {
        run_job(2, own_device, [](Rank &me) {
            CallerStream s(me.device);
            static int open = 0;
            __atomic_store_n(&open, 0, __ATOMIC_RELEASE);
            Params p("stalls");
            p.field_mask |= HVD_OP_FIELD_TIMEOUT;
            p.timeout_ms = 2000;
            if (me.rank == 1) {  // ordered after work on its stream that does not end
                g_gate(me.device, s.stream, &open);
                p.field_mask |= HVD_OP_FIELD_STREAM;
                p.stream = s.stream;
            }
            std::string message;
            const auto start = std::chrono::steady_clock::now();
            hvd_status_t st = allreduce_status(me, "stalls", &p, &message);
            std::string err;
            if (me.rank == 0 && st == HVD_OK) err = "rank 0's op did not fail";
            // Rank 1's op completed once queued; its context fails once the watch sees the
            // deadline pass or the peer's failure.
            for (int i = 0; i < 300 && err.empty() && hvd_context_error(me.ctx) == HVD_OK; ++i)
                usleep(100000);
            const double took =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (err.empty() && hvd_context_error(me.ctx) == HVD_OK)
                err = "the context did not fail";
            if (err.empty() && took > 20) err = "the failure took " + std::to_string(took) + " s";
            __atomic_store_n(&open, 1, __ATOMIC_RELEASE);
            return err;
        });
    });
}

}  // namespace

int main() {
    if (!fake_device_job::load_fake_device(HVD_FAKE_GPU_DEVICE)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_every_dtype_and_op),
        cmocka_unit_test(test_dtypes_nccl_lacks),
        cmocka_unit_test(test_fused_and_grouped),
        cmocka_unit_test(test_data_movement),
        cmocka_unit_test(test_process_set),
        cmocka_unit_test(test_caller_stream),
        cmocka_unit_test(test_graph_capture_refused),
        cmocka_unit_test(test_misaligned_refused),
        cmocka_unit_test(test_allgather_calls),
        cmocka_unit_test(test_shared_device_host_path),
        cmocka_unit_test(test_shared_device_four_ranks),
        cmocka_unit_test(test_one_rank_stays_on_device),
        cmocka_unit_test(test_nccl_error),
        cmocka_unit_test(test_stalled_peer),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
