// SPDX-License-Identifier: Apache-2.0
#include "elastic_driver.h"

#include <algorithm>
#include <cstdio>

#include "bootstrap/elastic_protocol.h"
#include "remote_binding.h"

namespace hvdrun {
namespace {

namespace el = hvd::bootstrap::elastic;

constexpr int kMaxPollMs = 200;

template <class Duration>
Duration seconds(double s) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

int slots_of(const std::vector<HostSlots> &hosts, const std::string &name) {
    for (const HostSlots &h : hosts)
        if (h.name == name) return h.slots;
    return 0;
}

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
      blacklist_(config.cooldown_min, config.cooldown_max),
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
        discovery_ = std::make_unique<HostDiscovery>(
            config_.discovery_script, config_.discovery_interval, config_.default_slots);
    start_workers(config_.num_proc);
}

ElasticDriver::~ElasticDriver() = default;

std::vector<RankLaunch> ElasticDriver::take_launches() {
    std::vector<RankLaunch> out;
    out.swap(launches_);
    return out;
}

std::vector<int> ElasticDriver::take_stops() {
    std::vector<int> out;
    out.swap(stops_);
    return out;
}

// Fills the hosts' free slots in order (skipping excluded hosts) until `up_to` workers live.
void ElasticDriver::start_workers(int up_to) {
    up_to = std::min(up_to, config_.max_np);
    const Clock::time_point now = Clock::now();
    for (const HostSlots &h : hosts_) {
        if (blacklist_.excluded(h.name, now)) continue;
        int on_host =
            static_cast<int>(std::count_if(live_.begin(), live_.end(), [&](const auto &entry) {
                return entry.second.host == h.name;
            }));
        while (on_host < h.slots && membership_.live() < up_to) {
            const int id = next_id_++;
            const bool local = is_local_host(h.name, ctx_.this_host);
            ElasticWorker w{id, h.name, local ? "127.0.0.1" : service_addr_, server_->port(),
                            config_.timeout_seconds};
            std::vector<EnvVar> vars = worker_variables(w, ctx_.job);
            const int slot = free_slot(h.name);
            if (config_.controlled) {
                RankLaunch launch;
                launch.rank = id;
                launch.host = h.name;
                launch.vars = std::move(vars);
                launch.vars.insert(launch.vars.end(), ctx_.exports.begin(), ctx_.exports.end());
                launches_.push_back(std::move(launch));
            } else if (config_.binding.bind_to != Level::kNone && bound_slot(h, slot)) {
                Placement p;
                p.rank = id;
                p.host = h.name;
                p.local_rank = slot;
                p.local_size = bind_size_[h.name];
                launches_.push_back(
                    plan_process(id, h.name, std::move(vars),
                                 bound_command(config_.hvdrun_path, config_.binding, p,
                                               config_.report_bindings, command_),
                                 ctx_));
            } else {
                launches_.push_back(plan_process(id, h.name, std::move(vars), command_, ctx_));
            }
            membership_.add_worker(id, h.name);
            live_[id] = LiveWorker{h.name, slot};
            ++on_host;
        }
    }
}

bool ElasticDriver::bound_slot(const HostSlots &h, int slot) {
    const int size = bind_size_.emplace(h.name, h.slots).first->second;
    if (slot < size) return true;
    std::fprintf(stderr,
                 "hvdrun: warning: worker on slot %d of host %s runs unpinned: --bind-to split "
                 "that host's CPUs among the %d slot(s) it first offered\n",
                 slot, h.name.c_str(), size);
    return false;
}

int ElasticDriver::free_slot(const std::string &host) const {
    std::set<int> held;
    for (const auto &[id, w] : live_)
        if (w.host == host) held.insert(w.slot);
    for (const auto &[id, w] : leaving_slots_)
        if (w.host == host) held.insert(w.slot);
    int slot = 0;
    while (held.count(slot) != 0)
        ++slot;
    return slot;
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
    const Clock::time_point now = Clock::now();
    stop_leaving(now);
    if (!failure_.empty() || finished_one_) return;
    std::vector<HostSlots> found;
    if (discovery_ && discovery_->tick(&found)) update_hosts(std::move(found));
    std::vector<std::string> back = blacklist_.take_returned(now);
    if (!back.empty() && failure_.empty()) {
        std::string names;
        for (const std::string &h : back)
            names += (names.empty() ? "" : ", ") + h;
        grow("host(s) " + names + " back from their cooldown");
    }
    check_below_min(now);
    if (!failure_.empty()) return;
    const bool timed_out =
        waiting_since_set_ &&
        now - waiting_since_ >= seconds<Clock::duration>(config_.timeout_seconds);
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
    remove_gone_workers();
    grow("hosts changed");
}

// Workers on free slots of hosts not excluded, up to max_np; they join at the next round.
void ElasticDriver::grow(const std::string &why) {
    int before = membership_.live();
    start_workers(config_.max_np);
    if (membership_.live() <= before) return;
    count_change();
    std::fprintf(stderr, "hvdrun: %s: started %d worker(s); they join at the others' next commit\n",
                 why.c_str(), membership_.live() - before);
}

// Workers beyond their host's discovered slots (all of a host no longer listed) leave the
// membership now, those of a host's lowest slots staying; each is stopped when it asks to join
// the next round (it has left its round at a commit) or after stop_grace_seconds, and holds
// its slot (its CPUs) until it exits.
void ElasticDriver::remove_gone_workers() {
    std::vector<std::pair<int, int>> by_slot;  // (slot, id)
    for (const auto &[id, w] : live_)
        by_slot.emplace_back(w.slot, id);
    std::sort(by_slot.begin(), by_slot.end());
    std::map<std::string, int> kept;
    std::vector<int> gone;
    for (const auto &[slot, id] : by_slot) {
        const std::string &host = live_[id].host;
        if (kept[host] < slots_of(hosts_, host)) {
            ++kept[host];
        } else {
            gone.push_back(id);
        }
    }
    if (gone.empty()) return;
    count_change();
    for (int id : gone) {
        std::fprintf(stderr,
                     "hvdrun: host %s no longer offers worker %d a slot: it leaves the job at "
                     "its next commit (stopped within %g s)\n",
                     live_[id].host.c_str(), id, config_.stop_grace_seconds);
        leaving_slots_[id] = live_[id];
        live_.erase(id);
        membership_.worker_exited(id);
        leaving_[id] = Clock::now() + seconds<Clock::duration>(config_.stop_grace_seconds);
    }
    if (membership_.below_min())
        below_min("host(s) left the discovered hosts; " + std::to_string(membership_.live()) +
                  " worker(s) left");
}

// Leaving workers whose time has come are handed to the supervisor to stop.
void ElasticDriver::stop_leaving(Clock::time_point now) {
    for (auto it = leaving_.begin(); it != leaving_.end();) {
        if (now < it->second) {
            ++it;
            continue;
        }
        std::fprintf(stderr, "hvdrun: stopping worker %d: its host left the job\n", it->first);
        stops_.push_back(it->first);
        stopped_.insert(it->first);
        it = leaving_.erase(it);
    }
}

// The first change after a round formed is one membership change (the round that follows).
void ElasticDriver::count_change() {
    if (membership_.round() == 0 || changed_round_ == membership_.round()) return;
    changed_round_ = membership_.round();
    ++changes_;
    if (config_.reset_limit >= 0 && changes_ > config_.reset_limit)
        fail("the membership changed " + std::to_string(changes_) +
             " time(s), more than --reset-limit " + std::to_string(config_.reset_limit));
}

// Fewer than min_np live: without a discovery script or a cooldown the job ends now, else it
// waits for more slots (check_below_min).
void ElasticDriver::below_min(const std::string &why) {
    const std::string fewer = why + ", fewer than --min-np " + std::to_string(config_.min_np);
    if (!discovery_ && config_.cooldown_min < 0) {
        fail(fewer);
        return;
    }
    if (below_min_set_) return;
    below_min_set_ = true;
    below_min_since_ = Clock::now();
    std::fprintf(stderr, "hvdrun: %s: waiting up to %g s (--elastic-timeout) for %s\n",
                 fewer.c_str(), config_.timeout_seconds, more_slots_source());
}

const char *ElasticDriver::more_slots_source() const {
    if (!discovery_) return "a failed host's cooldown to end";
    return config_.cooldown_min < 0
               ? "the discovery script to offer more slots"
               : "the discovery script to offer more slots or a failed host's cooldown to end";
}

void ElasticDriver::check_below_min(Clock::time_point now) {
    if (!below_min_set_) return;
    if (!membership_.below_min()) {
        below_min_set_ = false;
        std::fprintf(stderr, "hvdrun: %d worker(s) live again, at least --min-np %d\n",
                     membership_.live(), config_.min_np);
        return;
    }
    const double waited = std::chrono::duration<double>(now - below_min_since_).count();
    if (waited < config_.timeout_seconds) return;
    char text[256];
    std::snprintf(text, sizeof text,
                  "only %d worker(s) live, fewer than --min-np %d, after waiting %.1f s "
                  "(--elastic-timeout %g) for %s",
                  membership_.live(), config_.min_np, waited, config_.timeout_seconds,
                  more_slots_source());
    fail(text);
}

int ElasticDriver::poll_timeout_ms() const {
    int ms = discovery_ ? std::min(kMaxPollMs, discovery_->poll_timeout_ms()) : kMaxPollMs;
    const int to_return = blacklist_.ms_to_next_return(Clock::now());
    return to_return >= 0 ? std::min(ms, to_return) : ms;
}

void ElasticDriver::on_join(int id, bool waiting) {
    auto leaving = leaving_.find(id);
    if (waiting && leaving != leaving_.end()) {
        leaving->second = Clock::now();  // it has left its round: stop it now
        stop_leaving(Clock::now());
        return;
    }
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
    leaving_slots_.erase(id);
    if (leaving_.erase(id) != 0 || stopped_.erase(id) != 0) return "";  // its host left
    auto it = live_.find(id);
    std::string host = it != live_.end() ? it->second.host : "";
    if (it != live_.end()) live_.erase(it);
    membership_.worker_exited(id);
    if (code == 0) {
        finished_one_ = true;
        return "";
    }
    if (finished_one_ || !failure_.empty()) return "the job was ending";
    exclude_host(host);
    count_change();
    // With discovery, a free slot of another host takes its place.
    if (discovery_ && failure_.empty()) start_workers(membership_.live() + 1);
    if (failure_.empty() && membership_.below_min())
        below_min("worker " + std::to_string(id) + " on " + host + " failed; " +
                  std::to_string(membership_.live()) + " worker(s) left");
    return failure_;
}

void ElasticDriver::exclude_host(const std::string &host) {
    const double seconds = blacklist_.add(host, Clock::now());
    const int failures = blacklist_.failures(host);
    if (seconds < 0) {
        std::fprintf(stderr,
                     "hvdrun: host %s gets no more workers (a worker failed there; "
                     "--blacklist-cooldown-range lets it back)\n",
                     host.c_str());
    } else {
        std::fprintf(stderr, "hvdrun: host %s gets no workers for %.1f s (failure %d there)\n",
                     host.c_str(), seconds, failures);
    }
}

void ElasticDriver::fail(const std::string &why) {
    failure_ = why;
    server_->answer_all_joins(el::error_body("the elastic job ends: " + why));
}

}  // namespace hvdrun
