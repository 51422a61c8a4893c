// SPDX-License-Identifier: Apache-2.0
#include "engine/engine.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/error.h"
#include "common/log.h"
#include "common/scoped_count.h"
#include "config/read.h"
#include "engine/cache_negotiator.h"
#include "negotiation/control_tags.h"

namespace hvd::engine {

namespace {

// How long the engine polls before sleeping after its last piece of work.
// Longest sleep: bounds how late an op timeout is noticed. Idle wake-ups at this period
// cost nothing measurable.
constexpr int64_t kMaxSleepMs = 1000;
// How often an idle engine polls device work that completed on callers' streams.
constexpr int64_t kDeviceWorkPollMs = 5;

// A deadline at `t` in whole milliseconds (poll's unit), rounded up so that a sleep until it
// does not end early; one already past expires at once.
Deadline deadline_at(std::chrono::steady_clock::time_point t) {
    auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(t - std::chrono::steady_clock::now());
    return Deadline::after_ms(left.count() > 0 ? (left.count() + 999) / 1000 : 0);
}

}  // namespace

Engine::Engine(int32_t rank, int32_t size, transport::Transport *transport, AbortState *abort,
               ProcessSetTable *sets, diagnostics::Timeline *timeline, RuntimeConfig *config)
    : rank_(rank),
      transport_(transport),
      abort_(abort),
      timeline_(timeline),
      config_(config),
      intake_(rank, timeline),
      control_(rank, transport),
      watchdog_(rank, abort, config),
      tuner_(rank, size, config),
      negotiator_(std::make_unique<CacheNegotiator>(
          NegotiatorParts{rank, size, &control_, &intake_, &pending_, config})),
      runner_(RunnerParts{rank, size, transport, abort, sets, timeline, &pending_, &intake_,
                          &tuner_, &watchdog_}) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: eventfd failed", rank));
    std::vector<int32_t> all(static_cast<size_t>(size));
    for (int32_t r = 0; r < size; ++r)
        all[r] = r;
    sets->add(0, std::move(all), rank);
}

Engine::~Engine() {
    stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Engine::start() {
    thread_ = std::thread([this] { loop(); });
}

void Engine::stop() {
    intake_.close();
    stop_flag_.store(true);
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

hvd_status_t Engine::enqueue_span(const RequestPtr *reqs, size_t n, std::string *err) {
    hvd_status_t s = intake_.enqueue(reqs, n, err);
    if (s != HVD_OK) return s;
    // An engine that is awake (running a pass) sees the queued work without a system call. The
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
    waiters_drive_.store(transport_->spin_policy().window.count() > 0);
    if (waiters_drive_.load() && config::get_bool(config::Setting::kEngineBatch)) {
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
        worked |= negotiator_->advance(responses_);
        worked |= runner_.run(responses_);
        runner_.check_device_work();
        negotiation::Coordinator *coordinator = negotiator_->coordinator();
        if (coordinator != nullptr) tuner_.step(control_);
        control_.reap();
        watchdog_.check_timeouts(pending_, coordinator);
        if (coordinator != nullptr) inspect_stalls();
    } catch (const std::exception &) {
        std::string message;
        hvd_status_t s = thrown_status(rank_, &message);
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
    const auto window = transport_->spin_policy().window;
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
        } else if (transport_->spin_policy().yield ||
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

bool Engine::take_new_requests() {
    // Member vectors swapped with queue_, cleared but never freed: no allocation per pass.
    std::vector<RequestPtr> &fresh = fresh_;
    intake_.take(&fresh);
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
    // A request the runner finished meanwhile (its process set was destroyed) is not reported.
    held_.erase(std::remove_if(held_.begin(), held_.end(),
                               [&](const RequestPtr &r) { return !pending_.holds(*r); }),
                held_.end());
    negotiator_->report(held_);
    held_.clear();
    return true;
}

bool Engine::receive_control() {
    bool any = negotiator_->receive();
    if (negotiator_->coordinator() != nullptr) return any;  // rank 0 sends the tuned values
    std::string payload;
    int32_t sender = -1;
    while (control_.receive(negotiation::kCoordinator, negotiation::kTuneMessage, &payload, &sender,
                            "autotuned parameters")) {
        tuner_.receive(payload);
        any = true;
    }
    return any;
}

// The stall inspector's shutdown: the expired ops' error responses reach every rank that
// enqueued them before the context aborts.
void Engine::inspect_stalls() {
    std::vector<Response> expired;
    std::string detail = watchdog_.inspect_stalls(*negotiator_->coordinator(), &expired);
    if (expired.empty()) return;
    negotiator_->deliver(std::move(expired));
    flush_before_abort();
    abort_->set(HVD_ERR_TIMED_OUT, detail);
}

void Engine::flush_before_abort() {
    control_.drain_for(std::chrono::milliseconds(500));
    negotiator_->take_agreed(responses_);  // this rank's own batch of the responses just sent
    runner_.run(responses_);
}

void Engine::fail_everything(hvd_status_t status, const std::string &detail) {
    // Only an abort ends device work at once; a finalize lets it finish (the runner's GPU
    // state drains its streams before the communicators go).
    if (abort_->aborted()) runner_.abort_device_work();
    if (!runner_.transport_aborted()) {
        transport_->abort_all(status);
        runner_.set_transport_aborted();
        control_.drop_all();
    }
    std::vector<RequestPtr> fresh;
    intake_.take(&fresh);
    for (const RequestPtr &req : fresh)
        intake_.finish(req, status, detail);
    for (const RequestPtr &r : pending_.all())
        intake_.finish(r, status, detail);
    pending_.clear();
    responses_.clear();
    negotiator_->drop_waiting();
}

std::chrono::steady_clock::time_point Engine::held_until() const {
    return held_since_ + std::chrono::microseconds(config_->cycle_time_us.load());
}

void Engine::sleep_until_work(std::unique_lock<std::mutex> &drive) {
    // No idle spin: a caller waiting on a request drives the passes itself (loop()). An
    // engine that spun kept its CPU from the caller when both shared one, and unpinned it
    // still had to wake the sleeping caller on another CPU, which cost more than the whole
    // small op with the caller driving (docs/performance.md).
    if (!runner_.transport_aborted() && transport_->progress()) return;
    if (intake_.has_work() || stop_flag_.load()) return;
    if (!runner_.transport_aborted() && !transport_->arm()) return;
    Deadline next = Deadline::after_ms(kMaxSleepMs);
    for (const RequestPtr &r : pending_.all())
        next = Deadline::earlier(next, r->deadline);
    const auto due = negotiator_->pass_due();
    if (due != std::chrono::steady_clock::time_point::max())
        next = Deadline::earlier(next, deadline_at(due));
    if (!held_.empty()) next = Deadline::earlier(next, deadline_at(held_until()));
    if (runner_.watching_device_work())
        next = Deadline::earlier(next, Deadline::after_ms(kDeviceWorkPollMs));
    struct pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {transport_->event_fd(), POLLIN, 0}};
    int nfds = runner_.transport_aborted() ? 1 : 2;
    // Dekker-style with enqueue_span: this store, then the check of the intake's work flag;
    // there the store of that flag, then the check of sleeping_. One of the two sees the other.
    sleeping_.store(true);
    if (intake_.has_work() || stop_flag_.load()) {
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
