// SPDX-License-Identifier: Apache-2.0
#include "host_blacklist.h"

#include <algorithm>
#include <cmath>

namespace hvdrun {

HostBlacklist::HostBlacklist(double cooldown_min, double cooldown_max, uint64_t seed)
    : cooldown_min_(cooldown_min), cooldown_max_(cooldown_max), random_(seed) {}

double HostBlacklist::add(const std::string &host, Clock::time_point now) {
    Entry &e = hosts_[host];
    ++e.failures;
    if (cooldown_min_ < 0) return -1.0;
    // 2^(failures-1), capped long before it could overflow a double.
    const double doubling = std::ldexp(1.0, std::min(e.failures - 1, 60));
    const double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
    const double seconds =
        std::min(cooldown_max_, cooldown_min_ * doubling + jitter * cooldown_min_);
    e.cooling = true;
    e.until =
        now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    return seconds;
}

bool HostBlacklist::excluded(const std::string &host, Clock::time_point now) const {
    auto it = hosts_.find(host);
    if (it == hosts_.end()) return false;
    // Listed hosts have failed at least once; without a cooldown they stay out.
    return cooldown_min_ < 0 || (it->second.cooling && now < it->second.until);
}

std::vector<std::string> HostBlacklist::take_returned(Clock::time_point now) {
    std::vector<std::string> out;
    for (auto &[host, e] : hosts_) {
        if (!e.cooling || now < e.until) continue;
        e.cooling = false;
        out.push_back(host);
    }
    return out;
}

int HostBlacklist::ms_to_next_return(Clock::time_point now) const {
    int best = -1;
    for (const auto &[host, e] : hosts_) {
        if (!e.cooling) continue;
        auto left = std::chrono::ceil<std::chrono::milliseconds>(e.until - now).count();
        const int ms = static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
        best = best < 0 ? ms : std::min(best, ms);
    }
    return best;
}

int HostBlacklist::failures(const std::string &host) const {
    auto it = hosts_.find(host);
    return it == hosts_.end() ? 0 : it->second.failures;
}

}  // namespace hvdrun
