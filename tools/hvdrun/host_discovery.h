// SPDX-License-Identifier: Apache-2.0
// --host-discovery-script: runs the script (through sh -c) every interval and reads the hosts
// it prints, one "host:slots" (or "host": --slots, else one slot) per line, as horovodrun does.
// Driven from the supervisor's poll loop: a run's output pipes are polled with the ranks', and a
// run that takes longer than kRunSeconds is killed and ignored. The script's stderr goes to
// hvdrun's.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "hosts.h"

namespace hvdrun {

class HostDiscovery {
  public:
    // default_slots: the slots of a line without ":slots" (hvdrun --slots).
    HostDiscovery(std::string script, double interval_seconds, int default_slots = 1);
    ~HostDiscovery();
    HostDiscovery(const HostDiscovery &) = delete;
    HostDiscovery &operator=(const HostDiscovery &) = delete;

    // Runs the script once and waits for it (at most kRunSeconds). False with *err when it
    // fails, times out or prints no valid host list.
    bool run_now(std::vector<HostSlots> *hosts, std::string *err);
    // The start of an elastic job, as horovodrun's: runs the script every interval until its
    // hosts offer at least np slots, for at most timeout_seconds (saying so on stderr while it
    // waits). False with *err when a run fails, or the hosts offer fewer at the timeout.
    bool wait_for_slots(int np, double timeout_seconds, std::vector<HostSlots> *hosts,
                        std::string *err);

    void add_poll_fds(std::vector<pollfd> *fds) const;
    void on_poll(const pollfd *fds, size_t count);
    // Starts a run when one is due; true with *hosts when a run has just finished with a valid
    // list (a failed run is reported on stderr and skipped).
    bool tick(std::vector<HostSlots> *hosts);
    int poll_timeout_ms() const;

    static constexpr double kRunSeconds = 10.0;

  private:
    using Clock = std::chrono::steady_clock;
    void start();
    bool reaped();
    bool parse(std::vector<HostSlots> *hosts, std::string *err);
    void close_pipes();

    std::string script_;
    int default_slots_;
    Clock::duration interval_;
    Clock::time_point next_run_;
    Clock::time_point run_deadline_;
    pid_t pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    std::string out_;
    int status_ = 0;
    bool late_ = false;
};

}  // namespace hvdrun
