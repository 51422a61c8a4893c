// SPDX-License-Identifier: Apache-2.0
// A GPU module (gpu_module_api.h) for tests: devices whose memory is host memory and whose
// streams are threads, and an NCCL among the ranks of one process (tests/gpu/test_nccl_ranks.cc
// runs a job's ranks as threads). It keeps CUDA's and NCCL's ordering rules, not their speed:
// each stream runs its work in order on a thread of its own, asynchronously to the host (a
// copy, a kernel, an event record, a wait on an event as recorded when the wait was queued, a
// stream-ordered free); a collective runs on the stream it was queued on once every rank of its
// communicator has reached it there, so a stream that does not wait for what it should reads
// or frees too early. The multi-rank logic of the library's NCCL path (fusion, scaling,
// ragged allgathers, alltoall, uneven reduce-scatters, process sets) and its host-staged
// pipeline run against it where no GPU is; scripts/gpu_check.sh runs them on a real one.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dtype_elements.h"
#include "gpu/gpu_module_api.h"
#include "hvd/hvd.h"
#include "reduce/integer_divisor.h"

namespace {

constexpr int32_t kDevices = 4;
constexpr auto kCollectiveWait = std::chrono::seconds(60);

int fail(hvd_gpu_err_t *err, const std::string &text) {
    if (err != nullptr) std::snprintf(err->text, HVD_GPU_ERR_LEN, "%s", text.c_str());
    return 1;
}

// ------------------------------------------------------------------ streams and events

// An event's records and completions, shared with the stream work that refers to it: as with
// CUDA, an event may be destroyed while work queued on it is pending.
struct EventState {
    std::atomic<uint64_t> recorded{0}, completed{0};
};
using Event = std::shared_ptr<EventState>;

class Stream {
  public:
    explicit Stream(int32_t device) : device_(device), worker_([this] { run(); }) {}
    ~Stream() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        worker_.join();
    }
    void queue(std::function<void()> work) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            work_.push_back(std::move(work));
            ++queued_;
        }
        cv_.notify_all();
    }
    bool idle() {
        std::lock_guard<std::mutex> lock(mu_);
        return done_ == queued_;
    }
    int32_t device() const { return device_; }

  private:
    void run() {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            cv_.wait(lock, [&] { return stop_ || !work_.empty(); });
            if (work_.empty()) return;  // stopped, and its work is done
            std::function<void()> w = std::move(work_.front());
            work_.pop_front();
            lock.unlock();
            w();
            lock.lock();
            ++done_;
        }
    }

    int32_t device_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> work_;
    uint64_t queued_ = 0, done_ = 0;
    bool stop_ = false;
    std::thread worker_;
};

struct Devices {
    std::mutex mu;
    std::set<Stream *> streams;
    Stream *defaults[kDevices] = {};
    struct Block {
        size_t bytes;
        int32_t device;
        bool freed;  // kept a while after its free (poisoned), to catch a use after it
    };
    std::map<uintptr_t, Block> memory;  // by start
    std::deque<uintptr_t> quarantine;   // freed blocks, oldest first
    size_t quarantined = 0;             // their bytes
    std::vector<std::string> misuses;   // device work on freed memory
};
Devices &devices() {
    static Devices *d = new Devices();  // streams outlive static destruction order
    return *d;
}

void touch(const void *p, size_t bytes, const char *what);

Stream *stream_of(int32_t device, void *stream) {
    if (stream != nullptr) return static_cast<Stream *>(stream);
    Devices &d = devices();
    std::lock_guard<std::mutex> lock(d.mu);
    if (d.defaults[device] == nullptr) {
        d.defaults[device] = new Stream(device);
        d.streams.insert(d.defaults[device]);
    }
    return d.defaults[device];
}

bool valid_device(int32_t device) {
    return device >= 0 && device < kDevices;
}

// Waits until every stream of `device` ran what was queued on it (bounded).
bool device_idle(int32_t device) {
    const auto until = std::chrono::steady_clock::now() + kCollectiveWait;
    for (;;) {
        bool idle = true;
        {
            Devices &d = devices();
            std::lock_guard<std::mutex> lock(d.mu);
            for (Stream *s : d.streams)
                if (s->device() == device && !s->idle()) idle = false;
        }
        if (idle) return true;
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

// ------------------------------------------------------------------ element arithmetic

using dtype_elements::load;
using dtype_elements::store;
using hvd::dtype_size;

// dst[i] = src[i] * factor for `count` elements (a plain copy where factor is 1), with the
// module's rules: integers divided by n where factor is exactly 1/n.
void scale_into(void *dst, const void *src, size_t count, int32_t dtype, double factor) {
    if (factor == 1.0) {
        std::memmove(dst, src, count * dtype_size(dtype));
        return;
    }
    const bool in_float =
        dtype == HVD_DTYPE_FLOAT32 || dtype == HVD_DTYPE_FLOAT16 || dtype == HVD_DTYPE_BFLOAT16;
    // Integers: divided by n where the factor is exactly 1/n, as the module's kernels do.
    const double divisor = in_float || dtype == HVD_DTYPE_FLOAT64 || dtype == HVD_DTYPE_BOOL
                               ? 0.0
                               : hvd::reduce::integer_divisor(factor);
    for (size_t i = 0; i < count; ++i) {
        const double x = load(dtype, src, i);
        if (in_float)
            store(dtype, dst, i, static_cast<float>(x) * static_cast<float>(factor));
        else
            store(dtype, dst, i, divisor != 0.0 ? x / divisor : x * factor);
    }
}

bool reduces(int32_t dtype, int32_t op) {
    const bool type =
        dtype != HVD_DTYPE_INT16 && dtype != HVD_DTYPE_UINT16 && dtype != HVD_DTYPE_BOOL;
    return type &&
           (op == HVD_OP_SUM || op == HVD_OP_MIN || op == HVD_OP_MAX || op == HVD_OP_PRODUCT);
}

double combine(int32_t op, double a, double b) {
    switch (op) {
        case HVD_OP_MIN:
            return a < b ? a : b;
        case HVD_OP_MAX:
            return a > b ? a : b;
        case HVD_OP_PRODUCT:
            return a * b;
        default:
            return a + b;
    }
}

// ------------------------------------------------------------------ NCCL among threads

enum class Kind { kAllreduce, kReduce, kReducescatter, kBroadcast, kAllgather, kSend, kRecv };
constexpr int kKinds = static_cast<int>(Kind::kRecv) + 1;

struct Op {
    Kind kind;
    const void *send = nullptr;
    void *recv = nullptr;
    size_t count = 0;  // elements (reductions) or bytes (data movement)
    int32_t dtype = HVD_DTYPE_UINT8, op = HVD_OP_SUM, root = 0, peer = 0;
};

struct Round {
    std::vector<std::vector<Op>> ops;  // per rank
    int arrived = 0;                   // ranks in it now
    bool done = false;
    bool abandoned = false;  // a rank left it undone (aborted): it never runs now
};

struct Group {
    int32_t nranks = 0;
    std::mutex mu;
    std::condition_variable cv;
    std::map<uint64_t, Round> rounds;
    std::string error;  // the first failure: every rank's communicator reports it
};

struct Comm {
    std::shared_ptr<Group> group;
    int32_t rank = 0, device = 0;
    uint64_t next_round = 0;
    bool aborted = false;  // under group->mu
};

std::atomic<uint64_t> rounds_run{0};          // for the test: whether the NCCL path ran
std::atomic<uint64_t> calls_of_kind[kKinds];  // for the test: NCCL calls made so far, by Kind
std::mutex failing_mu;
int failing_rounds = 0;  // the next rounds to fail (fake_gpu_device_fail_rounds), and how
std::string failing_message;
std::mutex groups_mu;
std::map<std::string, std::shared_ptr<Group>> groups;  // by unique id
std::atomic<uint64_t> next_id{1};

// The NCCL calls of this thread between group start and end, per communicator.
thread_local int group_depth = 0;
thread_local std::vector<std::pair<Comm *, std::pair<Stream *, Op>>> grouped;

std::string check_round(const Round &r) {
    size_t n = SIZE_MAX;
    for (const std::vector<Op> &ops : r.ops) {
        size_t collectives = 0;
        for (const Op &o : ops)
            collectives += o.kind != Kind::kSend && o.kind != Kind::kRecv;
        if (n != SIZE_MAX && collectives != n) return "ranks queued different collectives";
        n = collectives;
    }
    return "";
}

// Runs a round whose ranks have all arrived; "" or what was wrong.
std::string execute(Round &r) {
    const size_t nranks = r.ops.size();
    std::string bad = check_round(r);
    if (!bad.empty()) return bad;
    std::vector<std::vector<const Op *>> coll(nranks);
    for (size_t q = 0; q < nranks; ++q)
        for (const Op &o : r.ops[q])
            if (o.kind != Kind::kSend && o.kind != Kind::kRecv) coll[q].push_back(&o);
    for (size_t k = 0; k < coll[0].size(); ++k) {
        const Op &a = *coll[0][k];
        for (size_t q = 1; q < nranks; ++q) {
            const Op &b = *coll[q][k];
            if (b.kind != a.kind || b.count != a.count || b.dtype != a.dtype || b.op != a.op ||
                b.root != a.root)
                return "rank " + std::to_string(q) + "'s collective " + std::to_string(k) +
                       " differs from rank 0's";
        }
        const size_t esz = dtype_size(a.dtype);
        switch (a.kind) {
            case Kind::kAllreduce:
            case Kind::kReduce:
            case Kind::kReducescatter: {
                const size_t total = a.kind == Kind::kReducescatter ? a.count * nranks : a.count;
                std::vector<char> sum(total * esz);
                std::memcpy(sum.data(), coll[0][k]->send, total * esz);
                for (size_t q = 1; q < nranks; ++q)
                    for (size_t i = 0; i < total; ++i)
                        store(a.dtype, sum.data(), i,
                              combine(a.op, load(a.dtype, sum.data(), i),
                                      load(a.dtype, coll[q][k]->send, i)));
                for (size_t q = 0; q < nranks; ++q) {
                    if (a.kind == Kind::kReduce && static_cast<int32_t>(q) != a.root) continue;
                    const size_t off = a.kind == Kind::kReducescatter ? q * a.count * esz : 0;
                    std::memcpy(coll[q][k]->recv, sum.data() + off, a.count * esz);
                }
                break;
            }
            case Kind::kBroadcast: {
                std::vector<char> data(static_cast<const char *>(coll[a.root][k]->send),
                                       static_cast<const char *>(coll[a.root][k]->send) + a.count);
                for (size_t q = 0; q < nranks; ++q)
                    std::memcpy(coll[q][k]->recv, data.data(), a.count);
                break;
            }
            case Kind::kAllgather: {
                std::vector<char> all(a.count * nranks);
                for (size_t q = 0; q < nranks; ++q)
                    std::memcpy(all.data() + q * a.count, coll[q][k]->send, a.count);
                for (size_t q = 0; q < nranks; ++q)
                    std::memcpy(coll[q][k]->recv, all.data(), all.size());
                break;
            }
            default:
                break;
        }
    }
    // Point to point: the i-th receive of q from p takes p's i-th send to q.
    for (size_t q = 0; q < nranks; ++q) {
        std::map<int32_t, size_t> taken;
        for (const Op &rv : r.ops[q]) {
            if (rv.kind != Kind::kRecv) continue;
            const size_t p = static_cast<size_t>(rv.peer);
            size_t seen = 0;
            const Op *match = nullptr;
            for (const Op &s : r.ops[p])
                if (s.kind == Kind::kSend && s.peer == static_cast<int32_t>(q) &&
                    seen++ == taken[rv.peer]) {
                    match = &s;
                    break;
                }
            if (match == nullptr || match->count != rv.count)
                return "rank " + std::to_string(q) + " receives from rank " + std::to_string(p) +
                       " what it does not send";
            ++taken[rv.peer];
            std::memcpy(rv.recv, match->send, rv.count);
        }
    }
    return "";
}

// Reports (touch) a round's buffers that are not live device memory.
void touch_round(const Round &r, int32_t nranks) {
    const size_t n = static_cast<size_t>(nranks);
    for (const std::vector<Op> &rank_ops : r.ops)
        for (const Op &o : rank_ops) {
            const bool bytes_count = o.kind == Kind::kSend || o.kind == Kind::kRecv ||
                                     o.kind == Kind::kBroadcast || o.kind == Kind::kAllgather;
            const size_t bytes = bytes_count ? o.count : o.count * dtype_size(o.dtype);
            touch(o.send, o.kind == Kind::kReducescatter ? bytes * n : bytes,
                  "an NCCL call's input");
            touch(o.recv, o.kind == Kind::kAllgather ? bytes * n : bytes, "an NCCL call's output");
        }
}

// The stream work of one rank's round: waits for every rank, the last one runs it. As real
// NCCL: a collective of an aborted communicator moves nothing and ends; a failing one (an
// asynchronous error) holds its streams, as a kernel whose peer data never comes would, until
// each rank aborts its own communicator; a round a rank left undone never runs.
void take_part(Comm *c, uint64_t seq, std::vector<Op> ops) {
    Group &g = *c->group;
    std::unique_lock<std::mutex> lock(g.mu);
    if (c->aborted) return;
    Round &r = g.rounds[seq];
    if (r.ops.empty()) r.ops.resize(static_cast<size_t>(g.nranks));
    r.ops[static_cast<size_t>(c->rank)] = std::move(ops);
    if (++r.arrived == g.nranks && !r.abandoned) {
        touch_round(r, g.nranks);
        std::string bad;
        {
            std::lock_guard<std::mutex> failing(failing_mu);
            if (failing_rounds > 0) {
                --failing_rounds;
                bad = failing_message;
            }
        }
        ++rounds_run;
        if (!bad.empty()) {
            if (g.error.empty()) g.error = "fake NCCL: " + bad;
        } else {
            bad = execute(r);
            if (!bad.empty() && g.error.empty()) g.error = "fake NCCL: " + bad;
            r.done = true;
            g.cv.notify_all();
        }
    }
    if (!g.cv.wait_for(lock, kCollectiveWait, [&] { return r.done || c->aborted; }) &&
        g.error.empty())
        g.error = "fake NCCL: a rank did not reach a collective in time";
    if (!r.done) r.abandoned = true;  // its buffers may go now
    if (--r.arrived == 0) g.rounds.erase(seq);
}

void queue_round(Comm *c, Stream *s, std::vector<Op> ops) {
    const uint64_t seq = c->next_round++;
    s->queue([c, seq, ops = std::move(ops)]() mutable { take_part(c, seq, std::move(ops)); });
}

int nccl_call(void *comm, void *stream, const Op &op, hvd_gpu_err_t *err) {
    Comm *c = static_cast<Comm *>(comm);
    if (c == nullptr) return fail(err, "fake NCCL: no communicator");
    ++calls_of_kind[static_cast<int>(op.kind)];
    Stream *s = stream_of(c->device, stream);
    if (group_depth > 0)
        grouped.push_back({c, {s, op}});
    else
        queue_round(c, s, {op});
    return 0;
}

// ------------------------------------------------------------------ the table

int f_open(const char *, hvd_gpu_info_t *info, hvd_gpu_err_t *) {
    std::memset(info, 0, sizeof *info);
    info->device_count = kDevices;
    info->runtime_version = 13000;
    info->driver_version = 13000;
    info->nccl_version = 22800;
    std::snprintf(info->nccl_path, sizeof info->nccl_path, "fake NCCL among threads");
    return 0;
}
int f_device_uuid(int32_t device, uint8_t uuid[16], hvd_gpu_err_t *err) {
    if (!valid_device(device)) return fail(err, "no device " + std::to_string(device));
    // Each process's devices are devices of their own (as GPUs of different hosts would be).
    std::memset(uuid, 0, 16);
    uuid[0] = static_cast<uint8_t>(0xf0 + device);
    const uint32_t pid = static_cast<uint32_t>(getpid());
    std::memcpy(uuid + 4, &pid, sizeof pid);
    return 0;
}
int f_pointer_device(int32_t, const void *ptr, int32_t *is_device, int32_t *device,
                     hvd_gpu_err_t *) {
    Devices &d = devices();
    std::lock_guard<std::mutex> lock(d.mu);
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    auto it = d.memory.upper_bound(p);
    *is_device = 0;
    *device = -2;
    if (it == d.memory.begin()) return 0;
    --it;
    if (p < it->first + it->second.bytes && !it->second.freed) {
        *is_device = 1;
        *device = it->second.device;
    }
    return 0;
}
int f_device_alloc(int32_t device, size_t bytes, void *, void **ptr, hvd_gpu_err_t *err) {
    if (!valid_device(device)) return fail(err, "no device " + std::to_string(device));
    const size_t n = bytes > 0 ? bytes : 1;
    void *p = std::malloc(n);
    if (p == nullptr) return fail(err, "fake cudaMallocAsync: out of memory");
    std::memset(p, 0xa5, n);  // what a fresh allocation holds is not zeros
    Devices &d = devices();
    std::lock_guard<std::mutex> lock(d.mu);
    d.memory[reinterpret_cast<uintptr_t>(p)] = {n, device, false};
    *ptr = p;
    return 0;
}
// Frees device memory: poisoned and kept (up to kQuarantineBytes of freed blocks), so that
// device work on it afterwards is reported (touch) instead of corrupting the heap.
constexpr size_t kQuarantineBytes = size_t{256} << 20;
void forget_memory(void *ptr) {
    Devices &d = devices();
    std::lock_guard<std::mutex> lock(d.mu);
    auto it = d.memory.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == d.memory.end() || it->second.freed) {
        d.misuses.push_back("a free of memory that is not allocated device memory");
        return;
    }
    std::memset(ptr, 0x5a, it->second.bytes);
    it->second.freed = true;
    d.quarantine.push_back(it->first);
    d.quarantined += it->second.bytes;
    while (d.quarantined > kQuarantineBytes) {
        auto old = d.memory.find(d.quarantine.front());
        d.quarantine.pop_front();
        d.quarantined -= old->second.bytes;
        std::free(reinterpret_cast<void *>(old->first));
        d.memory.erase(old);
    }
}

// Device work on [p, p + bytes): reported when it falls on freed device memory.
void touch(const void *p, size_t bytes, const char *what) {
    if (p == nullptr || bytes == 0) return;
    Devices &d = devices();
    std::lock_guard<std::mutex> lock(d.mu);
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = d.memory.upper_bound(a + bytes - 1);
    if (it == d.memory.begin()) return;
    --it;
    if (it->second.freed && a < it->first + it->second.bytes)
        d.misuses.push_back(std::string(what) + " on device memory already freed");
}

int f_device_free(int32_t device, void *ptr, hvd_gpu_err_t *err) {
    if (!device_idle(device)) return fail(err, "fake cudaFree: the device's work did not end");
    forget_memory(ptr);
    return 0;
}
int f_device_free_on(int32_t device, void *ptr, void *stream, hvd_gpu_err_t *) {
    stream_of(device, stream)->queue([ptr] { forget_memory(ptr); });
    return 0;
}
std::atomic<uint64_t> pinned_allocs{0};  // for the test: whether data went through the host
int f_host_alloc(int32_t, size_t bytes, void **ptr, hvd_gpu_err_t *err) {
    ++pinned_allocs;
    *ptr = std::malloc(bytes > 0 ? bytes : 1);
    return *ptr != nullptr ? 0 : fail(err, "fake cudaHostAlloc: out of memory");
}
int f_host_free(int32_t, void *ptr, hvd_gpu_err_t *) {
    std::free(ptr);
    return 0;
}
int f_stream_create(int32_t device, void **stream, hvd_gpu_err_t *err) {
    if (!valid_device(device)) return fail(err, "no device " + std::to_string(device));
    Stream *s = new Stream(device);
    Devices &d = devices();
    std::lock_guard<std::mutex> lock(d.mu);
    d.streams.insert(s);
    *stream = s;
    return 0;
}
int f_stream_destroy(int32_t, void *stream, hvd_gpu_err_t *) {
    Stream *s = static_cast<Stream *>(stream);
    {
        Devices &d = devices();
        std::lock_guard<std::mutex> lock(d.mu);
        d.streams.erase(s);
    }
    delete s;  // runs what is queued first
    return 0;
}
int f_event_create(int32_t, void **event, hvd_gpu_err_t *) {
    *event = new Event(std::make_shared<EventState>());
    return 0;
}
int f_event_destroy(int32_t, void *event, hvd_gpu_err_t *) {
    delete static_cast<Event *>(event);
    return 0;
}
int f_event_record(int32_t device, void *event, void *stream, hvd_gpu_err_t *) {
    Event e = *static_cast<Event *>(event);
    const uint64_t g = ++e->recorded;
    stream_of(device, stream)->queue([e, g] {
        uint64_t c = e->completed.load();
        while (c < g && !e->completed.compare_exchange_weak(c, g)) {
        }
    });
    return 0;
}
int f_event_query(int32_t, void *event, int32_t *done, hvd_gpu_err_t *) {
    const Event &e = *static_cast<Event *>(event);
    *done = e->completed.load() >= e->recorded.load();
    return 0;
}
int f_stream_wait_event(int32_t device, void *stream, void *event, hvd_gpu_err_t *) {
    Event e = *static_cast<Event *>(event);
    const uint64_t g = e->recorded.load();  // the record queued last, as CUDA takes it
    stream_of(device, stream)->queue([e, g] {
        while (e->completed.load() < g)
            std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
    return 0;
}
// For the test (fake_gpu_device_slow_copies): how much longer a copy of a MiB or more takes, so
// that work that does not wait for such a copy runs before it ends.
std::atomic<int> large_copy_delay_us{0};

int f_copy_async(int32_t device, void *dst, const void *src, size_t bytes, void *stream,
                 hvd_gpu_err_t *) {
    stream_of(device, stream)->queue([=] {
        const int delay = large_copy_delay_us.load();
        if (delay > 0 && bytes >= (1u << 20))
            std::this_thread::sleep_for(std::chrono::microseconds(delay));
        touch(src, bytes, "a copy's source");
        touch(dst, bytes, "a copy's destination");
        std::memmove(dst, src, bytes);
    });
    return 0;
}
int f_copy_batch_async(int32_t device, const hvd_gpu_copy_t *copies, size_t n, int32_t dtype,
                       double factor, void *stream, hvd_gpu_err_t *err) {
    if (n > HVD_GPU_COPY_BATCH) return fail(err, "fake batched copy: too many copies");
    std::vector<hvd_gpu_copy_t> batch(copies, copies + n);
    stream_of(device, stream)->queue([=] {
        for (const hvd_gpu_copy_t &c : batch) {
            touch(c.src, c.bytes, "a batched copy's source");
            touch(c.dst, c.bytes, "a batched copy's destination");
            scale_into(c.dst, c.src, c.bytes / dtype_size(dtype), dtype, factor);
        }
    });
    return 0;
}
int f_scale_async(int32_t device, void *dst, const void *src, size_t count, int32_t dtype,
                  double factor, void *stream, hvd_gpu_err_t *) {
    stream_of(device, stream)->queue([=] {
        touch(src, count * dtype_size(dtype), "a scale kernel's source");
        touch(dst, count * dtype_size(dtype), "a scale kernel's destination");
        scale_into(dst, src, count, dtype, factor);
    });
    return 0;
}
int f_zero_async(int32_t device, void *dst, size_t bytes, void *stream, hvd_gpu_err_t *) {
    stream_of(device, stream)->queue([=] {
        touch(dst, bytes, "a memset");
        std::memset(dst, 0, bytes);
    });
    return 0;
}
int f_nccl_unique_id(uint8_t id[HVD_GPU_NCCL_ID_BYTES], hvd_gpu_err_t *) {
    std::memset(id, 0, HVD_GPU_NCCL_ID_BYTES);
    std::snprintf(reinterpret_cast<char *>(id), HVD_GPU_NCCL_ID_BYTES, "fake-nccl-%llu",
                  static_cast<unsigned long long>(next_id++));
    return 0;
}
int f_nccl_comm_init(int32_t device, int32_t nranks, int32_t rank,
                     const uint8_t id[HVD_GPU_NCCL_ID_BYTES], void **comm, hvd_gpu_err_t *err) {
    if (!valid_device(device)) return fail(err, "no device " + std::to_string(device));
    std::string key(reinterpret_cast<const char *>(id), HVD_GPU_NCCL_ID_BYTES);
    std::lock_guard<std::mutex> lock(groups_mu);
    std::shared_ptr<Group> &g = groups[key];
    if (!g) {
        g = std::make_shared<Group>();
        g->nranks = nranks;
    }
    if (g->nranks != nranks) return fail(err, "fake ncclCommInitRank: another rank count");
    static std::vector<std::unique_ptr<Comm>> all;  // kept: stream work may refer to them
    all.push_back(std::make_unique<Comm>());
    Comm *c = all.back().get();
    c->group = g;
    c->rank = rank;
    c->device = device;
    *comm = c;
    return 0;
}
int f_nccl_comm_status(void *comm, int32_t *in_progress, hvd_gpu_err_t *err) {
    Comm *c = static_cast<Comm *>(comm);
    *in_progress = 0;
    std::lock_guard<std::mutex> lock(c->group->mu);
    return c->group->error.empty() ? 0 : fail(err, c->group->error);
}
int f_nccl_comm_destroy(void *, hvd_gpu_err_t *) {
    return 0;  // stream work queued before may still refer to it: it is kept
}
int f_nccl_comm_abort(void *comm, hvd_gpu_err_t *) {
    Comm *c = static_cast<Comm *>(comm);
    {
        std::lock_guard<std::mutex> lock(c->group->mu);
        c->aborted = true;
    }
    c->group->cv.notify_all();
    // Its stream work may still refer to it: the communicator itself is kept.
    return 0;
}
int f_nccl_supports(int32_t dtype, int32_t reduce_op) {
    return reduces(dtype, reduce_op);
}
int f_nccl_group_start(hvd_gpu_err_t *) {
    ++group_depth;
    return 0;
}
int f_nccl_group_end(hvd_gpu_err_t *err) {
    if (group_depth == 0) return fail(err, "fake ncclGroupEnd without a start");
    if (--group_depth > 0) return 0;
    // One round per communicator, on the stream of its calls.
    std::vector<std::pair<Comm *, std::pair<Stream *, Op>>> calls;
    calls.swap(grouped);
    std::map<Comm *, std::pair<Stream *, std::vector<Op>>> per_comm;
    for (auto &call : calls) {
        auto &entry = per_comm[call.first];
        if (entry.first != nullptr && entry.first != call.second.first)
            return fail(err, "fake NCCL: one communicator's calls on two streams in a group");
        entry.first = call.second.first;
        entry.second.push_back(call.second.second);
    }
    for (auto &[c, work] : per_comm)
        queue_round(c, work.first, std::move(work.second));
    return 0;
}
int f_nccl_allreduce(const void *send, void *recv, size_t count, int32_t dtype, int32_t op,
                     void *comm, void *stream, hvd_gpu_err_t *err) {
    if (!reduces(dtype, op)) return fail(err, "fake NCCL: no such reduction");
    return nccl_call(comm, stream, Op{Kind::kAllreduce, send, recv, count, dtype, op}, err);
}
int f_nccl_reduce(const void *send, void *recv, size_t count, int32_t dtype, int32_t op,
                  int32_t root, void *comm, void *stream, hvd_gpu_err_t *err) {
    if (!reduces(dtype, op)) return fail(err, "fake NCCL: no such reduction");
    return nccl_call(comm, stream, Op{Kind::kReduce, send, recv, count, dtype, op, root}, err);
}
int f_nccl_reducescatter(const void *send, void *recv, size_t count, int32_t dtype, int32_t op,
                         void *comm, void *stream, hvd_gpu_err_t *err) {
    if (!reduces(dtype, op)) return fail(err, "fake NCCL: no such reduction");
    return nccl_call(comm, stream, Op{Kind::kReducescatter, send, recv, count, dtype, op}, err);
}
int f_nccl_broadcast(const void *send, void *recv, size_t bytes, int32_t root, void *comm,
                     void *stream, hvd_gpu_err_t *err) {
    Op o{Kind::kBroadcast, send, recv, bytes};
    o.root = root;
    return nccl_call(comm, stream, o, err);
}
int f_nccl_allgather(const void *send, void *recv, size_t bytes, void *comm, void *stream,
                     hvd_gpu_err_t *err) {
    return nccl_call(comm, stream, Op{Kind::kAllgather, send, recv, bytes}, err);
}
int f_nccl_send(const void *send, size_t bytes, int32_t peer, void *comm, void *stream,
                hvd_gpu_err_t *err) {
    Op o{Kind::kSend, send, nullptr, bytes};
    o.peer = peer;
    return nccl_call(comm, stream, o, err);
}
int f_nccl_recv(void *recv, size_t bytes, int32_t peer, void *comm, void *stream,
                hvd_gpu_err_t *err) {
    Op o{Kind::kRecv, nullptr, recv, bytes};
    o.peer = peer;
    return nccl_call(comm, stream, o, err);
}

// Streams the test says are capturing a graph (fake_gpu_device_capture).
std::mutex capturing_mu;
std::set<void *> capturing_streams;

int f_stream_capturing(int32_t, void *stream, int32_t *capturing, hvd_gpu_err_t *) {
    std::lock_guard<std::mutex> lock(capturing_mu);
    *capturing = capturing_streams.count(stream) > 0;
    return 0;
}

const hvd_gpu_module_t kTable = {
    HVD_GPU_MODULE_ABI_VERSION,
    sizeof(hvd_gpu_module_t),
    f_open,
    f_device_uuid,
    f_pointer_device,
    f_device_alloc,
    f_device_free,
    f_device_free_on,
    f_host_alloc,
    f_host_free,
    f_stream_create,
    f_stream_destroy,
    f_event_create,
    f_event_destroy,
    f_event_record,
    f_event_query,
    f_stream_wait_event,
    f_copy_async,
    f_copy_batch_async,
    f_scale_async,
    f_zero_async,
    f_nccl_unique_id,
    f_nccl_comm_init,
    f_nccl_comm_status,
    f_nccl_comm_destroy,
    f_nccl_comm_abort,
    f_nccl_supports,
    f_nccl_group_start,
    f_nccl_group_end,
    f_nccl_allreduce,
    f_nccl_reduce,
    f_nccl_reducescatter,
    f_nccl_broadcast,
    f_nccl_allgather,
    f_nccl_send,
    f_nccl_recv,
    f_stream_capturing,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const hvd_gpu_module_t *hvd_gpu_module_get(
    uint32_t abi_version, uint32_t *module_abi) {
    if (module_abi != nullptr) *module_abi = HVD_GPU_MODULE_ABI_VERSION;
    return abi_version == HVD_GPU_MODULE_ABI_VERSION ? &kTable : nullptr;
}

// For the test: how many NCCL calls of a kind ("allgather", "broadcast") every rank made so far.
extern "C" __attribute__((visibility("default"))) uint64_t fake_gpu_device_nccl_calls(
    const char *kind) {
    if (std::strcmp(kind, "allgather") == 0)
        return calls_of_kind[static_cast<int>(Kind::kAllgather)].load();
    if (std::strcmp(kind, "broadcast") == 0)
        return calls_of_kind[static_cast<int>(Kind::kBroadcast)].load();
    return 0;
}

// For the test: how many collective rounds (NCCL calls, or groups of them) ran so far.
extern "C" __attribute__((visibility("default"))) uint64_t fake_gpu_device_rounds() {
    return rounds_run.load();
}

// For the test: the device work on freed memory seen so far, one line each ("" when none).
extern "C" __attribute__((visibility("default"))) size_t fake_gpu_device_misuses(char *buf,
                                                                                 size_t len) {
    Devices &d = devices();
    std::lock_guard<std::mutex> lock(d.mu);
    std::string all;
    for (const std::string &m : d.misuses)
        all += m + "\n";
    if (len > 0) std::snprintf(buf, len, "%s", all.c_str());
    return d.misuses.size();
}

// For the test: the next n collective rounds fail with `message`, reported by every member's
// communicator as an asynchronous NCCL error; their outputs are not written.
extern "C" __attribute__((visibility("default"))) void fake_gpu_device_fail_rounds(
    int n, const char *message) {
    std::lock_guard<std::mutex> lock(failing_mu);
    failing_rounds = n;
    failing_message = message;
}

// For the test: queues on `stream` of `device` work that waits until *open is nonzero, as a
// kernel that does not end would (the test opens it before the stream is destroyed).
extern "C" __attribute__((visibility("default"))) void fake_gpu_device_gate(int32_t device,
                                                                            void *stream,
                                                                            const int *open) {
    stream_of(device, stream)->queue([open] {
        while (__atomic_load_n(open, __ATOMIC_ACQUIRE) == 0)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
}

// For the test: how many pinned host buffers were allocated so far.
extern "C" __attribute__((visibility("default"))) uint64_t fake_gpu_device_pinned_allocs() {
    return pinned_allocs.load();
}

// For the test: copies (cudaMemcpyAsync) of a MiB or more take `us` microseconds longer.
extern "C" __attribute__((visibility("default"))) void fake_gpu_device_slow_copies(int us) {
    large_copy_delay_us.store(us);
}

// For the test: marks a stream as capturing a CUDA graph (on), or not.
extern "C" __attribute__((visibility("default"))) void fake_gpu_device_capture(void *stream,
                                                                               int on) {
    std::lock_guard<std::mutex> lock(capturing_mu);
    if (on)
        capturing_streams.insert(stream);
    else
        capturing_streams.erase(stream);
}
