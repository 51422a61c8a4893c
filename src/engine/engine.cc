#include "engine/engine.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "common/scoped_count.h"
#include "engine/executor.h"
#include "negotiation/control_tags.h"
#include "negotiation/fusion_planner.h"
#include "util/wire.h"

namespace hvd::engine {

using util::WireReader;
using util::WireWriter;

namespace {

// How long the engine polls before sleeping after its last piece of work.
// Longest sleep: bounds how late an op timeout is noticed. Idle wake-ups at this period
// cost nothing measurable.
constexpr int64_t kMaxSleepMs = 1000;
// How long a transport error waits for the failure monitor to name a dead peer.
constexpr int64_t kFailureReportWaitMs = 2000;

}  // namespace

Engine::Engine(int32_t rank, int32_t size, transport::Transport *transport, AbortState *abort,
               ProcessSetTable *sets, diagnostics::Timeline *timeline, RuntimeConfig *config)
    : rank_(rank),
      size_(size),
      transport_(transport),
      abort_(abort),
      sets_(sets),
      timeline_(timeline),
      config_(config),
      rounds_(size) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: eventfd failed", rank));
    if (rank_ == kCoordinator) {
        coordinator_ = std::make_unique<Coordinator>(size_);
        cache_bits_ = std::make_unique<CacheBitAllocator>();
        batches_sent_.assign(static_cast<size_t>(size_), 0);
    }
    std::vector<int32_t> all(static_cast<size_t>(size));
    for (int32_t r = 0; r < size; ++r)
        all[r] = r;
    sets_->add(0, std::move(all), rank);
}

Engine::~Engine() {
    stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Engine::start() {
    thread_ = std::thread([this] { loop(); });
}

void Engine::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_requested_ = true;
        stop_flag_.store(true);
    }
    wake();
    if (thread_.joinable()) thread_.join();
    // A caller driving passes sees stop_flag_ before its next pass and leaves; the pass it is
    // in ends with its collective, by its op timeout where one is set. The engine cannot be
    // torn down under it, so this waits for as long as that takes, and says so every 10 s.
    const auto start = std::chrono::steady_clock::now();
    auto next_note = start + std::chrono::seconds(10);
    while (drivers_.load() != 0) {
        const auto now = std::chrono::steady_clock::now();
        if (now - start < std::chrono::milliseconds(10)) {
            std::this_thread::yield();
            continue;
        }
        if (now >= next_note) {
            HVD_LOG(kWarning, rank_,
                    "shutdown: waiting %lld s for %d thread(s) still running a collective in "
                    "hvd_request_wait (each returns when its collective ends, by HVD_OP_TIMEOUT "
                    "if one is set)",
                    static_cast<long long>(
                        std::chrono::duration_cast<std::chrono::seconds>(now - start).count()),
                    drivers_.load());
            next_note = now + std::chrono::seconds(10);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

void Engine::wake() {
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_, &one, sizeof one);
    (void)ignored;
}

std::string Engine::auto_name(OpType type, uint16_t set_id) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t n = auto_name_counters_[{set_id, static_cast<int>(type)}]++;
    return strprintf("%s.noname.%llu", op_type_name(type), static_cast<unsigned long long>(n));
}

hvd_status_t Engine::enqueue(const RequestPtr &req, std::string *err) {
    return enqueue_span(&req, 1, err);
}

hvd_status_t Engine::enqueue_group(const std::vector<RequestPtr> &reqs, std::string *err) {
    return enqueue_span(reqs.data(), reqs.size(), err);
}

hvd_status_t Engine::enqueue_span(const RequestPtr *reqs, size_t n, std::string *err) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_requested_) {
            *err = strprintf("rank %d: the context is finalizing", rank_);
            return HVD_ERR_NOT_READY;
        }
        // Names go in one by one; on a clash, the ones this call added come out again.
        for (size_t i = 0; i < n; ++i) {
            Request &r = *reqs[i];
            r.in_flight = in_flight_names_.enter(r.meta.set_id, r.meta.name);
            if (r.in_flight != nullptr) {
                r.in_flight->request = &r;
                continue;
            }
            for (size_t j = 0; j < i; ++j) {
                in_flight_names_.leave(reqs[j]->in_flight);
                reqs[j]->in_flight = nullptr;
            }
            *err = strprintf("rank %d: an op named '%s' is already in flight", rank_,
                             reqs[i]->meta.name.c_str());
            return HVD_ERR_INVALID_ARG;
        }
        for (size_t i = 0; i < n; ++i)
            queue_.push_back(reqs[i]);
        if (timeline_->active())
            for (size_t i = 0; i < n; ++i)
                timeline_->begin(reqs[i]->meta.name, "QUEUE");
        work_queued_.store(true);
    }
    // An engine that is awake (running a pass) sees work_queued_ without a system call. The
    // first enqueue to find it asleep wakes it and clears the flag for the rest: the engine
    // thread (a batch thread on its caller's CPU) may not run for a while, and until then
    // every enqueue of a burst wrote the eventfd again (256 x 4 KiB step: 256 writes).
    if (sleeping_.load() && sleeping_.exchange(false)) wake();
    return HVD_OK;
}

void Engine::loop() {
    // The engine thread never spins while idle: a caller that waits on a request runs the
    // passes itself (drive_while_waiting) when spinning is allowed at all, so no thread has to
    // be woken to finish its op. As SCHED_BATCH the engine thread's wake-ups (an enqueue, a
    // message) do not preempt the caller either.
    unpinned_ = transport::may_run_on_several_cpus();
    waiters_drive_.store(transport::spin_window().count() > 0);
    if (waiters_drive_.load() && env_setting_bool("ENGINE_BATCH", true)) {
        struct sched_param param {};
        param.sched_priority = 0;
        (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
    }
    std::unique_lock<std::mutex> drive(drive_mu_);
    for (;;) {
        if (stop_flag_.load()) break;
        if (abort_->aborted()) {
            fail_everything(abort_->status(), abort_->detail());
            sleep_until_work(drive);
            continue;
        }
        if (!run_pass()) sleep_until_work(drive);
    }
    fail_everything(abort_->aborted() ? abort_->status() : HVD_ERR_ABORTED,
                    abort_->aborted() ? abort_->detail()
                                      : strprintf("rank %d: context finalized before the op "
                                                  "completed",
                                                  rank_));
}

bool Engine::run_pass() {
    bool worked = false;
    try {
        worked |= take_new_requests();
        worked |= transport_->progress();
        for (int32_t peer : transport_->take_failed_peers())
            abort_->set(HVD_ERR_PEER_FAILED,
                        strprintf("rank %d: rank %d became unreachable", rank_, peer));
        worked |= receive_control();
        // Everything that became ready in this pass leaves as one batch: while this rank
        // was busy in a collective, ready reports piled up, and one batch lets the
        // fusion planner join them.
        worked |= order_responses();
        worked |= run_responses();
        if (coordinator_) autotune_step();
        reap_sends();
        check_timeouts();
        if (coordinator_) inspect_stalls();
    } catch (const std::exception &) {
        std::string message;
        hvd_status_t s = thrown_status(&message);
        abort_->set(s, message);
    }
    if (worked && timeline_->active()) timeline_->mark_cycle();
    return worked;
}

bool Engine::driven_pass(std::unique_lock<std::mutex> &drive) {
    bool worked = run_pass();
    if (abort_->aborted()) {
        drive.unlock();
        wake();  // the engine thread fails what is left
    }
    return worked;
}

void Engine::drive_while_waiting(const Request &req, const Deadline &until) {
    if (!waiters_drive_.load()) return;  // (acquire: unpinned_)
    ScopedCount driving(drivers_);       // stop() waits for it to leave
    const auto window = transport::spin_window();
    auto spin_until = std::chrono::steady_clock::now() + window;
    // Held for the whole drive: handing it back after every pass woke the engine thread
    // (blocked on it) each time, ~100 context switches per 256-tensor step.
    std::unique_lock<std::mutex> drive(drive_mu_, std::try_to_lock);
    if (!drive.owns_lock()) return;  // the engine thread is at work: let it finish
    bool worked = false;
    for (;;) {
        if (req.status() != HVD_INPROGRESS) break;
        if (stop_flag_.load() || abort_->aborted()) return;
        const auto now = std::chrono::steady_clock::now();
        if (now >= spin_until || until.expired_at(now)) break;
        worked = driven_pass(drive);
        if (!drive.owns_lock()) return;
        if (worked) {
            spin_until = std::chrono::steady_clock::now() + window;
        } else if (transport::yield_spin() ||
                   (unpinned_ && window - (spin_until - now) >= transport::kYieldAfterSpin)) {
            ::sched_yield();  // the peer's driver may be waiting for this CPU
        }
    }
    // Leave the engine as its own loop would before sleeping: a pass that did work may have
    // left more (a batch for the other ranks, say) that no message will come to announce.
    for (int extra = 0; worked && extra < 4 && drive.owns_lock(); ++extra)
        worked = driven_pass(drive);
    if (worked && drive.owns_lock()) {
        drive.unlock();
        wake();
    }
}

// Coordinator responses out, then cache rounds and batches in order into responses_. A second
// pass when that produced more: a cached op handed to rank 0's own coordinator may have
// completed an op, and a vote may have let held responses go.
bool Engine::order_responses() {
    bool any = false;
    for (int pass = 0; pass < 2; ++pass) {
        if (!outbox_.empty() || !undelivered_.empty())
            deliver_responses(std::exchange(outbox_, {}));
        any |= advance_cache();
        if (outbox_.empty() && undelivered_.empty()) break;
    }
    return any;
}

bool Engine::take_new_requests() {
    // Member vectors swapped with queue_, cleared but never freed: no allocation per pass.
    std::vector<RequestPtr> &fresh = fresh_;
    fresh.clear();
    if (work_queued_.load()) {
        std::lock_guard<std::mutex> lock(mu_);
        fresh.swap(queue_);
        work_queued_.store(false);
    }
    auto now = std::chrono::steady_clock::now();
    if (!fresh.empty() && held_.empty()) held_since_ = now;
    for (RequestPtr &req : fresh) {
        pending_.add(req);
        if (timeline_->active()) {
            timeline_->end(req->meta.name);  // QUEUE
            timeline_->begin(req->meta.name, "NEGOTIATE_" + upper_op_name(req->meta.type));
            req->traced = true;
        }
        held_.push_back(std::move(req));
    }
    if (held_.empty()) return false;
    // The cycle time lets more ops arrive to be reported (and fused) together.
    if (now < held_until()) return !fresh.empty();
    report_ready(held_);
    held_.clear();
    return true;
}

bool Engine::receive_control() {
    bool any = false;
    std::string payload;
    transport::Completion c;
    if (coordinator_) {
        uint64_t mask = transport::kTagFullMask & ~transport::kTagSourceMask;
        while (transport_->try_recv_any(control_tag(0, kReadyMessage), mask, &payload, &c)) {
            if (c.status != HVD_OK)
                throw Error(c.status,
                            strprintf("rank %d: receiving a control message failed", rank_));
            coordinator_->add_ready(transport::tag_source(c.sender_tag), decode_ready(payload),
                                    &outbox_);
            any = true;
        }
    } else {
        while (transport_->try_recv_any(control_tag(kCoordinator, kResponseMessage),
                                        transport::kTagFullMask, &payload, &c)) {
            if (c.status != HVD_OK)
                throw Error(c.status, strprintf("rank %d: receiving the coordinator's answer "
                                                "failed",
                                                rank_));
            accept_batch(decode_batch(payload));
            any = true;
        }
        while (transport_->try_recv_any(control_tag(kCoordinator, kTuneMessage),
                                        transport::kTagFullMask, &payload, &c)) {
            if (c.status != HVD_OK)
                throw Error(c.status,
                            strprintf("rank %d: receiving autotuned parameters failed", rank_));
            receive_tuned(payload);
            any = true;
        }
    }
    any |= receive_votes();
    return any;
}

void Engine::deliver_responses(std::vector<Response> emitted) {
    // A response waits for the cache round its reports named (the coordinator's order is
    // kept: what was emitted after it waits too).
    for (Response &r : emitted)
        undelivered_.push_back(std::move(r));
    std::vector<Response> responses;
    while (!undelivered_.empty() && undelivered_.front().after_round <= rounds_voted_) {
        responses.push_back(std::move(undelivered_.front()));
        undelivered_.pop_front();
    }
    if (responses.empty()) return;
    plan_fusion(responses, static_cast<size_t>(config_->fusion_threshold_bytes.load()));
    size_t capacity = static_cast<size_t>(config_->cache_capacity.load());
    for (Response &r : responses)
        if (ResponseCache::cacheable(r)) r.cache_bit = cache_bits_->assign(r.name, capacity);
    // Each rank gets, in emission order, the responses of the sets it belongs to.
    std::vector<std::vector<Response>> by_peer(static_cast<size_t>(size_));
    for (const Response &r : responses) {
        if (r.addressee >= 0) {
            by_peer[r.addressee].push_back(r);
            continue;
        }
        for (int32_t member : recipients(r))
            by_peer[member].push_back(r);
    }
    for (int32_t peer = 0; peer < size_; ++peer) {
        if (by_peer[peer].empty()) continue;
        ResponseBatch batch;
        batch.index = ++batches_sent_[peer];
        batch.stamp = rounds_voted_;  // runs after the rounds started so far
        batch.responses = std::move(by_peer[peer]);
        if (peer == rank_) {
            accept_batch(std::move(batch));
        } else {
            send_control(peer, kResponseMessage, encode_batch(batch));
        }
    }
}

std::vector<int32_t> Engine::recipients(const Response &r) const {
    // Membership changes are ops of the global set (0), so they reach every rank.
    return coordinator_->members(r.set_id);
}

void Engine::send_control(int32_t peer, uint32_t kind, std::string payload) {
    outgoing_.emplace_back();
    OutgoingMessage &m = outgoing_.back();
    m.payload = std::move(payload);
    transport_->isend(peer, control_tag(rank_, kind), m.payload.data(), m.payload.size(),
                      &m.completion);
}

void Engine::reap_sends() {
    for (auto it = outgoing_.begin(); it != outgoing_.end();) {
        if (!it->completion.done) {
            ++it;
            continue;
        }
        if (it->completion.status != HVD_OK)
            throw Error(it->completion.status,
                        strprintf("rank %d: sending a control message to rank %d failed: %s", rank_,
                                  it->completion.peer, status_message(it->completion.status)));
        it = outgoing_.erase(it);
    }
}

bool Engine::run_responses() {
    bool any = false;
    while (!responses_.empty() && !abort_->aborted()) {
        any = true;
        // Run where it lies: popped only once run, so that its slot (with its strings) is
        // reused by the next push.
        Response &resp = responses_.front();
        RequestPtr req = request_for(resp);
        if (!req) {  // joined, and not an op a joined rank takes part in
            responses_.pop_front();
            continue;
        }
        if (autotuner_ && resp.status == HVD_OK) autotuner_->record(response_bytes(resp));
        if (resp.fuse_next && resp.status == HVD_OK) {
            run_fused(std::move(req));
            continue;
        }
        try {
            run_one(resp, req);
        } catch (...) {
            responses_.pop_front();
            finish_thrown(&req, 1);
            throw;
        }
        responses_.pop_front();
    }
    return any;
}

RequestPtr Engine::request_for(Response &resp) {
    if (RequestPtr req = take_request(resp)) return req;
    const Request *join = joined_request(resp.set_id);
    if (join == nullptr)
        throw Error(HVD_ERR_INTERNAL,
                    strprintf("rank %d: the coordinator scheduled '%s' (process set %u), which "
                              "this rank never enqueued",
                              rank_, resp.name.c_str(), resp.set_id));
    // This rank joined: it takes part in the others' allreduces with zeros (a fused run as
    // a whole, as the other ranks run it) and ignores errors meant for the ranks that
    // enqueued the op.
    if (resp.status != HVD_OK || resp.type != OpType::kAllreduce) return nullptr;
    return zeros_like(resp, *join);
}

RequestPtr Engine::take_request(Response &resp) {
    // Every response comes with this rank's request, if it had one pending when the response
    // was queued (schedule_batch, run_round). One no longer pending (its set was destroyed
    // since) is none.
    RequestPtr mine = std::move(resp.request);
    return mine != nullptr && pending_.holds(*mine) ? pending_.take(*mine) : nullptr;
}

// A request taken out of pending_ is no longer failed by fail_everything: if running it
// throws (the pass then aborts the context), it is finished here with what was thrown, so
// that nobody waits on it until its op timeout. Call from a catch block.
void Engine::finish_thrown(const RequestPtr *reqs, size_t n) {
    std::string message;
    hvd_status_t s = thrown_status(&message);
    finish_all(reqs, n, s, message);
}

// What the exception being handled means for the context: its status and message, as the
// aborted context and the requests it ends report them. Call from a catch block.
hvd_status_t Engine::thrown_status(std::string *message) const {
    try {
        throw;
    } catch (const Error &e) {
        *message = e.what();
        return e.status();
    } catch (const std::exception &e) {
        *message = strprintf("rank %d: engine: %s", rank_, e.what());
    } catch (...) {
        *message = strprintf("rank %d: engine: unknown exception", rank_);
    }
    return HVD_ERR_INTERNAL;
}

// A run of allreduces the coordinator chained with fuse_next: one collective for all. The
// whole run arrived in one message, so it is all in responses_ now, from the front. first_req
// is the front's request; the run's responses are popped once it has run.
void Engine::run_fused(RequestPtr first_req) {
    // A member vector, cleared but kept: no allocation per run.
    std::vector<RequestPtr> &reqs = fused_reqs_;
    reqs.clear();
    size_t taken = 1;  // responses_[0, taken) are in the run
    try {
        reqs.push_back(std::move(first_req));
        while (responses_[taken - 1].fuse_next) {
            if (taken == responses_.size())
                throw Error(HVD_ERR_INTERNAL,
                            strprintf("rank %d: a fused run after '%s' arrived incomplete", rank_,
                                      responses_[taken - 1].name.c_str()));
            Response &next = responses_[taken++];
            if (autotuner_) autotuner_->record(response_bytes(next));
            RequestPtr req = request_for(next);
            if (!req)
                throw Error(HVD_ERR_INTERNAL,
                            strprintf("rank %d: '%s' of a fused run is not an allreduce that "
                                      "succeeded",
                                      rank_, next.name.c_str()));
            reqs.push_back(std::move(req));
        }
        run_fused_taken(&responses_.front(), reqs);
    } catch (...) {
        if (reqs.empty())
            finish_thrown(&first_req, 1);
        else
            finish_thrown(reqs.data(), reqs.size());
        reqs.clear();
        responses_.pop_front(taken);
        throw;
    }
    reqs.clear();
    responses_.pop_front(taken);
}

void Engine::run_fused_taken(const Response *resps, const std::vector<RequestPtr> &reqs) {
    collectives::Comm comm = make_comm(resps[0], *reqs.front());
    for (const RequestPtr &r : reqs)
        comm.deadline = Deadline::earlier(comm.deadline, r->deadline);
    std::string message;
    for (const RequestPtr &r : reqs)
        trace_start_op(*r);
    std::vector<RequestPtr> traced;
    for (const RequestPtr &r : reqs)
        if (r->traced) traced.push_back(r);
    ActivityTrace trace(timeline_, traced);
    hvd_status_t s = HVD_ERR_INTERNAL;
    try {
        switch (resps[0].type) {
            case OpType::kAllgather:
                s = execute_fused_allgather(comm, resps, reqs, &fusion_buffer_, trace, &message);
                break;
            case OpType::kReducescatter:
                s = execute_fused_reducescatter(comm, reqs, &fusion_buffer_, trace, &message);
                break;
            default:
                s = execute_fused_allreduce(comm, reqs, &fusion_buffer_, trace, &message);
                break;
        }
    } catch (const std::bad_alloc &) {
        s = HVD_ERR_NO_MEMORY;
        message = strprintf("rank %d: out of memory running a fused %s", rank_,
                            op_type_name(resps[0].type));
    }
    for (const RequestPtr &r : reqs)
        trace_end_op(*r);
    fused_collectives_.fetch_add(1, std::memory_order_relaxed);
    fused_tensors_.fetch_add(reqs.size(), std::memory_order_relaxed);
    if (s != HVD_OK) s = settle_failure(resps[0], s, &message);
    finish_all(reqs.data(), reqs.size(), s, message);
}

void Engine::trace_start_op(Request &req) {
    if (!req.traced || !timeline_->active()) return;
    timeline_->end(req.meta.name);  // NEGOTIATE_<OP>
    timeline_->begin(req.meta.name, upper_op_name(req.meta.type));
}

void Engine::trace_end_op(const Request &req) {
    if (req.traced && timeline_->active()) timeline_->end(req.meta.name);
}

void Engine::run_one(const Response &resp, const RequestPtr &req) {
    trace_start_op(*req);
    bool moves_data = true;
    switch (resp.type) {
        case OpType::kBarrier:
            moves_data = false;
            break;
        case OpType::kJoin:
            if (resp.status == HVD_OK) req->value = resp.first_dims.at(0);
            moves_data = false;
            break;
        case OpType::kProcessSetCreate:
        case OpType::kProcessSetDestroy:
            if (resp.status == HVD_OK) run_membership_change(resp, *req);
            moves_data = false;
            break;
        default:
            break;
    }
    if (resp.status != HVD_OK || !moves_data) {
        trace_end_op(*req);
        finish(req, static_cast<hvd_status_t>(resp.status), resp.message);
        return;
    }
    collectives::Comm comm = make_comm(resp, *req);
    std::string message;
    std::vector<RequestPtr> one{req};
    ActivityTrace trace(req->traced ? timeline_ : nullptr, one);
    trace.begin(transfer_activity(comm, resp.type));
    hvd_status_t s = execute_response(comm, resp, *req, &message);
    trace.end();
    trace_end_op(*req);
    if (s != HVD_OK) s = settle_failure(resp, s, &message);
    finish(req, s, message);
}

collectives::Comm Engine::make_comm(const Response &resp, const Request &req) {
    ProcessSetPtr set = sets_->find(resp.set_id);
    if (!set || set->my_index < 0)
        throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: '%s' runs in process set %u, which "
                                                "this rank does not know",
                                                rank_, resp.name.c_str(), resp.set_id));
    collectives::Comm comm;
    comm.transport = transport_;
    comm.members = set->members;
    comm.my_index = set->my_index;
    comm.set_id = resp.set_id;
    comm.seq = resp.seq;
    comm.deadline = req.deadline;
    comm.abort_status = abort_->flag();
    comm.scratch = &scratch_;
    // Every rank is a member (in rank order): the shared-memory group's rounds stay in step.
    if (shm_ != nullptr && set->size() == size_) comm.shm = shm_;
    return comm;
}

hvd_status_t Engine::settle_failure(const Response &resp, hvd_status_t s, std::string *message) {
    if (s == HVD_ERR_MISMATCH || s == HVD_ERR_INVALID_ARG || s == HVD_ERR_UNSUPPORTED) return s;
    // A collective that failed half way leaves the ranks out of step: the context cannot go
    // on.
    if (s == HVD_ERR_TIMED_OUT)
        *message = strprintf("rank %d: %s '%s' timed out", rank_, op_type_name(resp.type),
                             resp.name.c_str());
    if (s == HVD_ERR_TRANSPORT) await_failure_report();
    abort_->set(s, *message);
    transport_aborted_ = true;  // wait_all aborted the transport already
    *message = abort_->detail();
    return abort_->status();  // a dead peer, when that is the cause
}

// The request a name in flight belongs to is pending once the engine has taken it from the
// queue; only a pending one can have been reported, and so be scheduled.
RequestPtr Engine::find_pending(uint16_t set_id, const std::string &name) {
    Request *r = nullptr;
    {
        std::lock_guard<std::mutex> lock(mu_);
        r = in_flight_names_.find(set_id, name);
    }
    return r != nullptr ? pending_.shared(*r) : nullptr;
}

const Request *Engine::joined_request(uint16_t set_id) const {
    return pending_.join_in(set_id);
}

RequestPtr Engine::zeros_like(const Response &resp, const Request &join) {
    auto req = make_request();
    req->meta.name = resp.name;
    req->meta.set_id = resp.set_id;
    req->meta.type = OpType::kAllreduce;
    req->meta.dtype = resp.dtype;
    req->meta.shape = resp.shape;
    req->meta.reduce_op = resp.reduce_op;
    req->meta.prescale = resp.prescale;
    req->meta.postscale = resp.postscale;
    req->input.dtype = resp.dtype;
    req->input.shape = resp.shape;
    req->owned_data.resize_zeroed(req->input.bytes());
    req->input.data = req->owned_data.data();
    req->output = req->input;
    req->deadline = join.deadline;
    return req;
}

void Engine::run_membership_change(const Response &resp, Request &req) {
    if (resp.type == OpType::kProcessSetCreate) {
        uint16_t id = static_cast<uint16_t>(resp.first_dims.at(0));
        sets_->add(id, req.meta.splits, rank_);
        req.value = id;
        return;
    }
    uint16_t id = static_cast<uint16_t>(req.meta.root);
    sets_->remove(id);
    // Ops this rank queued on the set can never run now.
    std::vector<Request *> doomed;
    for (const RequestPtr &r : pending_.all())
        if (r->meta.set_id == id) doomed.push_back(r.get());
    for (Request *r : doomed)
        finish(pending_.take(*r), HVD_ERR_INVALID_ARG,
               strprintf("rank %d: process set %u was destroyed before '%s' ran", rank_, id,
                         r->meta.name.c_str()));
}

void Engine::await_failure_report() {
    // A transport error is often the first sign of a dead peer on this host (its shared
    // memory or process_vm_readv fails before the rendezvous server has reported it). Give
    // the failure monitor a moment, so the request reports the cause: HVD_ERR_PEER_FAILED.
    Deadline limit = Deadline::after_ms(kFailureReportWaitMs);
    while (!abort_->aborted() && !limit.expired())
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// Horovod's stall inspector, on the coordinator: ops some ranks enqueued and others did not
// are named in the log with the missing ranks once per check period; once one of them passes
// the shutdown time (if set), every waiting op fails on the ranks that enqueued it, each with
// its own line naming the ranks missing, and the job aborts.
void Engine::inspect_stalls() {
    const int64_t check_s = config_->stall_check_s.load();
    const int64_t shutdown_s = config_->stall_shutdown_s.load();
    auto now = std::chrono::steady_clock::now();
    if (check_s <= 0 || now < next_stall_check_) return;
    next_stall_check_ = now + std::chrono::seconds(1);
    std::vector<Response> expired;
    std::string shutdown_detail;
    auto age_of = [&](const Coordinator::Waiting &w) {
        return static_cast<int64_t>(
            std::chrono::duration_cast<std::chrono::seconds>(now - w.since).count());
    };
    auto describe = [&](const Coordinator::Waiting &w) {
        std::string missing;
        for (int32_t r : w.missing_ranks)
            missing += strprintf("%s%d", missing.empty() ? "" : ",", r);
        return strprintf("'%s' (process set %u) has waited %lld s: not yet enqueued on rank(s) %s",
                         w.name.c_str(), w.set_id, static_cast<long long>(age_of(w)),
                         missing.c_str());
    };
    std::vector<Coordinator::Waiting> waiting = coordinator_->waiting();
    for (const Coordinator::Waiting &w : waiting) {
        int64_t age = age_of(w);
        if (age < check_s) continue;
        std::string line = describe(w);
        auto &last = stall_warned_[{w.set_id, w.name}];
        if (now - last >= std::chrono::seconds(check_s)) {
            HVD_LOG(kWarning, rank_, "stall inspector: %s", line.c_str());
            last = now;
        }
        if (shutdown_s > 0 && age >= shutdown_s && shutdown_detail.empty())
            shutdown_detail = "stall shutdown: " + line;
    }
    if (!shutdown_detail.empty())
        for (const Coordinator::Waiting &w : waiting)
            coordinator_->expire(w.set_id, w.name, HVD_ERR_TIMED_OUT,
                                 "stall shutdown: " + describe(w), &expired);
    for (auto it = stall_warned_.begin(); it != stall_warned_.end();)
        it = now - it->second > std::chrono::seconds(2 * check_s) ? stall_warned_.erase(it)
                                                                  : std::next(it);
    if (expired.empty()) return;
    deliver_responses(std::move(expired));
    reap_sends_for(std::chrono::milliseconds(500));
    abort_->set(HVD_ERR_TIMED_OUT, shutdown_detail);
}

// Lets the control messages just sent leave before an abort closes the endpoints.
void Engine::reap_sends_for(std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        transport_->progress();
        bool all_done = true;
        for (const auto &m : outgoing_)
            all_done &= m.completion.done;
        if (all_done) break;
    }
    advance_cache();  // this rank's own batch of the responses just sent
    run_responses();
}

void Engine::check_timeouts() {
    if (pending_.empty()) return;
    // At most once per millisecond: a waiter driving the engine runs passes back to back,
    // and each check walks every pending op.
    const auto now = Deadline::Clock::now();
    if (now < next_timeout_check_) return;
    next_timeout_check_ = now + std::chrono::milliseconds(1);
    for (const RequestPtr &req : pending_.all()) {
        if (!req->deadline.expired_at(now)) continue;
        std::string detail = strprintf("rank %d: %s '%s' timed out waiting for the other ranks",
                                       rank_, op_type_name(req->meta.type), req->meta.name.c_str());
        if (coordinator_) {
            for (const auto &w : coordinator_->waiting()) {
                if (w.set_id != req->meta.set_id || w.name != req->meta.name) continue;
                detail += " (not yet enqueued on rank";
                for (int32_t r : w.missing_ranks)
                    detail += strprintf(" %d", r);
                detail += ")";
            }
        }
        abort_->set(HVD_ERR_TIMED_OUT, detail);
        return;
    }
}

void Engine::finish(const RequestPtr &req, hvd_status_t status, const std::string &message) {
    finish_all(&req, 1, status, message);
}

// Every request is settled before any waiter is woken (see Request::complete). Waking a
// request that was complete already is harmless: its waiters check the status.
void Engine::finish_all(const RequestPtr *reqs, size_t n, hvd_status_t status,
                        const std::string &message) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t i = 0; i < n; ++i) {
            if (reqs[i]->in_flight == nullptr) continue;  // made by the engine, or finished
            in_flight_names_.leave(reqs[i]->in_flight);
            reqs[i]->in_flight = nullptr;
        }
    }
    for (size_t i = 0; i < n; ++i)
        reqs[i]->settle(status, message);
    for (size_t i = 0; i < n; ++i) {
        reqs[i]->notify();
        if (RequestPtr parent = reqs[i]->parent.lock()) parent->member_done(status, message);
    }
}

void Engine::fail_everything(hvd_status_t status, const std::string &detail) {
    if (!transport_aborted_) {
        transport_->abort_all(status);
        transport_aborted_ = true;
        outgoing_.clear();
    }
    std::vector<RequestPtr> fresh;
    {
        std::lock_guard<std::mutex> lock(mu_);
        fresh.swap(queue_);
        work_queued_.store(false);
    }
    for (const RequestPtr &req : fresh)
        finish(req, status, detail);
    for (const RequestPtr &r : pending_.all())
        finish(r, status, detail);
    pending_.clear();
    responses_.clear();
    cached_waiting_.clear();
}

// ------------------------------------------------------------------ autotune

void Engine::autotune_step() {
    if (config_->autotune.load() == 0) {
        autotuner_.reset();  // the parameters chosen so far stay
        return;
    }
    if (!autotuner_) {
        const char *log = env_setting("AUTOTUNE_LOG");
        autotuner_ = std::make_unique<Autotuner>(
            log != nullptr ? log : "",
            static_cast<int32_t>(env_setting_int("AUTOTUNE_WARMUP_SAMPLES", 1)),
            static_cast<int32_t>(env_setting_int("AUTOTUNE_STEPS_PER_SAMPLE", 10)));
        HVD_LOG(kInfo, rank_, "autotune: searching %zu points of fusion threshold x cycle time",
                autotuner_->grid_size());
    } else if (!autotuner_->tick(std::chrono::steady_clock::now())) {
        return;
    }
    const TunedParams &p = autotuner_->current();
    if (autotuner_->done())
        HVD_LOG(kInfo, rank_, "autotune: chose fusion threshold %lld bytes, cycle time %.3f ms",
                static_cast<long long>(p.fusion_threshold_bytes), p.cycle_time_us / 1000.0);
    apply_tuned(p, ++tune_epoch_);
    WireWriter w;
    w.u64(tune_epoch_);
    w.i64(p.fusion_threshold_bytes);
    w.i64(p.cycle_time_us);
    for (int32_t peer = 0; peer < size_; ++peer)
        if (peer != rank_) send_control(peer, kTuneMessage, w.bytes());
}

void Engine::receive_tuned(const std::string &payload) {
    WireReader r(payload);
    uint64_t epoch = r.u64();
    TunedParams p;
    p.fusion_threshold_bytes = r.i64();
    p.cycle_time_us = r.i64();
    if (p.fusion_threshold_bytes < 0 || p.cycle_time_us < 0 || !r.at_end())
        throw Error(HVD_ERR_TRANSPORT, strprintf("rank %d: malformed autotune message", rank_));
    apply_tuned(p, epoch);
}

// Every rank applies the coordinator's choice and, with HVD_AUTOTUNE_LOG, records it in
// <log>.<rank> as "epoch,fusion_threshold_bytes,cycle_time_ms" (rank 0 logs its samples to
// <log> itself): the files show every rank followed the same sequence.
void Engine::apply_tuned(const TunedParams &p, uint64_t epoch) {
    config_->fusion_threshold_bytes = p.fusion_threshold_bytes;
    config_->cycle_time_us = p.cycle_time_us;
    const char *log = env_setting("AUTOTUNE_LOG");
    if (log == nullptr) return;
    std::string path = strprintf("%s.%d", log, rank_);
    std::FILE *f = std::fopen(path.c_str(), epoch == 1 ? "w" : "a");
    if (f == nullptr) return;
    std::fprintf(f, "%llu,%lld,%.3f\n", static_cast<unsigned long long>(epoch),
                 static_cast<long long>(p.fusion_threshold_bytes), p.cycle_time_us / 1000.0);
    std::fclose(f);
}

std::chrono::steady_clock::time_point Engine::held_until() const {
    return held_since_ + std::chrono::microseconds(config_->cycle_time_us.load());
}

void Engine::sleep_until_work(std::unique_lock<std::mutex> &drive) {
    // No idle spin: a caller waiting on a request drives the passes itself (loop()). An
    // engine that spun kept its CPU from the caller when both shared one (256 x 4 KiB step
    // 1290 -> 1160 us without it), and unpinned it still had to wake the sleeping caller on
    // another CPU, ~30 us on this VM (2 ranks unbound, 8 B: 4 or ~35 us, against 1.9 us with
    // the caller driving).
    if (!transport_aborted_ && transport_->progress()) return;
    if (work_queued_.load() || stop_flag_.load()) return;
    if (!transport_aborted_ && !transport_->arm()) return;
    Deadline next = Deadline::after_ms(kMaxSleepMs);
    for (const RequestPtr &r : pending_.all())
        next = Deadline::earlier(next, r->deadline);
    if (!held_.empty()) {
        auto left = std::chrono::duration_cast<std::chrono::microseconds>(
            held_until() - std::chrono::steady_clock::now());
        next = Deadline::earlier(next, Deadline::after_ms((left.count() + 999) / 1000));
    }
    struct pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {transport_->event_fd(), POLLIN, 0}};
    int nfds = transport_aborted_ ? 1 : 2;
    // Dekker-style with enqueue_group: this store, then its check of work_queued_; there the
    // store of work_queued_, then the check of sleeping_. One of the two sees the other.
    sleeping_.store(true);
    if (work_queued_.load() || stop_flag_.load()) {
        sleeping_.store(false);
        return;
    }
    drive.unlock();  // a waiting caller may run passes meanwhile
    ::poll(fds, nfds, static_cast<int>(next.remaining_ms(kMaxSleepMs)));
    sleeping_.store(false);
    drive.lock();
    uint64_t drained;
    ssize_t ignored = ::read(wake_fd_, &drained, sizeof drained);
    (void)ignored;
}

}  // namespace hvd::engine
