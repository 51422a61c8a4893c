// SPDX-License-Identifier: Apache-2.0
// One libhvd context (what hvd_context_h points to): membership in a job, its rendezvous
// connection, transport, engine and failure monitor. Created by a blocking, collective init
// and torn down by finalize, in reverse order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/elastic_client.h"
#include "bootstrap/kv_store.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/rendezvous_file.h"
#include "collectives/hierarchy.h"
#include "config/runtime_config.h"
#include "diagnostics/timeline.h"
#include "engine/abort_state.h"
#include "engine/engine.h"
#include "engine/failure_monitor.h"
#include "engine/process_set_table.h"
#include "shm/shm_group.h"
#include "topology/host_topology.h"
#include "topology/rank_locality.h"
#include "transport/transport.h"

namespace hvd::engine {

// init parameters after defaults were applied (copied once at the ABI boundary).
struct InitConfig {
    bool explicit_rank = false;  // rank/size given, not from a launcher
    int32_t rank = 0;
    int32_t size = 0;
    bool has_unique_id = false;
    hvd_unique_id_t unique_id{};
    int64_t bootstrap_timeout_ms = 120000;
    int64_t op_timeout_ms = 1800000;
};

class Context {
  public:
    // Joins the job. Throws hvd::Error with a message naming this rank and what failed.
    explicit Context(const InitConfig &config);
    ~Context();  // calls finalize() if needed
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    // Leaves the job (see hvd_finalize). Idempotent.
    void finalize();
    // Aborts (see hvd_abort). Thread-safe, never blocks.
    void abort(hvd_status_t status, const std::string &detail);

    int32_t rank() const { return rank_; }
    int32_t size() const { return size_; }
    const topology::HostPlacement &placement() const { return placement_; }
    // Where this rank runs on its host: NUMA node, package, nearest NIC and GPU (hwloc's).
    const topology::RankLocality &locality() const { return locality_; }
    int64_t op_timeout_ms() const { return config_.op_timeout_ms; }
    AbortState &abort_state() { return abort_; }
    Engine &engine() { return *engine_; }
    // For request handles: a waiter that drives the engine keeps it alive while it does.
    std::weak_ptr<Engine> engine_ref() const { return engine_; }
    ProcessSetTable &process_sets() { return sets_; }
    diagnostics::Timeline &timeline() { return timeline_; }
    config::RuntimeConfig &config() { return runtime_; }
    // How this context's waiters poll (HVD_SPIN_US, HVD_SPIN_YIELD), chosen at init.
    const transport::SpinPolicy &spin_policy() const { return spin_policy_; }

    // An elastic job's worker (bootstrap/elastic_client.h): the membership round this context
    // joined (-1 when the job is not elastic) and whether workers wait to join a later one,
    // asked of hvdrun's membership service (bounded by the bootstrap timeout). Throws
    // hvd::Error when the service cannot be asked.
    void elastic_membership(int64_t *round, bool *pending) const;

  private:
    // Elastic job: waits for this worker's place in the next membership round and keeps it
    // as the launch variables rendezvous() reads.
    void join_elastic_round();
    void rendezvous(const Deadline &deadline);
    // Hands rank 0's endpoint (given on rank 0) to every rank through the launcher's store for
    // the given rendezvous round; returns rank 0's endpoint.
    using LauncherExchange = std::function<bootstrap::RendezvousEndpoint(
        const bootstrap::RendezvousEndpoint &mine, uint64_t round)>;
    // rendezvous() for a job whose launcher offers a key-value store and no rendezvous address
    // (LaunchInfo::rdv_via_pmix, pmi_fd): rank 0 listens on this host's advertised address
    // and hands it over through `exchange` (`channel` names it in the log).
    void rendezvous_through_launcher(const bootstrap::LaunchInfo &li, const char *channel,
                                     const Deadline &deadline, const LauncherExchange &exchange);
    // Polling before sleeping pays off only while every local rank has a CPU of its own.
    // Hands the policy to the transport and the shared-memory group.
    void choose_spin_policy();
    void connect_transport(const std::vector<std::string> &hosts, const Deadline &deadline);
    // A single-host job maps one shared-memory segment for its collectives; any rank that
    // cannot (HVD_SHM=0, /dev/shm absent or full) makes all of them stay on the transport. A
    // job spanning hosts maps one per host for its hierarchy, where one applies
    // (engine/host_groups.h).
    void attach_shared_memory(const std::vector<std::string> &hosts, const Deadline &deadline);
    void finalize_barrier(bootstrap::KvClient &kv, const Deadline &deadline);

    InitConfig config_;
    int32_t rank_ = 0;
    int32_t size_ = 0;
    topology::HostPlacement placement_;
    topology::RankLocality locality_;
    transport::SpinPolicy spin_policy_;
    AbortState abort_;
    ProcessSetTable sets_;
    diagnostics::Timeline timeline_;  // declared before engine_: outlives it
    config::RuntimeConfig runtime_{config::process_config()};  // likewise
    std::string rendezvous_file_job_;              // non-empty on rank 0 of a file rendezvous
    std::string rendezvous_addr_;                  // the rendezvous server's host
    std::shared_ptr<bootstrap::KvServer> server_;  // when this process hosts the rendezvous
    std::unique_ptr<bootstrap::KvClient> kv_;      // during init; then owned by monitor_
    std::unique_ptr<transport::Transport> transport_;
    std::unique_ptr<shm::Group> shm_;  // declared before engine_: outlives it
    // A job spanning hosts: its hosts for the hierarchical collectives (over shm_, this host's
    // group); null otherwise. Declared before engine_: outlives it.
    std::unique_ptr<collectives::Hierarchy> hierarchy_;
    std::shared_ptr<Engine> engine_;
    std::unique_ptr<FailureMonitor> monitor_;
    bool finalized_ = false;
    bool elastic_ = false;
    bootstrap::elastic::ServiceEndpoint elastic_service_;
    int64_t elastic_round_ = -1;
    std::vector<std::pair<std::string, std::string>> round_vars_;  // HVD_RANK ... of the round
};

}  // namespace hvd::engine
