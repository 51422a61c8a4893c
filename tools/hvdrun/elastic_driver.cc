// SPDX-License-Identifier: Apache-2.0
#include "elastic_driver.h"

#include <algorithm>
#include <cstdio>

#include "bootstrap/elastic_protocol.h"

namespace hvdrun {
namespace {

namespace el = hvd::bootstrap::elastic;

constexpr int kMaxPollMs = 200;

bool all_local(const std::vector<HostSlots> &hosts, const std::string &this_host,
               bool discovering) {
    if (discovering) return false;  // later hosts may be anywhere
    return std::all_of(hosts.begin(), hosts.end(),
                       [&](const HostSlots &h) { return is_local_host(h.name, this_host); });
}

}  // namespace

ElasticDriver::ElasticDriver(const ElasticConfig &config, LaunchContext ctx,
                             std::vector<std::string> command, std::vector<HostSlots> hosts)
    : config_(config),
      ctx_(std::move(ctx)),
      command_(std::move(command)),
      hosts_(std::move(hosts)),
      membership_(config.min_np, config.max_np) {
    const bool local =
        all_local(hosts_, ctx_.this_host, config_.controlled || !config_.discovery_script.empty());
    server_ = std::make_unique<MembershipServer>(
        local ? "127.0.0.1" : "", ctx_.job.secret,
        [this](const el::Request &r) { return on_status(r); },
        [this](int id, bool waiting) { on_join(id, waiting); });
    service_addr_ = ctx_.job.rdv_addr.empty() || ctx_.job.rdv_addr == "127.0.0.1"
                        ? ctx_.this_host
                        : ctx_.job.rdv_addr;
    if (!config_.discovery_script.empty())
        discovery_ =
            std::make_unique<HostDiscovery>(config_.discovery_script, config_.discovery_interval);
    start_workers(config_.num_proc);
}

ElasticDriver::~ElasticDriver() = default;

std::vector<RankLaunch> ElasticDriver::take_launches() {
    std::vector<RankLaunch> out;
    out.swap(launches_);
    return out;
}

// Fills the hosts' free slots in order (skipping excluded hosts) until `up_to` workers live.
void ElasticDriver::start_workers(int up_to) {
    up_to = std::min(up_to, config_.max_np);
    for (const HostSlots &h : hosts_) {
        if (excluded_.count(h.name) != 0) continue;
        int on_host = static_cast<int>(
            std::count_if(live_host_.begin(), live_host_.end(),
                          [&](const auto &entry) { return entry.second == h.name; }));
        while (on_host < h.slots && membership_.live() < up_to) {
            const int id = next_id_++;
            const bool local = is_local_host(h.name, ctx_.this_host);
            ElasticWorker w{id, h.name, local ? "127.0.0.1" : service_addr_, server_->port(),
                            config_.timeout_seconds};
            std::vector<EnvVar> vars = worker_variables(w, ctx_.job);
            if (config_.controlled) {
                RankLaunch launch;
                launch.rank = id;
                launch.host = h.name;
                launch.vars = std::move(vars);
                launch.vars.insert(launch.vars.end(), ctx_.exports.begin(), ctx_.exports.end());
                launches_.push_back(std::move(launch));
            } else {
                launches_.push_back(plan_process(id, h.name, std::move(vars), command_, ctx_));
            }
            membership_.add_worker(id, h.name);
            live_host_[id] = h.name;
            ++on_host;
        }
    }
}

void ElasticDriver::add_poll_fds(std::vector<pollfd> *fds) const {
    server_->add_poll_fds(fds);
    if (discovery_) discovery_->add_poll_fds(fds);
}

void ElasticDriver::on_poll(const pollfd *fds, size_t count) {
    std::vector<pollfd> mine;
    server_->add_poll_fds(&mine);
    const size_t n_server = std::min(mine.size(), count);
    server_->on_poll(fds, n_server);
    if (discovery_) discovery_->on_poll(fds + n_server, count - n_server);
}

void ElasticDriver::tick() {
    server_->expire();
    if (!failure_.empty() || finished_one_) return;
    std::vector<HostSlots> found;
    if (discovery_ && discovery_->tick(&found)) update_hosts(std::move(found));
    const bool timed_out =
        waiting_since_set_ && Clock::now() - waiting_since_ >=
                                  std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(config_.timeout_seconds));
    if (membership_.ready(timed_out)) form_round();
}

void ElasticDriver::update_hosts(std::vector<HostSlots> found) {
    if (!failure_.empty() || finished_one_) return;
    bool changed = found.size() != hosts_.size() ||
                   !std::equal(found.begin(), found.end(), hosts_.begin(),
                               [](const HostSlots &a, const HostSlots &b) {
                                   return a.name == b.name && a.slots == b.slots;
                               });
    if (!changed) return;
    hosts_ = std::move(found);
    int before = membership_.live();
    start_workers(config_.max_np);
    if (membership_.live() > before)
        std::fprintf(stderr,
                     "hvdrun: hosts changed: started %d worker(s); they join at the "
                     "others' next commit\n",
                     membership_.live() - before);
}

int ElasticDriver::poll_timeout_ms() const {
    return discovery_ ? std::min(kMaxPollMs, discovery_->poll_timeout_ms()) : kMaxPollMs;
}

void ElasticDriver::on_join(int id, bool waiting) {
    membership_.set_waiting(id, waiting);
    if (!failure_.empty()) {
        server_->answer_join(id, el::error_body(failure_));
        return;
    }
    if (membership_.waiting() > 0 && !waiting_since_set_) {
        waiting_since_set_ = true;
        waiting_since_ = Clock::now();
    }
}

std::string ElasticDriver::on_status(const el::Request &) const {
    return el::status_body(el::Status{membership_.round(), membership_.pending()});
}

// Where a round's ranks reach its rank 0's rendezvous server.
std::string ElasticDriver::rendezvous_host(const std::vector<int> &ids) const {
    const std::string &host0 = membership_.host_of(ids.front());
    bool local = std::all_of(ids.begin(), ids.end(), [&](int id) {
        return is_local_host(membership_.host_of(id), ctx_.this_host);
    });
    if (local) return "127.0.0.1";
    return is_local_host(host0, ctx_.this_host) ? service_addr_ : host0;
}

void ElasticDriver::form_round() {
    std::vector<int> ids = membership_.form();
    waiting_since_set_ = false;
    el::Assignment a;
    a.round = membership_.round();
    a.size = static_cast<int32_t>(ids.size());
    a.rdv_addr = rendezvous_host(ids);
    a.rdv_port = pick_free_port(a.rdv_addr);
    std::string ranks;
    for (size_t rank = 0; rank < ids.size(); ++rank) {
        a.rank = static_cast<int32_t>(rank);
        server_->answer_join(ids[rank], el::assignment_body(a));
        ranks += (rank == 0 ? "" : ", ") + std::to_string(ids[rank]);
    }
    std::fprintf(stderr, "hvdrun: round %lld: %zu rank(s), workers %s in rank order\n",
                 static_cast<long long>(a.round), ids.size(), ranks.c_str());
}

std::string ElasticDriver::worker_exited(int id, int code) {
    auto it = live_host_.find(id);
    std::string host = it != live_host_.end() ? it->second : "";
    if (it != live_host_.end()) live_host_.erase(it);
    membership_.worker_exited(id);
    if (code == 0) {
        finished_one_ = true;
        return "";
    }
    if (finished_one_ || !failure_.empty()) return "the job was ending";
    excluded_.insert(host);
    if (membership_.below_min()) {
        fail("worker " + std::to_string(id) + " on " + host + " failed; " +
             std::to_string(membership_.live()) + " worker(s) left, fewer than --min-np " +
             std::to_string(config_.min_np));
        return failure_;
    }
    return "";
}

void ElasticDriver::fail(const std::string &why) {
    failure_ = why;
    server_->answer_all_joins(el::error_body("the elastic job ends: " + why));
}

}  // namespace hvdrun
