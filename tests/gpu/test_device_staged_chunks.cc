// SPDX-License-Identifier: Apache-2.0
// engine::DeviceStagedChunks, the CUDA side of the pipelined host-staged collectives, on a
// scripted device: the table below keeps each stream's work in order (copies, event records,
// waits on events) and runs it only when the host asks about an event, the device's stream as
// early as its waits allow and the back stream as late as possible. That is the schedule that
// exposes a slot refilled before its chunk was copied back, a copy back that the stream's
// later work does not wait for, or a chunk copied from the wrong place: each shows as a wrong
// element of the outputs, whose values never repeat at a chunk's distance. "Device memory" is
// host memory here; the GPU checks (scripts/gpu_check.sh) run the same code on a GPU.
#include <cmocka.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "assert_contains.h"
#include "engine/device_staged_chunks.h"
#include "engine/staged_allreduce.h"
#include "rank_threads.h"

namespace {

using hvd::engine::DeviceSpan;
using hvd::engine::DeviceStagedChunks;

struct Work {
    enum Kind { kCopy, kRecord, kWait } kind;
    void *dst = nullptr;
    const void *src = nullptr;
    size_t bytes = 0;
    void *event = nullptr;
    uint64_t generation = 0;  // kRecord: which record of the event; kWait: the one awaited
};

struct Script {
    std::map<void *, std::deque<Work>> streams;
    std::map<void *, uint64_t> recorded, completed;  // per event
    void *eager = nullptr;                           // the stream run as early as it can
    size_t queries = 0, failing_query = SIZE_MAX;    // that query (from 0) fails
    size_t back_copies = 0, eager_copies = 0;        // copies run off and on that stream
    std::string problems;
    char handles[256];  // streams and events: addresses inside it
    int made = 0;
};
Script g;

void set_err(hvd_gpu_err_t *err, const char *text) {
    std::strncpy(err->text, text, sizeof err->text - 1);
    err->text[sizeof err->text - 1] = '\0';
}

// Runs the work at the head of `stream` if its wait (if any) is over; whether it ran.
bool step(void *stream) {
    std::deque<Work> &q = g.streams[stream];
    if (q.empty()) return false;
    const Work w = q.front();
    if (w.kind == Work::kWait && g.completed[w.event] < w.generation) return false;
    q.pop_front();
    if (w.kind == Work::kCopy) {
        std::memcpy(w.dst, w.src, w.bytes);
        ++(stream != g.eager ? g.back_copies : g.eager_copies);
    }
    if (w.kind == Work::kRecord) g.completed[w.event] = w.generation;
    return true;
}

// The device's schedule until `event` completes: the eager stream as far as it can go,
// another stream's work one item at a time only when the eager stream is stuck. False when
// nothing can run.
bool advance(void *event) {
    for (;;) {
        while (step(g.eager)) {
        }
        if (g.completed[event] >= g.recorded[event]) return true;
        bool stepped = false;
        for (auto &entry : g.streams)
            if (entry.first != g.eager && step(entry.first)) {
                stepped = true;
                break;
            }
        if (!stepped) return false;
    }
}

int fake_stream_create(int32_t, void **stream, hvd_gpu_err_t *) {
    *stream = &g.handles[g.made++];
    g.streams[*stream];
    return 0;
}
int fake_event_create(int32_t, void **event, hvd_gpu_err_t *) {
    *event = &g.handles[g.made++];
    g.recorded[*event] = g.completed[*event] = 0;
    return 0;
}
int fake_destroy(int32_t, void *, hvd_gpu_err_t *) {
    return 0;
}
int fake_event_record(int32_t, void *event, void *stream, hvd_gpu_err_t *) {
    Work w{Work::kRecord};
    w.event = event;
    w.generation = ++g.recorded[event];
    g.streams.at(stream).push_back(w);
    return 0;
}
int fake_stream_wait_event(int32_t, void *stream, void *event, hvd_gpu_err_t *) {
    Work w{Work::kWait};
    w.event = event;
    w.generation = g.recorded.at(event);  // the record made before the call, as CUDA captures
    g.streams.at(stream).push_back(w);
    return 0;
}
int fake_copy_async(int32_t, void *dst, const void *src, size_t bytes, void *stream,
                    hvd_gpu_err_t *) {
    Work w{Work::kCopy};
    w.dst = dst;
    w.src = src;
    w.bytes = bytes;
    g.streams.at(stream).push_back(w);
    return 0;
}
int fake_event_query(int32_t, void *event, int32_t *done, hvd_gpu_err_t *err) {
    if (g.queries++ == g.failing_query) {
        set_err(err, "cudaEventQuery: an illegal memory access was encountered");
        return 1;
    }
    if (!advance(event)) {
        g.problems += "the device's work waits forever; ";
        set_err(err, "scripted device: deadlock");
        return 1;
    }
    *done = 1;
    return 0;
}
int fake_host_alloc(int32_t, size_t bytes, void **ptr, hvd_gpu_err_t *) {
    *ptr = std::malloc(bytes);
    return 0;
}
int fake_host_free(int32_t, void *ptr, hvd_gpu_err_t *) {
    std::free(ptr);
    return 0;
}

hvd_gpu_module_t make_table() {
    hvd_gpu_module_t t;
    std::memset(&t, 0, sizeof t);
    t.stream_create = fake_stream_create;
    t.stream_destroy = fake_destroy;
    t.event_create = fake_event_create;
    t.event_destroy = fake_destroy;
    t.event_record = fake_event_record;
    t.stream_wait_event = fake_stream_wait_event;
    t.event_query = fake_event_query;
    t.copy_async = fake_copy_async;
    t.host_alloc = fake_host_alloc;
    t.host_free = fake_host_free;
    return t;
}
hvd_gpu_module_t g_table = make_table();

int reset(void **) {
    g.streams.clear();
    g.recorded.clear();
    g.completed.clear();
    g.queries = 0;
    g.failing_query = SIZE_MAX;
    g.back_copies = g.eager_copies = 0;
    g.problems.clear();
    g.made = 0;
    return 0;
}

// Element i of tensor t on a rank: no two chunks of any size hold the same sequence.
int32_t value(size_t t, size_t i) {
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull + t * 0xBF58476D1CE4E5B9ull;
    return static_cast<int32_t>((h >> 40) % 20001) - 10000;
}

struct Run {
    hvd_status_t status = HVD_OK;
    std::string message;
};

// Stages tensors of `elems` int32 elements (in place, or into outputs of their own) on one
// rank in chunks of `chunk_elems`, through `collective` (null: an allreduce doubled by its
// postscale) with `directions`; runs the device up to a marker recorded after the chunks'
// join. fail_chunk: the chunk whose arrival fails.
Run stage(const std::vector<size_t> &elems, const std::vector<bool> &in_place, size_t chunk_elems,
          std::vector<std::vector<int32_t>> *outs, size_t fail_chunk = SIZE_MAX,
          hvd::engine::StagingDirections directions = {},
          const hvd::engine::ChunkCollective &collective = nullptr) {
    hvd::gpu::GpuLibrary lib;
    lib.api = &g_table;
    lib.info.device_count = 1;
    hvd::gpu::DeviceState dev;
    fake_stream_create(0, &dev.stream, nullptr);
    fake_event_create(0, &dev.done, nullptr);
    g.eager = dev.stream;
    std::vector<std::vector<int32_t>> ins(elems.size());
    outs->assign(elems.size(), {});
    std::vector<DeviceSpan> spans;
    size_t bytes = 0;
    for (size_t t = 0; t < elems.size(); ++t) {
        for (size_t i = 0; i < elems[t]; ++i)
            ins[t].push_back(value(t, i));
        (*outs)[t].assign(elems[t], -1);
        void *out = in_place[t] ? ins[t].data() : (*outs)[t].data();
        spans.push_back({bytes, elems[t] * 4, ins[t].data(), out});
        bytes += elems[t] * 4;
    }
    const size_t chunk_bytes = chunk_elems * 4;
    // The scripted device answers each chunk's arrival in one query: query k is chunk k's.
    g.failing_query = fail_chunk;
    rank_threads::World w(1);
    Run r;
    rank_threads::run_ranks(w, 1, [&](int32_t, size_t, rank_threads::Comm &comm) {
        const char *what = collective ? "broadcast 'weights' on CUDA device 0 through host memory"
                                      : "allreduce 'grads' on CUDA device 0 through host memory";
        DeviceStagedChunks staged(&lib, dev, comm, 0, spans, bytes, chunk_bytes, what, directions);
        if (collective)
            r.status = hvd::engine::run_staged_chunks(comm, bytes, chunk_bytes, what, &staged,
                                                      collective, &r.message);
        else
            r.status =
                hvd::engine::allreduce_staged(comm, bytes, chunk_bytes, HVD_DTYPE_INT32, HVD_OP_SUM,
                                              1.0, 2.0, "allreduce 'grads'", &staged, &r.message);
        if (r.status == HVD_OK) staged.join();
        return HVD_OK;
    });
    if (r.status != HVD_OK) {  // what a failed run's settling does: drain the device's stream
        g.failing_query = SIZE_MAX;
        if (!hvd::gpu::wait_stream_done(lib, dev, hvd::Deadline::after_ms(5000), 0, "drain"))
            g.problems += "the drain failed; ";
    } else {
        void *marker = nullptr;
        fake_event_create(0, &marker, nullptr);
        fake_event_record(0, marker, dev.stream, nullptr);
        if (!advance(marker)) g.problems += "the marker never ran; ";
    }
    for (size_t t = 0; t < elems.size(); ++t)
        if (in_place[t]) (*outs)[t] = ins[t];
    return r;
}

void check_doubled(const std::vector<std::vector<int32_t>> &outs) {
    if (!g.problems.empty()) fail_msg("%s", g.problems.c_str());
    for (size_t t = 0; t < outs.size(); ++t)
        for (size_t i = 0; i < outs[t].size(); ++i)
            if (outs[t][i] != 2 * value(t, i))
                fail_msg("tensor %zu element %zu is %d, want %d", t, i, outs[t][i],
                         2 * value(t, i));
}

// Nine chunks through four slots: every slot refilled, the last chunk short.
void test_one_tensor_through_reused_slots(void **) {
    std::vector<std::vector<int32_t>> outs;
    Run r = stage({16 * 8 + 5}, {true}, 16, &outs);
    assert_int_equal(r.status, HVD_OK);
    check_doubled(outs);
    assert_true(g.back_copies >= 9);  // copies back ran on the back stream
}

// A fused run: empty tensors, tensors inside one chunk and across several, in place and not.
void test_fused_run_across_chunks(void **) {
    std::vector<std::vector<int32_t>> outs;
    Run r =
        stage({0, 25, 9, 0, 65, 1, 40}, {true, false, true, false, false, true, false}, 16, &outs);
    assert_int_equal(r.status, HVD_OK);
    check_doubled(outs);
}

// Fewer chunks than slots, and a run of one chunk (its copies back on the device's stream).
void test_few_chunks_and_one(void **) {
    std::vector<std::vector<int32_t>> outs;
    Run r = stage({40}, {false}, 16, &outs);
    assert_int_equal(r.status, HVD_OK);
    check_doubled(outs);
    reset(nullptr);
    r = stage({13, 7}, {true, false}, 64, &outs);
    assert_int_equal(r.status, HVD_OK);
    check_doubled(outs);
    assert_int_equal(g.back_copies, 0);
}

// A chunk whose arrival fails: the run fails naming the op and the chunk; the chunks before
// it were copied back, and draining the device's stream waits for those copies too.
void test_failed_arrival(void **) {
    std::vector<std::vector<int32_t>> outs;
    Run r = stage({16 * 7}, {false}, 16, &outs, 5);
    assert_int_equal(r.status, HVD_ERR_DEVICE);
    assert_contains(r.message, "rank 0: allreduce 'grads' on CUDA device 0");
    assert_contains(r.message, "illegal memory access");
    assert_contains(r.message, "chunk 6 of 7");
    if (!g.problems.empty()) fail_msg("%s", g.problems.c_str());
    for (size_t i = 0; i < 16 * 7; ++i) {
        const int32_t want = i < 16 * 5 ? 2 * value(0, i) : -1;
        if (outs[0][i] != want) fail_msg("element %zu is %d, want %d", i, outs[0][i], want);
    }
}

// A broadcast's receiver: nothing goes to the host, and what the CPU broadcast writes into
// each slot reaches the output. Its root, in place: nothing comes back.
void test_one_way_chunks(void **) {
    std::vector<std::vector<int32_t>> outs;
    auto receive = [](char *at, const hvd::engine::StagedChunk &c) {
        for (size_t j = 0; j < c.bytes / 4; ++j)
            reinterpret_cast<int32_t *>(at)[j] = 2 * value(0, c.offset / 4 + j);
        return HVD_OK;
    };
    hvd::engine::StagingDirections receiver;
    receiver.to_host = false;
    Run r = stage({16 * 9 + 3}, {false}, 16, &outs, SIZE_MAX, receiver, receive);
    assert_int_equal(r.status, HVD_OK);
    check_doubled(outs);
    assert_int_equal(g.eager_copies, 0);
    assert_int_equal(g.back_copies, 10);
    reset(nullptr);
    hvd::engine::StagingDirections root;
    root.to_device = false;
    r = stage({16 * 9 + 3}, {true}, 16, &outs, SIZE_MAX, root,
              [](char *, const hvd::engine::StagedChunk &) { return HVD_OK; });
    assert_int_equal(r.status, HVD_OK);
    assert_int_equal(g.eager_copies, 10);
    assert_int_equal(g.back_copies, 0);
    for (size_t i = 0; i < outs[0].size(); ++i)
        if (outs[0][i] != value(0, i)) fail_msg("the root's element %zu changed", i);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_one_tensor_through_reused_slots, reset),
        cmocka_unit_test_setup(test_fused_run_across_chunks, reset),
        cmocka_unit_test_setup(test_few_chunks_and_one, reset),
        cmocka_unit_test_setup(test_failed_arrival, reset),
        cmocka_unit_test_setup(test_one_way_chunks, reset),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
