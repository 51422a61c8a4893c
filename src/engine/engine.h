// The background engine of one context: a thread that negotiates named ops with the other
// ranks (rank 0 coordinates) and runs them in the agreed order. It sleeps on the transport's
// event fd and an eventfd that enqueue() signals: no fixed-interval polling, and an idle
// engine uses no CPU.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collectives/comm.h"
#include "diagnostics/timeline.h"
#include "engine/abort_state.h"
#include "engine/control_channel.h"
#include "engine/intake.h"
#include "engine/pending_ops.h"
#include "engine/process_set_table.h"
#include "engine/request.h"
#include "engine/runner.h"
#include "engine/runtime_config.h"
#include "engine/tuner.h"
#include "engine/watchdog.h"
#include "negotiation/cache_bit_allocator.h"
#include "negotiation/cache_round.h"
#include "negotiation/coordinator.h"
#include "negotiation/response_cache.h"
#include "transport/transport.h"
#include "util/bit_table.h"
#include "util/fifo.h"

namespace hvd::shm {
class Group;
}

namespace hvd::engine {

class Engine {
  public:
    Engine(int32_t rank, int32_t size, transport::Transport *transport, AbortState *abort,
           ProcessSetTable *sets, diagnostics::Timeline *timeline, RuntimeConfig *config);
    ~Engine();  // stops the thread if still running
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // The single-host job's shared-memory group (owned by the context, outlives the engine):
    // collectives of process sets with every rank go through it. Call before start().
    void use_shared_memory(shm::Group *group) { runner_.use_shared_memory(group); }

    void start();
    // Stops the thread; requests not yet completed fail with HVD_ERR_ABORTED.
    void stop();

    // Thread-safe. Queues req; HVD_ERR_INVALID_ARG (with *err) if its name is in flight.
    hvd_status_t enqueue(const RequestPtr &req, std::string *err);
    // Thread-safe. Queues every member of a group, or none of them (a name in flight).
    hvd_status_t enqueue_group(const std::vector<RequestPtr> &reqs, std::string *err);

  private:
    hvd_status_t enqueue_span(const RequestPtr *reqs, size_t n, std::string *err);

  public:
    // Thread-safe. Makes the engine thread look at its queue and the abort state now.
    void wake();

    // Called by a thread about to sleep until req completes: while the engine thread sleeps,
    // runs the engine's passes on this thread, spinning up to the spin window after the last
    // pass that did work (no hand-off to the engine thread and back, each a context switch
    // when both share one CPU, a wake-up of the caller's sleeping CPU when they do not).
    // Only where spinning is allowed (HVD_SPIN_US > 0); yields the CPU between passes that
    // found nothing when unpinned or when ranks share CPUs (HVD_SPIN_YIELD). Returns at
    // once when the engine thread is running a pass. The caller then waits on req as usual
    // (at once complete when this thread finished it). Thread-safe.
    void drive_while_waiting(const Request &req, const Deadline &until);

    // Next auto-name for unnamed ops of one kind in one process set ("allreduce.noname.7").
    // Thread-safe.
    std::string auto_name(OpType type, uint16_t set_id) { return intake_.auto_name(type, set_id); }

    // Tensor fusion statistics: collectives that ran several tensors, and those tensors.
    uint64_t fused_collectives() const { return runner_.fused_collectives(); }
    uint64_t fused_tensors() const { return runner_.fused_tensors(); }
    // Response cache statistics: ops this rank ran from the cache (agreed by a round of bit
    // vectors), and ops it ran as the coordinator's responses.
    uint64_t cache_hits() const { return cache_hits_.load(); }
    uint64_t negotiated() const { return negotiated_.load(); }

  private:
    void loop();
    bool run_pass();  // one round of everything; true if anything happened. Under drive_mu_.
    // run_pass() by a caller holding `drive`; on an abort, lets go of it and wakes the engine
    // thread, which fails what is left.
    bool driven_pass(std::unique_lock<std::mutex> &drive);
    bool take_new_requests();
    bool order_responses();
    bool receive_control();
    bool run_responses();

    void deliver_responses(std::vector<Response> responses);
    std::vector<int32_t> recipients(const Response &r) const;
    // The stall inspector's check (coordinator): a stall shutdown fails the waiting ops on
    // every rank that enqueued them and aborts the context.
    void inspect_stalls();
    // Lets the control messages just sent leave, and this rank run its own share of them,
    // before an abort closes the endpoints.
    void flush_before_abort();
    void fail_everything(hvd_status_t status, const std::string &detail);
    void sleep_until_work(std::unique_lock<std::mutex> &drive);
    bool unpinned_ = true;  // the engine thread (and so its caller) may use several CPUs

    // Response cache (engine_cache.cc). Ready requests go to the cache's rounds or to the
    // coordinator; batches of coordinator responses and finished rounds are put in the order
    // rank 0 gave them, into responses_.
    void report_ready(const std::vector<RequestPtr> &reqs);
    void report_to_coordinator(const std::vector<OpMeta> &metas);
    void accept_batch(ResponseBatch batch);
    bool receive_votes();
    bool advance_cache();
    void cast_vote();
    void run_round(const RoundOutcome &outcome);
    void schedule_batch(ResponseBatch &batch);
    void flush_cached(uint32_t bit);  // its waiting request goes to the coordinator instead
    void cache_bit_changed(uint32_t bit);
    void mark_stale_cached();
    // Grouped ops (engine_cache_groups.cc): a group's members wait on their bits and run from
    // the cache all together, or all go to the coordinator, which holds a group until all of
    // its members are ready. size_t: members reported, from reqs[first] on.
    size_t report_group(const std::vector<RequestPtr> &reqs, size_t first,
                        std::chrono::steady_clock::time_point now,
                        std::vector<OpMeta> *to_coordinator);
    // The group's members into responses_ if every one's bit is agreed and unchanged; false
    // (nothing queued) otherwise.
    bool run_group(const std::vector<uint32_t> &bits, const RoundOutcome &outcome);
    // The cache's answer for req, and its bit.
    ResponseCache::Lookup look_up(Request &req, uint32_t *bit);
    // req goes to the coordinator, with an invalid vote for its bit if the cache knew its name.
    void hand_to_coordinator(const Request &req, ResponseCache::Lookup found, uint32_t bit,
                             std::vector<OpMeta> *to_coordinator);
    // The cached response of the request waiting on `bit` into responses_, with that request;
    // the wait ends.
    void queue_cached(uint32_t bit);
    struct CachedWait {
        RequestPtr req;
        std::chrono::steady_clock::time_point since;
        bool stale = false;  // waited too long: voted invalid, not ready
        // A grouped op's members' bits, shared by their waits; null for a single op.
        std::shared_ptr<const std::vector<uint32_t>> group_bits;
    };

    const int32_t rank_;
    const int32_t size_;
    transport::Transport *transport_;
    AbortState *abort_;
    int wake_fd_ = -1;
    std::thread thread_;
    // stop_flag_: a stop was requested. sleeping_: the engine is (about to be) blocked in
    // poll, so an enqueue must write the eventfd; otherwise it need not. The enqueue that
    // writes it clears it.
    std::atomic<bool> stop_flag_{false};
    std::atomic<bool> sleeping_{false};
    // Held by whichever thread runs a pass: the engine thread, except while it sleeps, or a
    // waiting caller (drive_while_waiting). The engine-thread state below is only touched
    // under it.
    std::mutex drive_mu_;
    std::atomic<bool> waiters_drive_{false};
    std::atomic<int> drivers_{0};  // threads inside drive_while_waiting (stop() waits for 0)

    Intake intake_;  // shared with callers

    // Engine-thread state.
    ProcessSetTable *sets_;
    diagnostics::Timeline *timeline_;
    RuntimeConfig *config_;
    // Cycle time: requests taken from the queue but held back to be reported together.
    std::vector<RequestPtr> held_;
    std::vector<RequestPtr> fresh_;  // take_new_requests' swap partner of the intake's queue
    std::chrono::steady_clock::time_point held_since_{};
    std::chrono::steady_clock::time_point held_until() const;
    PendingOps pending_;  // reported (to the coordinator or the cache), not yet run
    // This rank's pending request of that name, or null.
    RequestPtr find_pending(uint16_t set_id, const std::string &name);
    util::Fifo<Response> responses_;  // agreed order, not yet run (no allocation once warm)
    ControlChannel control_;
    std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
    std::vector<Response> outbox_;              // coordinator: emitted, not yet delivered
    std::deque<Response> undelivered_;          // coordinator: waiting for a cache round
    Watchdog watchdog_;
    Tuner tuner_;
    Runner runner_;
    // Response cache state (engine_cache.cc).
    ResponseCache cache_;
    std::unique_ptr<CacheBitAllocator> cache_bits_;  // rank 0
    RoundTable rounds_;
    uint64_t rounds_voted_ = 0;                  // rounds this rank voted in (rank 0: started)
    uint64_t rounds_done_ = 0;                   // rounds put into responses_
    util::BitTable<CachedWait> cached_waiting_;  // by bit
    BitVector invalid_;                          // to vote invalid in the next round
    // Invalid bits of this rank's vote in the round in flight that still mean the op they
    // meant when voted (the bit has not changed since).
    std::set<uint32_t> voted_invalid_;
    bool cache_news_ = false;       // something to vote on that the last vote did not have
    bool cache_suspended_ = false;  // a rank has joined: everything goes to the coordinator
    std::vector<OpMeta> flushed_;   // cached requests to report to the coordinator
    std::vector<ResponseCache::Lookup> group_found_;  // report_group's lookups (no allocation)
    std::chrono::steady_clock::time_point next_stale_check_{};
    std::map<uint64_t, ResponseBatch> batches_in_;  // by index, not yet put in order
    uint64_t batches_scheduled_ = 0;
    std::vector<uint64_t> batches_sent_;  // rank 0: batches sent to each rank
    uint32_t cached_seq_ = 0;
    std::atomic<uint64_t> cache_hits_{0};
    std::atomic<uint64_t> negotiated_{0};
};

}  // namespace hvd::engine
