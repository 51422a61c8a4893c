// SPDX-License-Identifier: Apache-2.0
// The elastic mode of hvdrun (--min-np / --max-np / --host-discovery-script): which workers
// run where, the membership service they join rounds through, and when the job can no longer
// go on. The supervisor starts and reaps the processes and calls in from its poll loop.
//
// Workers are numbered in start order (HVD_WORKER_ID) and get HVD_ELASTIC_ADDR/PORT instead
// of a rank; each hvd_init asks the service for its place in the next round (membership.h).
// A worker that exits non-zero before any has finished is dropped, its host is excluded from
// later starts (as horovodrun blacklists it; for the rest of the job, or for a cooldown with
// cooldown_min/max: host_blacklist.h), a free discovered slot of another host gets a worker in its
// place, and the job goes on while at least min_np workers live. Below that, with a discovery
// script or a cooldown, the job waits up to timeout_seconds for slots to bring it back to min_np;
// without either, or after that wait, every waiting join is refused and the supervisor ends the
// job. A host back from its cooldown gets workers on its free slots, up to max_np, as an added
// host does. A change of the discovered hosts starts workers on their free slots, up to max_np;
// they wait in hvd_init until the others ask again (at their next commit, elastic.run's
// HostsUpdatedInterrupt) and the next round forms. A host no longer discovered (or with fewer
// slots) loses its workers: they leave the membership at once, so the others are told as of added
// workers and re-form at their next commit, and each is stopped (take_stops) when it asks to join
// that round or after stop_grace_seconds. More than reset_limit membership changes end the job.
#pragma once

#include <poll.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "binding_policy.h"
#include "host_blacklist.h"
#include "host_discovery.h"
#include "launch_plan.h"
#include "membership.h"
#include "membership_server.h"

namespace hvdrun {

struct ElasticConfig {
    int num_proc = 0;  // workers started at first
    int min_np = 1;
    int max_np = 1;
    double timeout_seconds = 600.0;  // --elastic-timeout: a round's wait for late workers
    std::string discovery_script;    // empty: the -H / --hostfile hosts, fixed
    double discovery_interval = 1.0;
    // --elastic-controller: another program starts the workers (controlled_job.h); launches
    // carry only their variables, and host lists come from update_hosts().
    bool controlled = false;
    int reset_limit = -1;        // --reset-limit: changes allowed; -1 no limit
    double cooldown_min = -1.0;  // --blacklist-cooldown-range; -1: a failed host stays out
    double cooldown_max = -1.0;
    int default_slots = 1;            // --slots: a discovered host's slots when it gives none
    double stop_grace_seconds = 5.0;  // a removed host's worker: the wait for its next commit
    // --bind-to (not under a controller): each worker runs through `hvdrun_path --exec-bound`
    // on its host (remote_binding.h), pinned as local rank `slot` of the host's slots would be,
    // its slot the lowest one no running worker of that host holds.
    BindPolicy binding;
    bool report_bindings = false;
    std::string hvdrun_path;
};

class ElasticDriver {
  public:
    // Throws std::runtime_error when the service cannot listen.
    ElasticDriver(const ElasticConfig &config, LaunchContext ctx, std::vector<std::string> command,
                  std::vector<HostSlots> hosts);
    ~ElasticDriver();

    // Workers to start now: num_proc at first, later those on added hosts.
    std::vector<RankLaunch> take_launches();
    // Workers to stop now (SIGTERM, then SIGKILL after a bounded wait; under a controller, a
    // `stop` line): those of hosts no longer discovered. Their exits are no failure.
    std::vector<int> take_stops();

    void add_poll_fds(std::vector<pollfd> *fds) const;
    void on_poll(const pollfd *fds, size_t count);
    // Forms rounds, runs discovery, expires connections; after every poll.
    void tick();
    int poll_timeout_ms() const;
    // The hosts now available (a discovery run's or the controller's list): a change starts
    // workers on their free slots, up to max_np.
    void update_hosts(std::vector<HostSlots> found);

    // Worker `id` exited with shell-style `code`. Empty while the job goes on, else why it ends.
    std::string worker_exited(int id, int code);
    // Non-empty once the job cannot go on.
    const std::string &failure() const { return failure_; }
    int live_workers() const { return membership_.live(); }
    // Whether a worker has finished (exited 0): the job is ending.
    bool finishing() const { return finished_one_; }

  private:
    using Clock = std::chrono::steady_clock;
    void on_join(int id, bool waiting);
    std::string on_status(const hvd::bootstrap::elastic::Request &request) const;
    void start_workers(int up_to);
    // The lowest slot of `host` that no running worker holds.
    int free_slot(const std::string &host) const;
    // --bind-to: whether a worker on `slot` of h is pinned. A host's CPUs are split among the
    // slots it first offered (so that no two workers' CPUs ever overlap); a slot beyond them
    // runs unpinned, with a warning.
    bool bound_slot(const HostSlots &h, int slot);
    void grow(const std::string &why);
    void exclude_host(const std::string &host);
    void remove_gone_workers();
    void stop_leaving(Clock::time_point now);
    void count_change();
    void below_min(const std::string &why);
    void check_below_min(Clock::time_point now);
    const char *more_slots_source() const;
    void form_round();
    void fail(const std::string &why);
    std::string rendezvous_host(const std::vector<int> &ids) const;

    ElasticConfig config_;
    LaunchContext ctx_;
    std::vector<std::string> command_;
    std::vector<HostSlots> hosts_;
    HostBlacklist blacklist_;  // hosts where a worker failed
    struct LiveWorker {
        std::string host;
        int slot = 0;  // its place among the host's slots
    };
    std::map<int, LiveWorker> live_;  // worker id -> where it runs, while it runs
    // Workers that left the membership (their host no longer offers their slot) but still
    // run: their slots stay taken until they exit.
    std::map<int, LiveWorker> leaving_slots_;
    std::map<std::string, int> bind_size_;  // --bind-to: the slots a host offered first
    Membership membership_;
    std::unique_ptr<MembershipServer> server_;
    std::unique_ptr<HostDiscovery> discovery_;
    std::string service_addr_;  // what workers on other hosts connect to
    std::vector<RankLaunch> launches_;
    std::map<int, Clock::time_point> leaving_;  // removed host's worker id -> when to stop it
    std::set<int> stopped_;                     // stopped removed hosts' workers, until reaped
    std::vector<int> stops_;
    int64_t changed_round_ = 0;  // the newest round a change was counted against
    int changes_ = 0;            // membership changes since the first round
    bool below_min_set_ = false;
    Clock::time_point below_min_since_;
    int next_id_ = 0;
    bool finished_one_ = false;  // a worker exited 0: the job is ending
    bool waiting_since_set_ = false;
    Clock::time_point waiting_since_;
    std::string failure_;
};

}  // namespace hvdrun
