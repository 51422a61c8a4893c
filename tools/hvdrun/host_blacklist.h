// SPDX-License-Identifier: Apache-2.0
// Hosts an elastic job keeps from new workers after a worker failed there (horovodrun's
// blacklist). Without a cooldown range a failed host stays out for the rest of the job. With
// --blacklist-cooldown-range MIN MAX it stays out for a cooldown that doubles with each failure
// of that host: MIN x 2^(failures-1), plus a random part below MIN so hosts that failed together
// come back apart, never more than MAX; then it may run workers again.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace hvdrun {

class HostBlacklist {
  public:
    using Clock = std::chrono::steady_clock;

    // cooldown_min < 0: no cooldown (a failed host stays out). Else 0 <= min <= max, seconds.
    explicit HostBlacklist(double cooldown_min = -1.0, double cooldown_max = -1.0,
                           uint64_t seed = std::random_device{}());

    // Records a worker failure on `host` at `now`. Returns the seconds the host now stays out,
    // or a negative value when it stays out for the rest of the job.
    double add(const std::string &host, Clock::time_point now);
    bool excluded(const std::string &host, Clock::time_point now) const;
    // Hosts whose cooldown ended at or before `now`, each returned once per cooldown.
    std::vector<std::string> take_returned(Clock::time_point now);
    // Milliseconds until the next cooldown ends (0 when one has), or -1 when none runs.
    int ms_to_next_return(Clock::time_point now) const;
    int failures(const std::string &host) const;

  private:
    struct Entry {
        int failures = 0;
        bool cooling = false;  // a cooldown runs until `until`
        Clock::time_point until;
    };
    double cooldown_min_;
    double cooldown_max_;
    std::mt19937_64 random_;
    std::map<std::string, Entry> hosts_;
};

}  // namespace hvdrun
