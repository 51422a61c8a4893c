// SPDX-License-Identifier: Apache-2.0
#include "engine/context.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <thread>

#include "bootstrap/elastic_client.h"
#include "bootstrap/hex.h"
#include "bootstrap/host_address.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/loopback.h"
#include "bootstrap/pmi1_exchange.h"
#include "bootstrap/pmix_exchange.h"
#include "bootstrap/rendezvous_file.h"
#include "bootstrap/secret.h"
#include "bootstrap/unique_id.h"
#include "common/error.h"
#include "common/log.h"
#include "config/read.h"
#include "engine/host_groups.h"
#include "engine/peer_reachability.h"
#include "negotiation/wire_protocol.h"
#include "topology/local_topology.h"
#include "topology/network.h"
#include "transport/ucx/ucx_transport.h"

namespace hvd::engine {

namespace {

// A per-attempt connect limit for file rendezvous: a stale file from an earlier job with
// the same id points at a dead port, so re-read the file and try again.
constexpr int64_t kFileAttemptMs = 2000;
// A sleep of the finalize barrier between transport events (it also ends when the barrier does).
constexpr int kFinalizePollMs = 5;
// Pause before looking up the rendezvous file again after a failed attempt.
constexpr int kFileRetryMs = 20;

}  // namespace

Context::Context(const InitConfig &config) : config_(config) {
    if (!config_.has_unique_id) join_elastic_round();
    Deadline deadline = Deadline::after_ms(config_.bootstrap_timeout_ms);
    rendezvous(deadline);
    std::vector<std::string> hosts = hosts_of_same_protocol(
        kv_->all_gather("host", host_entry(topology::this_host_name()), deadline), rank_);
    placement_ = topology::place_rank(hosts, rank_);
    locality_ = topology::this_process_locality();
    connect_transport(hosts, deadline);
    attach_shared_memory(hosts, deadline);
    choose_spin_policy();
    // Horovod's HVD_TIMELINE records the coordinator's view, on rank 0.
    if (const char *path = config::get_string(config::Setting::kTimeline);
        path != nullptr && rank_ == 0)
        timeline_.start(path, config::get_bool(config::Setting::kTimelineMarkCycles), rank_);
    engine_ = std::make_shared<Engine>(rank_, size_, transport_.get(), &abort_, &sets_, &timeline_,
                                       &runtime_);
    monitor_ = std::make_unique<FailureMonitor>(rank_, std::move(kv_), &abort_, engine_.get());
    // A job spanning hosts keeps its host's group for the hierarchy only.
    engine_->use_shared_memory(hierarchy_ ? nullptr : shm_.get(), hosts,
                               config::get_bool(config::Setting::kShm));
    engine_->use_hierarchy(hierarchy_.get());
    engine_->set_locality(locality_);
    engine_->start();
    monitor_->start();
    HVD_LOG(kDebug, rank_, "joined a job of %d ranks (local %d/%d, cross %d/%d); runs on %s", size_,
            placement_.local_rank, placement_.local_size, placement_.cross_rank,
            placement_.cross_size, topology::describe(locality_).c_str());
}

// Rank 0's rendezvous server on the launcher's address (resolved) rather than every
// interface; every interface only when that address cannot be bound here (a name that
// resolves elsewhere, a NAT address).
static std::shared_ptr<bootstrap::KvServer> listen_rendezvous(const std::string &addr, int port,
                                                              const std::string &secret,
                                                              int32_t size, int64_t timeout_ms) {
    std::shared_ptr<bootstrap::KvServer> server;
    std::string bound = addr.empty() ? "*" : addr;
    try {
        server = std::make_shared<bootstrap::KvServer>(addr, port, secret, size, timeout_ms);
    } catch (const Error &e) {
        if (e.status() != HVD_ERR_TRANSPORT || bootstrap::is_loopback_address(addr)) throw;
        HVD_LOG(kDebug, 0, "rendezvous: cannot bind %s (%s); listening on every interface",
                addr.c_str(), e.what());
        server = std::make_shared<bootstrap::KvServer>("", port, secret, size, timeout_ms);
        bound = "*";
    }
    HVD_LOG(kDebug, 0, "rendezvous server listening on %s:%d", bound.c_str(), server->port());
    return server;
}

void Context::join_elastic_round() {
    bootstrap::ElasticLaunch e;
    std::string err;
    if (bootstrap::detect_elastic(bootstrap::process_env(), &elastic_, &e, &err) != HVD_OK)
        throw Error(HVD_ERR_INVALID_ARG, err);
    if (!elastic_) return;
    elastic_service_ = {e.addr, e.port, e.secret, e.worker_id};
    bootstrap::elastic::Assignment a =
        bootstrap::elastic::join_next_round(elastic_service_, Deadline::after_ms(e.timeout_ms));
    elastic_round_ = a.round;
    round_vars_ = {{"HVD_RANK", std::to_string(a.rank)},
                   {"HVD_SIZE", std::to_string(a.size)},
                   {"HVD_RENDEZVOUS_ADDR", a.rdv_addr},
                   {"HVD_RENDEZVOUS_PORT", std::to_string(a.rdv_port)}};
    HVD_LOG(kDebug, a.rank, "worker %lld: rank %d of %d in membership round %lld",
            static_cast<long long>(e.worker_id), a.rank, a.size, static_cast<long long>(a.round));
}

void Context::elastic_membership(int64_t *round, bool *pending) const {
    *round = elastic_round_;
    *pending = false;
    if (!elastic_) return;
    bootstrap::elastic::Status s = bootstrap::elastic::query_status(
        elastic_service_, elastic_round_, Deadline::after_ms(config_.bootstrap_timeout_ms));
    *pending = s.pending || s.round > elastic_round_;
}

void Context::rendezvous(const Deadline &deadline) {
    if (config_.has_unique_id) {
        bootstrap::UniqueIdContents id = bootstrap::parse_unique_id(config_.unique_id);
        rank_ = config_.rank;
        size_ = config_.size;
        server_ = bootstrap::local_server_for(id);
        rendezvous_addr_ = id.addr;
        kv_ = std::make_unique<bootstrap::KvClient>(id.addr, id.port, id.secret, rank_, size_,
                                                    deadline);
        return;
    }
    bootstrap::LaunchInfo li;
    std::string err;
    bootstrap::EnvLookup env = bootstrap::with_overrides(bootstrap::process_env(), round_vars_);
    if (bootstrap::uses_pmi_port(env)) {
        const bootstrap::Pmi1PortLaunch p =
            bootstrap::connect_pmi1_port(env("PMI_PORT"), env("PMI_ID"), deadline);
        env = bootstrap::with_overrides(env, {{"PMI_RANK", std::to_string(p.rank)},
                                              {"PMI_SIZE", std::to_string(p.size)},
                                              {"PMI_FD", std::to_string(p.fd)}});
    }
    if (bootstrap::detect_launch(env, &li, &err) != HVD_OK) throw Error(HVD_ERR_INVALID_ARG, err);
    rank_ = li.rank;
    size_ = li.size;
    rendezvous_addr_ = li.rdv_addr;
    if (config_.explicit_rank && (config_.rank != rank_ || config_.size != size_))
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("init asked for rank %d of %d but the launcher (%s) says rank %d "
                              "of %d",
                              config_.rank, config_.size, li.launcher.c_str(), rank_, size_));
    if (li.pmi_fd >= 0) {
        rendezvous_through_launcher(li, "PMI-1", deadline, [&](auto &mine, auto round) {
            return bootstrap::exchange_rendezvous_pmi1(rank_, li.pmi_fd, mine, round, deadline);
        });
        return;
    }
    if (li.rdv_via_pmix) {
        try {
            rendezvous_through_launcher(li, "PMIx", deadline, [&](auto &mine, auto round) {
                return bootstrap::exchange_rendezvous_pmix(rank_, mine, round, deadline);
            });
            return;
        } catch (const Error &e) {
            // A launcher that gives no local size (srun) may have run the job on one host:
            // without PMIx here, the ranks still meet through the file.
            if (e.status() != HVD_ERR_UNSUPPORTED || li.spans_hosts) throw;
            HVD_LOG(kDebug, rank_, "%s; meeting through the single-host rendezvous file", e.what());
            server_.reset();
        }
    }
    if (!li.rdv_addr.empty() && !li.secret_from_file) {
        // HVD_SECRET, or (HVD_ALLOW_UNAUTHENTICATED=1) the derived one.
        if (li.secret_derived && rank_ == 0)
            HVD_LOG(kWarning, rank_,
                    "no HVD_SECRET for a job that may span hosts: its rendezvous secret is "
                    "derived from the job id and address, so anyone who knows them can join "
                    "or disrupt the job (HVD_ALLOW_UNAUTHENTICATED=1)");
        if (rank_ == 0)
            server_ = listen_rendezvous(li.rdv_addr, li.rdv_port, li.secret, size_,
                                        config_.bootstrap_timeout_ms);
        kv_ = std::make_unique<bootstrap::KvClient>(li.rdv_addr, li.rdv_port, li.secret, rank_,
                                                    size_, deadline);
        return;
    }
    // Single host: rank 0 hands its server's address (the launcher's, if any) and the secret
    // (HVD_SECRET, else a random one) over through a private file.
    if (rank_ == 0) {
        std::string secret = li.secret.empty() ? bootstrap::random_secret() : li.secret;
        std::string addr = li.rdv_addr.empty() ? "127.0.0.1" : li.rdv_addr;
        server_ = listen_rendezvous(addr, li.rdv_port, secret, size_, config_.bootstrap_timeout_ms);
        bootstrap::publish_rendezvous(li.job_id, {addr, server_->port(), secret});
        rendezvous_file_job_ = li.job_id;
    }
    for (;;) {
        bootstrap::RendezvousEndpoint ep = bootstrap::lookup_rendezvous(li.job_id, deadline);
        Deadline attempt = Deadline::earlier(deadline, Deadline::after_ms(kFileAttemptMs));
        try {
            kv_ = std::make_unique<bootstrap::KvClient>(ep.addr, ep.port, ep.secret, rank_, size_,
                                                        attempt);
            return;
        } catch (const Error &) {
            if (deadline.expired()) throw;
            // A stale file (an earlier session's server) fails at once: do not spin on it.
            std::this_thread::sleep_for(std::chrono::milliseconds(kFileRetryMs));
        }
    }
}

void Context::rendezvous_through_launcher(const bootstrap::LaunchInfo &li, const char *channel,
                                          const Deadline &deadline,
                                          const LauncherExchange &exchange) {
    // Every process initialises as often as the others, so the n-th rendezvous of each meets
    // under the same key.
    static std::atomic<uint64_t> rounds{0};
    const uint64_t round = rounds.fetch_add(1);
    bootstrap::RendezvousEndpoint mine;
    if (rank_ == 0) {
        bool everywhere = false;
        // A launcher that says every rank is on this host: no need to listen beyond it.
        const bool one_host = li.local_size > 0 && li.local_size == li.size;
        mine.addr = one_host ? "127.0.0.1" : bootstrap::advertised_address(&everywhere);
        mine.secret = li.secret.empty() ? bootstrap::random_secret() : li.secret;
        server_ = listen_rendezvous(everywhere ? "" : mine.addr, 0, mine.secret, size_,
                                    config_.bootstrap_timeout_ms);
        mine.port = server_->port();
        HVD_LOG(kDebug, rank_, "rendezvous through %s: rank 0 listens at %s:%d%s", channel,
                mine.addr.c_str(), mine.port, everywhere ? " (every interface)" : "");
    }
    bootstrap::RendezvousEndpoint ep = exchange(mine, round);
    rendezvous_addr_ = ep.addr;
    kv_ =
        std::make_unique<bootstrap::KvClient>(ep.addr, ep.port, ep.secret, rank_, size_, deadline);
}

void Context::connect_transport(const std::vector<std::string> &hosts, const Deadline &deadline) {
    bool single_host = placement_.local_size == size_;  // placement_ comes from the same hosts
    const std::string interfaces = topology::configured_interfaces();
    transport_ = transport::make_ucx_transport(rank_, size_, single_host, interfaces);
    const char *ucx_devices = std::getenv("UCX_NET_DEVICES");
    TransportEntry mine{
        transport_->local_address(),
        topology::local_interface(ucx_devices ? ucx_devices : interfaces, rendezvous_addr_)};
    std::vector<std::string> published =
        kv_->all_gather("ucx", format_transport_entry(mine), deadline);
    std::vector<TransportEntry> entries(published.size());
    std::vector<std::string> all(published.size());
    for (size_t r = 0; r < published.size(); ++r) {
        if (!parse_transport_entry(published[r], &entries[r])) {
            throw Error(HVD_ERR_TRANSPORT,
                        "rank " + std::to_string(r) + " published a malformed transport address");
        }
        all[r] = entries[r].address;
    }
    std::vector<bool> same_host(hosts.size());
    for (size_t r = 0; r < hosts.size(); ++r)
        same_host[r] = hosts[r] == hosts[rank_];
    try {
        transport_->connect(all, same_host);
    } catch (const transport::PeerUnreachable &e) {
        throw_unreachable(rank_, hosts, entries, {{e.peer(), true, e.reason()}},
                          config_.bootstrap_timeout_ms);
    }
    // Between hosts, a peer the network cannot reach fails init here, named, instead of
    // leaving the first collective to wait for it.
    if (!single_host)
        require_reachable(*transport_, hosts, entries, config_.bootstrap_timeout_ms, deadline);
}

void Context::attach_shared_memory(const std::vector<std::string> &hosts,
                                   const Deadline &deadline) {
    if (size_ < 2) return;
    if (placement_.local_size != size_) {  // the same on every rank
        hierarchy_ = set_up_hierarchy(*kv_, rank_, hosts, locality_, deadline, &shm_);
        return;
    }
    // Every rank takes part in the exchanges, even one that wants no shared memory
    // (HVD_SHM=0): a rank that skipped them would leave the others waiting for it.
    const bool wanted = config::get_bool(config::Setting::kShm);
    std::vector<int32_t> everyone(static_cast<size_t>(size_));
    for (int32_t r = 0; r < size_; ++r)
        everyone[r] = r;
    std::string problem;
    shm_ = attach_host_group(*kv_, rank_, everyone, wanted, deadline, &problem);
    if (!shm_ && wanted)
        HVD_LOG(kWarning, rank_,
                "no shared memory for the collectives of this single-host job (%s): they go "
                "through the transport",
                problem.c_str());
}

void Context::choose_spin_policy() {
    long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    // More ranks than CPUs: waiters poll longer but yield after every poll (transport.h).
    const bool oversubscribed = placement_.local_size > cpus;
    // The table's range keeps the window >= 0.
    spin_policy_.window = std::chrono::microseconds(
        config::get_int(config::Setting::kSpinUs, oversubscribed ? 200 : 50));
    spin_policy_.yield = config::get_bool(config::Setting::kSpinYield, oversubscribed);
    transport_->set_spin_policy(spin_policy_);
    if (shm_) shm_->set_spin_policy(spin_policy_);
}

void Context::abort(hvd_status_t status, const std::string &detail) {
    if (status >= 0) status = HVD_ERR_ABORTED;
    abort_.set(status, detail);
    if (engine_) engine_->wake();
    if (monitor_) monitor_->wake();
}

// The rendezvous barrier of finalize, while this thread keeps the (engine-less) transport
// progressing: a peer may still be finishing an op whose completion needs our side's
// protocol messages (e.g. the acknowledgement of a rendezvous-protocol receive we completed),
// and would otherwise wait for it until its op timeout.
void Context::finalize_barrier(bootstrap::KvClient &kv, const Deadline &deadline) {
    std::atomic<bool> done{false};
    std::exception_ptr failure;
    std::thread barrier([&] {
        try {
            kv.all_gather("finalize", "", deadline);
        } catch (...) {
            failure = std::current_exception();
        }
        done.store(true);
    });
    while (!done.load()) {
        if (!transport_ || transport_->progress()) continue;
        if (!transport_->arm()) continue;
        struct pollfd pfd = {transport_->event_fd(), POLLIN, 0};
        ::poll(&pfd, 1, kFinalizePollMs);
    }
    barrier.join();
    if (failure) std::rethrow_exception(failure);
}

void Context::finalize() {
    if (finalized_) return;
    finalized_ = true;
    Deadline deadline = Deadline::after_ms(config_.bootstrap_timeout_ms);
    if (engine_) engine_->stop();
    timeline_.stop();
    std::unique_ptr<bootstrap::KvClient> kv = monitor_ ? monitor_->stop() : std::move(kv_);
    if (kv && !abort_.aborted()) {
        // Wait until every rank is here, so nobody tears down a transport a peer still uses.
        try {
            finalize_barrier(*kv, deadline);
        } catch (const Error &e) {
            abort_.set(e.status(), e.what());
            HVD_LOG(kWarning, rank_, "finalize: %s", e.what());
        }
    }
    engine_.reset();
    hierarchy_.reset();
    shm_.reset();
    transport_.reset();
    if (kv) {
        if (!abort_.aborted()) kv->bye();
        kv.reset();
    }
    monitor_.reset();
    if (!rendezvous_file_job_.empty()) bootstrap::remove_rendezvous(rendezvous_file_job_);
    if (server_ && !abort_.aborted() && !server_->wait_finished(deadline))
        HVD_LOG(kWarning, rank_, "finalize: not every rank left the rendezvous in time");
    server_.reset();
}

Context::~Context() {
    try {
        finalize();
    } catch (...) {
        // Destructors must not throw; finalize logs what went wrong.
    }
}

}  // namespace hvd::engine
