// SPDX-License-Identifier: Apache-2.0
#include "supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "elastic_driver.h"
#include "process.h"
#include "signals.h"

namespace hvdrun {
namespace {

constexpr int kMaxPollMs = 200;  // safety net: reap even if a SIGCHLD wake-up were lost

// "exited with code 3" / "killed by signal 9 (Killed)"; *code gets the shell-style code.
std::string describe_exit(int wait_status, int *code) {
    if (WIFSIGNALED(wait_status)) {
        int sig = WTERMSIG(wait_status);
        *code = 128 + sig;
        return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    }
    *code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 1;
    return "exited with code " + std::to_string(*code);
}

std::string rank_name(int rank, pid_t pid) {
    return "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
}

}  // namespace

Supervisor::Supervisor(const SupervisorConfig &config) : config_(config) {}

Supervisor::~Supervisor() {
    close_streams();
}

void Supervisor::start(const std::vector<RankLaunch> &launches) {
    ranks_.reserve(launches.size());
    for (const RankLaunch &launch : launches) {
        // A Ctrl-C while many ranks start should not wait for the rest to be spawned.
        int sig = drain_signal_pipe(config_.signal_fd);
        if (sig != 0) on_stop_signal(sig);
        if (stop_signal_ != 0 || !spawn_rank(launch)) return;
    }
}

bool Supervisor::spawn_rank(const RankLaunch &launch) {
    SpawnedProcess proc;
    try {
        proc = spawn_process(launch.argv, launch.envp, launch.stdin_data, launch.cpus);
    } catch (const std::runtime_error &e) {
        std::fprintf(stderr, "hvdrun: cannot start rank %d on %s: %s\n", launch.rank,
                     launch.host.c_str(), e.what());
        first_failure_code_ = 1;
        terminate_survivors();
        return false;
    }
    if (proc.exec_errno != 0 && !exec_error_reported_) {
        // Every local rank runs the same program; one message says it.
        std::fprintf(stderr, "hvdrun: cannot execute '%s': %s\n", launch.argv[0].c_str(),
                     std::strerror(proc.exec_errno));
        exec_error_reported_ = true;
    }
    std::string out_prefix = config_.prefix_output ? rank_prefix(launch.rank, "stdout") : "";
    std::string err_prefix = config_.prefix_output ? rank_prefix(launch.rank, "stderr") : "";
    ranks_.push_back(Rank{launch.rank, proc.pid, true,
                          Stream{proc.out_fd, LineRelay(out_prefix, STDOUT_FILENO)},
                          Stream{proc.err_fd, LineRelay(err_prefix, STDERR_FILENO)}, proc.in_fd});
    return true;
}

int Supervisor::wait() {
    while (!done()) {
        poll_once();
        reap();
        serve_elastic();
        advance_phase();
    }
    close_streams();
    if (first_failure_code_ >= 0) return first_failure_code_;
    return stop_signal_ != 0 ? 128 + stop_signal_ : 0;
}

// Elastic mode: rounds, discovery, the workers it starts, and the end of the job when it
// cannot go on.
void Supervisor::serve_elastic() {
    if (config_.elastic == nullptr) return;
    config_.elastic->tick();
    for (int id : config_.elastic->take_stops())
        stop_worker(id);
    kill_stopped();
    if (phase_ == Phase::kRunning && stop_signal_ == 0) {
        for (const RankLaunch &launch : config_.elastic->take_launches()) {
            if (!spawn_rank(launch)) return;
        }
    }
    if (!config_.elastic->failure().empty() && first_failure_code_ < 0 && stop_signal_ == 0) {
        std::fprintf(stderr, "hvdrun: %s\n", config_.elastic->failure().c_str());
        fail(1);
    }
}

// One worker of an elastic job (its host left): SIGTERM to its process group now, SIGKILL
// kKillAfterSeconds later if it still runs.
void Supervisor::stop_worker(int id) {
    for (Rank &r : ranks_) {
        if (r.rank != id || !r.running || r.stopping) continue;
        kill(-r.pid, SIGTERM);
        if (r.stdin_fd >= 0) close(r.stdin_fd);  // a remote rank's ssh ends it on its host
        r.stdin_fd = -1;
        r.stopping = true;
        r.kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(kKillAfterSeconds));
    }
}

void Supervisor::kill_stopped() {
    for (Rank &r : ranks_) {
        if (!r.running || !r.stopping || Clock::now() < r.kill_at) continue;
        std::fprintf(stderr, "hvdrun: %s still running after SIGTERM, sending SIGKILL\n",
                     rank_name(r.rank, r.pid).c_str());
        kill(-r.pid, SIGKILL);
        r.stopping = false;
    }
}

void Supervisor::poll_once() {
    std::vector<pollfd> fds = {{config_.signal_fd, POLLIN, 0}};
    size_t elastic_at = fds.size();
    if (config_.elastic != nullptr) config_.elastic->add_poll_fds(&fds);
    size_t elastic_end = fds.size();
    std::vector<Stream *> streams;
    for (Rank &r : ranks_) {
        for (Stream *s : {&r.out, &r.err}) {
            if (s->fd < 0) continue;
            fds.push_back({s->fd, POLLIN, 0});
            streams.push_back(s);
        }
    }
    int ready = poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready <= 0) return;  // timeout, or EINTR: the caller reaps and re-checks deadlines
    if (fds[0].revents != 0) {
        int sig = drain_signal_pipe(config_.signal_fd);
        if (sig != 0) on_stop_signal(sig);
    }
    if (config_.elastic != nullptr)
        config_.elastic->on_poll(&fds[elastic_at], elastic_end - elastic_at);
    for (size_t i = elastic_end; i < fds.size(); ++i) {
        if (fds[i].revents != 0) read_stream(streams[i - elastic_end]);
    }
}

// One read per wake-up, so a rank that writes without pause cannot starve the others.
void Supervisor::read_stream(Stream *stream) {
    char buf[64 * 1024];
    ssize_t n = read(stream->fd, buf, sizeof(buf));
    if (n > 0) {
        stream->relay.feed(buf, static_cast<size_t>(n));
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    stream->relay.finish();
    close(stream->fd);
    stream->fd = -1;
}

void Supervisor::reap() {
    for (Rank &r : ranks_) {
        if (!r.running) continue;
        int status = 0;
        pid_t got = waitpid(r.pid, &status, WNOHANG);
        if (got == r.pid) on_exit(&r, status);
    }
}

void Supervisor::on_exit(Rank *rank, int wait_status) {
    rank->running = false;
    if (rank->stdin_fd >= 0) close(rank->stdin_fd);
    rank->stdin_fd = -1;
    if (running_count() == 0) {
        drain_until_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(kDrainSeconds));
    }
    int code = 0;
    std::string how = describe_exit(wait_status, &code);
    if (config_.elastic != nullptr && first_failure_code_ < 0 && stop_signal_ == 0) {
        std::string ends = config_.elastic->worker_exited(rank->rank, code);
        if (code != 0 && ends.empty()) {
            std::fprintf(stderr, "hvdrun: worker %d (pid %d) %s; the job goes on with %d\n",
                         rank->rank, static_cast<int>(rank->pid), how.c_str(),
                         config_.elastic->live_workers());
            return;
        }
        if (code != 0) std::fprintf(stderr, "hvdrun: %s\n", ends.c_str());
    }
    bool first = code != 0 && first_failure_code_ < 0 && stop_signal_ == 0;
    if (first || config_.verbose) {
        std::fprintf(stderr, "hvdrun: %s %s\n", rank_name(rank->rank, rank->pid).c_str(),
                     how.c_str());
    }
    if (first) fail(code);
}

// The job's first failure: the others get the grace period, then SIGTERM.
void Supervisor::fail(int code) {
    first_failure_code_ = code;
    int others = running_count();
    if (others > 0) {
        std::fprintf(stderr, "hvdrun: giving the %d other running rank(s) %g s to exit\n", others,
                     config_.grace_seconds);
    }
    enter(Phase::kGrace, config_.grace_seconds);
}

void Supervisor::on_stop_signal(int sig) {
    if (stop_signal_ == 0) {
        stop_signal_ = sig;
        std::fprintf(stderr, "hvdrun: received signal %d (%s), stopping all ranks\n", sig,
                     strsignal(sig));
        if (phase_ == Phase::kRunning || phase_ == Phase::kGrace) terminate_survivors();
        return;
    }
    if (phase_ == Phase::kTerminating) {
        std::fprintf(stderr, "hvdrun: received signal %d again, killing all ranks\n", sig);
        kill_survivors();
    }
}

void Supervisor::advance_phase() {
    if (running_count() == 0 || Clock::now() < deadline_) return;
    if (phase_ == Phase::kGrace) {
        terminate_survivors();
    } else if (phase_ == Phase::kTerminating) {
        kill_survivors();
    } else if (phase_ == Phase::kKilled) {
        for (const Rank &r : ranks_) {
            if (!r.running) continue;
            std::fprintf(stderr, "hvdrun: %s did not exit after SIGKILL; giving up on it\n",
                         rank_name(r.rank, r.pid).c_str());
        }
        phase_ = Phase::kGaveUp;
    }
}

void Supervisor::terminate_survivors() {
    if (running_count() > 0) {
        std::fprintf(stderr, "hvdrun: sending SIGTERM to %d running rank(s)\n", running_count());
    }
    signal_survivors(SIGTERM);
    enter(Phase::kTerminating, kKillAfterSeconds);
}

void Supervisor::kill_survivors() {
    for (const Rank &r : ranks_) {
        if (!r.running) continue;
        std::fprintf(stderr, "hvdrun: %s still running, sending SIGKILL\n",
                     rank_name(r.rank, r.pid).c_str());
    }
    signal_survivors(SIGKILL);
    enter(Phase::kKilled, kGiveUpSeconds);
}

// The whole process group: a rank's children (a shell's commands, ssh, data loaders) go too.
// Only ranks not yet reaped are signalled, since a reaped rank's pid may be reused.
void Supervisor::signal_survivors(int sig) {
    for (const Rank &r : ranks_) {
        if (r.running) kill(-r.pid, sig);
    }
}

void Supervisor::enter(Phase phase, double seconds) {
    phase_ = phase;
    deadline_ = Clock::now() +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int Supervisor::running_count() const {
    return static_cast<int>(
        std::count_if(ranks_.begin(), ranks_.end(), [](const Rank &r) { return r.running; }));
}

// After the last exit the pipes are read until EOF, or kDrainSeconds when a leftover
// background process of a rank still holds one open.
bool Supervisor::done() const {
    if (phase_ == Phase::kGaveUp) return true;
    if (running_count() > 0) return false;
    bool open = std::any_of(ranks_.begin(), ranks_.end(),
                            [](const Rank &r) { return r.out.fd >= 0 || r.err.fd >= 0; });
    return !open || Clock::now() >= drain_until_;
}

int Supervisor::poll_timeout_ms() const {
    Clock::time_point next = Clock::now() + std::chrono::milliseconds(kMaxPollMs);
    if (config_.elastic != nullptr)
        next = std::min(
            next, Clock::now() + std::chrono::milliseconds(config_.elastic->poll_timeout_ms()));
    if (running_count() == 0) {
        next = std::min(next, drain_until_);
    } else if (phase_ != Phase::kRunning) {
        next = std::min(next, deadline_);
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::max<decltype(ms)>(ms + 1, 0));
}

void Supervisor::close_streams() {
    for (Rank &r : ranks_) {
        if (r.stdin_fd >= 0) close(r.stdin_fd);
        r.stdin_fd = -1;
        for (Stream *s : {&r.out, &r.err}) {
            if (s->fd < 0) continue;
            s->relay.finish();
            close(s->fd);
            s->fd = -1;
        }
    }
}

}  // namespace hvdrun
