#include "engine/engine.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>

#include "common/error.h"
#include "common/log.h"
#include "engine/executor.h"

namespace hvd::engine {

namespace {

// Control messages travel on the control channel of set 0; the sequence field says which.
constexpr uint32_t kReadyMessage = 1;     // worker -> coordinator
constexpr uint32_t kResponseMessage = 2;  // coordinator -> worker
constexpr int32_t kCoordinator = 0;

uint64_t control_tag(int32_t source, uint32_t kind) {
    return transport::make_tag(transport::Channel::kControl, 0, source, kind);
}

// How long the engine polls before sleeping after its last piece of work.
constexpr auto kSpinWindow = std::chrono::microseconds(50);
// Longest sleep: bounds how late an op timeout is noticed. Idle wake-ups at this period
// cost nothing measurable.
constexpr int64_t kMaxSleepMs = 1000;
// How long a transport error waits for the failure monitor to name a dead peer.
constexpr int64_t kFailureReportWaitMs = 2000;

}  // namespace

Engine::Engine(int32_t rank, int32_t size, transport::Transport *transport, AbortState *abort)
    : rank_(rank), size_(size), transport_(transport), abort_(abort) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: eventfd failed", rank));
    if (rank_ == kCoordinator) coordinator_ = std::make_unique<Coordinator>(size_);
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
    }
    wake();
    if (thread_.joinable()) thread_.join();
}

void Engine::wake() {
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_, &one, sizeof one);
    (void)ignored;
}

std::string Engine::auto_name(OpType type) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t n = auto_name_counter_[static_cast<int>(type)]++;
    return strprintf("%s.noname.%llu", op_type_name(type), static_cast<unsigned long long>(n));
}

hvd_status_t Engine::enqueue(const RequestPtr &req, std::string *err) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_requested_) {
            *err = strprintf("rank %d: the context is finalizing", rank_);
            return HVD_ERR_NOT_READY;
        }
        if (!in_flight_names_.insert(req->meta.name).second) {
            *err = strprintf("rank %d: an op named '%s' is already in flight", rank_,
                             req->meta.name.c_str());
            return HVD_ERR_INVALID_ARG;
        }
        queue_.push_back(req);
    }
    wake();
    return HVD_OK;
}

void Engine::loop() {
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stop_requested_) break;
        }
        bool worked = false;
        if (abort_->aborted()) {
            fail_everything(abort_->status(), abort_->detail());
            sleep_until_work();
            continue;
        }
        try {
            worked |= take_new_requests();
            worked |= transport_->progress();
            for (int32_t peer : transport_->take_failed_peers())
                abort_->set(HVD_ERR_PEER_FAILED,
                            strprintf("rank %d: rank %d became unreachable", rank_, peer));
            worked |= receive_control();
            worked |= run_responses();
            reap_sends();
            check_timeouts();
        } catch (const Error &e) {
            abort_->set(e.status(), e.what());
        } catch (const std::exception &e) {
            abort_->set(HVD_ERR_INTERNAL, strprintf("rank %d: engine: %s", rank_, e.what()));
        }
        if (!worked) sleep_until_work();
    }
    fail_everything(abort_->aborted() ? abort_->status() : HVD_ERR_ABORTED,
                    abort_->aborted() ? abort_->detail()
                                      : strprintf("rank %d: context finalized before the op "
                                                  "completed",
                                                  rank_));
}

bool Engine::take_new_requests() {
    std::vector<RequestPtr> fresh;
    {
        std::lock_guard<std::mutex> lock(mu_);
        fresh.swap(queue_);
    }
    if (fresh.empty()) return false;
    std::vector<OpMeta> metas;
    for (const RequestPtr &req : fresh) {
        pending_[req->meta.name] = req;
        metas.push_back(req->meta);
    }
    if (coordinator_) {
        std::vector<Response> done;
        coordinator_->add_ready(rank_, metas, &done);
        deliver_responses(done);
    } else {
        send_control(kCoordinator, kReadyMessage, encode_ready(metas));
    }
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
            std::vector<Response> done;
            coordinator_->add_ready(transport::tag_source(c.sender_tag), decode_ready(payload),
                                    &done);
            deliver_responses(done);
            any = true;
        }
    } else {
        while (transport_->try_recv_any(control_tag(kCoordinator, kResponseMessage),
                                        transport::kTagFullMask, &payload, &c)) {
            if (c.status != HVD_OK)
                throw Error(c.status, strprintf("rank %d: receiving the coordinator's answer "
                                                "failed",
                                                rank_));
            for (Response &r : decode_responses(payload))
                responses_.push_back(std::move(r));
            any = true;
        }
    }
    return any;
}

void Engine::deliver_responses(const std::vector<Response> &responses) {
    if (responses.empty()) return;
    std::string payload = encode_responses(responses);
    for (int32_t peer = 0; peer < size_; ++peer)
        if (peer != rank_) send_control(peer, kResponseMessage, payload);
    for (const Response &r : responses)
        responses_.push_back(r);
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
        Response resp = std::move(responses_.front());
        responses_.pop_front();
        auto it = pending_.find(resp.name);
        if (it == pending_.end())
            throw Error(HVD_ERR_INTERNAL,
                        strprintf("rank %d: the coordinator scheduled '%s', which this rank never "
                                  "enqueued",
                                  rank_, resp.name.c_str()));
        RequestPtr req = it->second;
        pending_.erase(it);
        any = true;
        if (resp.status != HVD_OK) {
            finish(req, static_cast<hvd_status_t>(resp.status), resp.message);
            continue;
        }
        collectives::Comm comm;
        comm.transport = transport_;
        comm.members.resize(static_cast<size_t>(size_));
        for (int32_t r = 0; r < size_; ++r)
            comm.members[r] = r;
        comm.my_index = rank_;
        comm.seq = resp.seq;
        comm.deadline = req->deadline;
        comm.abort_status = abort_->flag();
        comm.scratch = &scratch_;
        std::string message;
        hvd_status_t s = execute_response(comm, resp, *req, &message);
        if (s != HVD_OK && s != HVD_ERR_MISMATCH && s != HVD_ERR_INVALID_ARG) {
            // A collective that failed half way leaves the ranks out of step: the context
            // cannot go on.
            if (s == HVD_ERR_TIMED_OUT)
                message = strprintf("rank %d: %s '%s' timed out", rank_, op_type_name(resp.type),
                                    resp.name.c_str());
            if (s == HVD_ERR_TRANSPORT) await_failure_report();
            abort_->set(s, message);
            transport_aborted_ = true;  // wait_all aborted the transport already
            s = abort_->status();       // a dead peer, when that is the cause
            message = abort_->detail();
        }
        finish(req, s, message);
    }
    return any;
}

void Engine::await_failure_report() {
    // A transport error is often the first sign of a dead peer on this host (its shared
    // memory or process_vm_readv fails before the rendezvous server has reported it). Give
    // the failure monitor a moment, so the request reports the cause: HVD_ERR_PEER_FAILED.
    Deadline limit = Deadline::after_ms(kFailureReportWaitMs);
    while (!abort_->aborted() && !limit.expired())
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void Engine::check_timeouts() {
    for (auto &kv : pending_) {
        if (!kv.second->deadline.expired()) continue;
        std::string detail = strprintf("rank %d: %s '%s' timed out waiting for the other ranks",
                                       rank_, op_type_name(kv.second->meta.type), kv.first.c_str());
        if (coordinator_) {
            for (const auto &w : coordinator_->waiting()) {
                if (w.name != kv.first) continue;
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
    {
        std::lock_guard<std::mutex> lock(mu_);
        in_flight_names_.erase(req->meta.name);
    }
    req->complete(status, message);
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
    }
    for (const RequestPtr &req : fresh)
        finish(req, status, detail);
    for (auto &kv : pending_)
        finish(kv.second, status, detail);
    pending_.clear();
    responses_.clear();
}

void Engine::sleep_until_work() {
    // Spin briefly: the next message of a busy job usually arrives within microseconds, and
    // waking a sleeping thread costs far more on a virtual machine.
    auto spin_until = std::chrono::steady_clock::now() + kSpinWindow;
    while (!transport_aborted_ && std::chrono::steady_clock::now() < spin_until) {
        if (transport_->progress()) return;
        std::lock_guard<std::mutex> lock(mu_);
        if (!queue_.empty() || stop_requested_) return;
    }
    if (!transport_aborted_ && !transport_->arm()) return;
    Deadline next = Deadline::after_ms(kMaxSleepMs);
    for (auto &kv : pending_)
        next = Deadline::earlier(next, kv.second->deadline);
    struct pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {transport_->event_fd(), POLLIN, 0}};
    int nfds = transport_aborted_ ? 1 : 2;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (!queue_.empty() || stop_requested_) return;
    }
    ::poll(fds, nfds, static_cast<int>(next.remaining_ms(kMaxSleepMs)));
    uint64_t drained;
    ssize_t ignored = ::read(wake_fd_, &drained, sizeof drained);
    (void)ignored;
}

}  // namespace hvd::engine
