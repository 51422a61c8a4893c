// SPDX-License-Identifier: Apache-2.0
// N ranks of the engine as N threads of one process, for the negotiator and runner tests:
// each rank has its own engine parts (intake, pending ops, control channel, config, a
// negotiator, optionally a runner) over its loopback transport, and a test drives them in
// phases, as Engine::run_pass does: take new requests and report them, progress, receive,
// advance, run (or, without a runner, settle each agreed request with its response's status).
// Rank threads only record what they saw; assertions run on the main thread afterwards
// (cmocka's asserts longjmp, which only the main thread may do). Every phase is bounded.
// Shared by test_coordinator_negotiator.cc, test_cache_negotiator.cc and test_runner.cc.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "config/runtime_config.h"
#include "diagnostics/timeline.h"
#include "engine/abort_state.h"
#include "engine/cache_negotiator.h"
#include "engine/control_channel.h"
#include "engine/coordinator_negotiator.h"
#include "engine/intake.h"
#include "engine/pending_ops.h"
#include "engine/process_set_table.h"
#include "engine/request.h"
#include "engine/runner.h"
#include "engine/tuner.h"
#include "engine/watchdog.h"
#include "transport/loopback/loopback_transport.h"
#include "util/fifo.h"

namespace engine_ranks {

using hvd::engine::OpMeta;
using hvd::engine::OpType;
using hvd::engine::Request;
using hvd::engine::RequestPtr;
using hvd::engine::Response;
using hvd::util::Shape;

constexpr int64_t kPhaseMs = 15000;  // no phase of a passing test comes near it
constexpr int64_t kOpMs = 15000;     // requests' op deadline: a collective never waits longer

enum class Kind { kCoordinator, kCache };

// Ranks first, first + 1, ..., end - 1.
inline std::vector<int32_t> ranks_in(int32_t first, int32_t end) {
    std::vector<int32_t> out;
    for (int32_t r = first; r < end; ++r)
        out.push_back(r);
    return out;
}

// An agreed response as a rank saw it, and whether it carried the request this rank made
// for that name.
struct Seen {
    Response resp;
    bool own = false;
};

// One rank's engine parts, wired as Engine's constructor wires them (the global set 0 added).
struct Rank {
    Rank(int32_t r, int32_t n, hvd::transport::Transport *t, Kind kind, bool with_runner)
        : rank(r),
          size(n),
          transport(t),
          intake(r, &timeline),
          control(r, t),
          tuner(r, n, &config),
          watchdog(r, &abort, &config) {
        hvd::engine::NegotiatorParts parts{r, n, &control, &intake, &pending, &config};
        if (kind == Kind::kCache)
            negotiator = std::make_unique<hvd::engine::CacheNegotiator>(parts);
        else
            negotiator = std::make_unique<hvd::engine::CoordinatorNegotiator>(parts);
        sets.add(0, ranks_in(0, n), r);
        if (with_runner)
            runner = std::make_unique<hvd::engine::Runner>(hvd::engine::RunnerParts{
                r, n, t, &abort, &sets, &timeline, &pending, &intake, &tuner, &watchdog});
    }

    // Queues reqs as one enqueue (a grouped op's members together); remembers each by name.
    void enqueue(const std::vector<RequestPtr> &reqs) {
        std::string err;
        hvd_status_t s = intake.enqueue(reqs.data(), reqs.size(), &err);
        if (s != HVD_OK && error.empty()) error = "enqueue: " + err;
        for (const RequestPtr &r : reqs)
            made[r->meta.name] = r;
    }
    // Whether every request this rank made is finished.
    bool settled() const {
        for (const auto &m : made)
            if (m.second->status() == HVD_INPROGRESS) return false;
        return true;
    }

    // One pass of the engine. Returns whether anything happened.
    bool pass() {
        bool worked = false;
        std::vector<RequestPtr> fresh;
        intake.take(&fresh);
        for (const RequestPtr &r : fresh)
            pending.add(r);
        if (!fresh.empty()) {
            negotiator->report(fresh);
            worked = true;
        }
        worked |= transport->progress();
        worked |= negotiator->receive();
        worked |= negotiator->advance(agreed);
        for (size_t i = 0; i < agreed.size(); ++i) {
            auto m = made.find(agreed[i].name);
            bool own =
                agreed[i].request != nullptr && m != made.end() && agreed[i].request == m->second;
            seen.push_back(Seen{agreed[i], own});
        }
        if (runner) {
            worked |= runner->run(agreed);
        } else {
            while (!agreed.empty()) {  // each agreed request finishes with its response's status
                Response &resp = agreed.front();
                if (resp.request != nullptr && pending.holds(*resp.request))
                    intake.finish(pending.take(*resp.request),
                                  static_cast<hvd_status_t>(resp.status), resp.message);
                resp.request.reset();
                agreed.pop_front();
            }
        }
        control.reap();
        return worked;
    }

    // The names of the responses seen from index `from` on.
    std::vector<std::string> names(size_t from = 0) const {
        std::vector<std::string> out;
        for (size_t i = from; i < seen.size(); ++i)
            out.push_back(seen[i].resp.name);
        return out;
    }

    const int32_t rank;
    const int32_t size;
    hvd::transport::Transport *transport;
    hvd::diagnostics::Timeline timeline;  // never started
    hvd::engine::Intake intake;
    hvd::engine::PendingOps pending;
    hvd::engine::ControlChannel control;
    hvd::config::RuntimeConfig config;
    hvd::engine::AbortState abort;
    hvd::engine::ProcessSetTable sets;
    hvd::engine::Tuner tuner;
    hvd::engine::Watchdog watchdog;
    std::unique_ptr<hvd::engine::Negotiator> negotiator;
    std::unique_ptr<hvd::engine::Runner> runner;
    hvd::util::Fifo<Response> agreed;
    std::map<std::string, RequestPtr> made;  // by name, the latest request of each
    std::vector<Seen> seen;                  // every agreed response, in order
    std::string error;                       // the first exception a pass threw
};

// n ranks over one loopback hub. The ranks go before the transports they use.
struct World {
    World(int32_t n, Kind kind, bool with_runner = false) : hub(n), transports(hub.make_all()) {
        for (int32_t r = 0; r < n; ++r)
            ranks.push_back(std::make_unique<Rank>(r, n, transports[r].get(), kind, with_runner));
    }
    ~World() { ranks.clear(); }
    int32_t size() const { return hub.size(); }
    Rank &operator[](int32_t r) { return *ranks[r]; }

    hvd::transport::LoopbackHub hub;
    std::vector<std::unique_ptr<hvd::transport::Transport>> transports;
    std::vector<std::unique_ptr<Rank>> ranks;
};

using Setup = std::function<void(Rank &)>;
using Done = std::function<bool(const Rank &)>;

// One phase on one thread per rank: setup(rank) (its enqueues), then engine passes until
// done(rank) holds on every rank, then `linger_ms` more (to see that nothing else comes), all
// within `limit_ms`. An idle rank sleeps on its transport's event fd for at most 1 ms. Returns
// whether every rank got done in time; a rank whose pass threw stops, with Rank::error set.
inline bool run_phase(World &w, const Setup &setup, const Done &done, int64_t linger_ms = 0,
                      int64_t limit_ms = kPhaseMs) {
    const int32_t n = w.size();
    std::atomic<int32_t> done_ranks{0};
    std::atomic<bool> failed{false};
    const auto limit = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
            Rank &me = w[r];
            bool counted = false;
            std::chrono::steady_clock::time_point stop_at{};
            try {
                if (setup) setup(me);
                for (;;) {
                    bool worked = me.pass();
                    if (!counted && done(me)) {
                        counted = true;
                        done_ranks.fetch_add(1);
                    }
                    const auto now = std::chrono::steady_clock::now();
                    if (now >= limit || failed.load()) break;
                    if (done_ranks.load() == n) {
                        if (stop_at == std::chrono::steady_clock::time_point{})
                            stop_at = now + std::chrono::milliseconds(linger_ms);
                        if (now >= stop_at) break;
                    }
                    if (worked || !me.transport->arm()) continue;
                    struct pollfd pfd = {me.transport->event_fd(), POLLIN, 0};
                    ::poll(&pfd, 1, 1);
                }
            } catch (const std::exception &e) {
                me.error = e.what();
                failed.store(true);
            }
        });
    }
    for (auto &t : threads)
        t.join();
    return done_ranks.load() == n && !failed.load();
}

// Done once a rank has seen `count` agreed responses in all.
inline Done seen_at_least(size_t count) {
    return [count](const Rank &r) { return r.seen.size() >= count; };
}

// A request for an op of `type` named `name` in set `set_id`: a tensor of that dtype and
// shape at `in` (output `out`, null for a library-owned one), bounded by kOpMs.
inline RequestPtr make_op(OpType type, const std::string &name, int32_t dtype = HVD_DTYPE_FLOAT32,
                          const Shape &shape = Shape{4}, void *in = nullptr, void *out = nullptr,
                          uint16_t set_id = 0) {
    RequestPtr req = hvd::engine::make_request();
    req->meta.type = type;
    req->meta.name = name;
    req->meta.set_id = set_id;
    req->meta.dtype = dtype;
    req->meta.shape = shape;
    req->meta.device_type = HVD_DEVICE_CPU;
    req->input.data = in;
    req->input.dtype = dtype;
    req->input.shape = shape;
    if (out != nullptr) {
        req->output = req->input;
        req->output.data = out;
    }
    req->deadline = hvd::Deadline::after_ms(kOpMs);
    return req;
}

inline RequestPtr allreduce(const std::string &name, const Shape &shape = Shape{4},
                            int32_t dtype = HVD_DTYPE_FLOAT32) {
    return make_op(OpType::kAllreduce, name, dtype, shape);
}

// A grouped op's members "<group>.<i>", as the C API's grouped enqueue makes them.
inline std::vector<RequestPtr> group_of(const std::string &group, int32_t n,
                                        const Shape &shape = Shape{4}) {
    std::vector<RequestPtr> out;
    for (int32_t i = 0; i < n; ++i) {
        RequestPtr m = allreduce(group + "." + std::to_string(i), shape);
        m->meta.group = group;
        m->meta.group_size = n;
        out.push_back(m);
    }
    return out;
}

// Fails unless every rank's run_phase went through without an exception.
inline void assert_no_errors(World &w) {
    for (int32_t r = 0; r < w.size(); ++r)
        if (!w[r].error.empty()) fail_msg("rank %d: %s", r, w[r].error.c_str());
}

// Fails unless every rank saw, from `from` on, exactly the names rank 0 saw, in its order,
// `count` of them, each with its own request and status HVD_OK.
inline void assert_agreed(World &w, size_t from, size_t count) {
    assert_no_errors(w);
    std::vector<std::string> want = w[0].names(from);
    if (want.size() != count)
        fail_msg("rank 0 saw %zu responses, expected %zu", want.size(), count);
    for (int32_t r = 0; r < w.size(); ++r) {
        std::vector<std::string> got = w[r].names(from);
        if (got != want) fail_msg("rank %d saw another order than rank 0", r);
        for (size_t i = from; i < w[r].seen.size(); ++i) {
            const Seen &s = w[r].seen[i];
            if (!s.own) fail_msg("rank %d: '%s' without its request", r, s.resp.name.c_str());
            if (s.resp.status != HVD_OK)
                fail_msg("rank %d: '%s' status %d: %s", r, s.resp.name.c_str(), s.resp.status,
                         s.resp.message.c_str());
        }
    }
}

}  // namespace engine_ranks
