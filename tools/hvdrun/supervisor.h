// SPDX-License-Identifier: Apache-2.0
// The supervision loop: starts the ranks, relays their output, reaps them, and on the first
// failure (or a stop signal to hvdrun) gives the others a grace period, then SIGTERM, then
// SIGKILL. Single-threaded: one poll() over every output pipe and the signal pipe, with a
// timeout, and waitpid(WNOHANG) after each wake-up, so nothing waits without bound.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "launch_plan.h"
#include "output_relay.h"

namespace hvdrun {

class ElasticDriver;

struct SupervisorConfig {
    double grace_seconds = 5.0;  // after the first failure, before SIGTERM
    bool prefix_output = true;
    bool verbose = false;  // also report ranks that exit normally
    int signal_fd = -1;    // from install_signal_pipe()
    // Elastic mode (elastic_driver.h): a failing worker ends the job only when the driver says
    // so, and the driver's sockets, new workers and rounds are served from the same loop.
    ElasticDriver *elastic = nullptr;
};

class Supervisor {
  public:
    explicit Supervisor(const SupervisorConfig &config);
    ~Supervisor();
    Supervisor(const Supervisor &) = delete;
    Supervisor &operator=(const Supervisor &) = delete;

    // Starts the ranks in order. If one cannot be started (fork or pipe failed) that is the
    // first failure, with code 1, and the ranks already started are terminated at once.
    void start(const std::vector<RankLaunch> &launches);

    // Runs until every rank has been reaped (or survived SIGKILL for kGiveUpSeconds) and its
    // output drained. Returns hvdrun's exit code: the first failing rank's code (128+signal
    // when killed), else 128+signal when hvdrun itself was told to stop, else 0.
    int wait();

    static constexpr double kKillAfterSeconds = 3.0;  // SIGTERM -> SIGKILL
    static constexpr double kGiveUpSeconds = 5.0;     // SIGKILL -> stop waiting
    static constexpr double kDrainSeconds = 2.0;      // last exit -> stop reading pipes

  private:
    using Clock = std::chrono::steady_clock;
    enum class Phase { kRunning, kGrace, kTerminating, kKilled, kGaveUp };

    struct Stream {
        int fd;
        LineRelay relay;
    };
    struct Rank {
        int rank;
        pid_t pid;
        bool running;
        Stream out;
        Stream err;
        int stdin_fd;  // a remote rank's ssh stdin, open while it runs (see remote_command.h)
        bool stopping = false;  // elastic: SIGTERM sent alone; SIGKILL at kill_at
        Clock::time_point kill_at{};
    };

    bool spawn_rank(const RankLaunch &launch);
    void poll_once();
    void serve_elastic();
    void stop_worker(int id);
    void kill_stopped();
    void fail(int code);
    void read_stream(Stream *stream);
    void reap();
    void on_exit(Rank *rank, int wait_status);
    void on_stop_signal(int sig);
    void advance_phase();
    void terminate_survivors();
    void kill_survivors();
    void signal_survivors(int sig);
    int running_count() const;
    bool done() const;
    int poll_timeout_ms() const;
    void close_streams();
    void enter(Phase phase, double seconds);

    SupervisorConfig config_;
    std::vector<Rank> ranks_;
    Phase phase_ = Phase::kRunning;
    Clock::time_point deadline_;     // when the current phase escalates
    Clock::time_point drain_until_;  // set when the last rank exits
    int first_failure_code_ = -1;
    int stop_signal_ = 0;
    bool exec_error_reported_ = false;
};

}  // namespace hvdrun
