// SPDX-License-Identifier: Apache-2.0
#include "host_discovery.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "process.h"

namespace hvdrun {
namespace {

constexpr int kMaxPollMs = 200;
constexpr size_t kMaxOutputBytes = 1 << 20;

template <class Duration>
Duration seconds(double s) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

// Reads what is there; closes *fd at EOF. Appends to *into (nullptr: to hvdrun's stderr).
void drain(int *fd, std::string *into) {
    char buf[4096];
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return;
    }
    if (into == nullptr) {
        (void)!write(STDERR_FILENO, buf, static_cast<size_t>(n));
    } else if (into->size() < kMaxOutputBytes) {
        into->append(buf, static_cast<size_t>(n));
    }
}

}  // namespace

HostDiscovery::HostDiscovery(std::string script, double interval_seconds, int default_slots)
    : script_(std::move(script)),
      default_slots_(default_slots),
      interval_(seconds<Clock::duration>(interval_seconds)),
      next_run_(Clock::now()) {}

HostDiscovery::~HostDiscovery() {
    close_pipes();
    if (pid_ > 0) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
}

bool HostDiscovery::run_now(std::vector<HostSlots> *hosts, std::string *err) {
    start();
    while (!reaped()) {
        std::vector<pollfd> fds;
        add_poll_fds(&fds);
        if (poll(fds.data(), fds.size(), kMaxPollMs) > 0) on_poll(fds.data(), fds.size());
    }
    return parse(hosts, err);
}

bool HostDiscovery::wait_for_slots(int np, double timeout_seconds, std::vector<HostSlots> *hosts,
                                   std::string *err) {
    const Clock::time_point begin = Clock::now();
    for (bool told = false;; told = true) {
        if (!run_now(hosts, err)) return false;
        int offered = 0;
        for (const HostSlots &h : *hosts)
            offered += h.slots;
        if (offered >= np) return true;
        const double waited = std::chrono::duration<double>(Clock::now() - begin).count();
        char text[192];
        if (waited >= timeout_seconds) {
            std::snprintf(text, sizeof text,
                          "its hosts offer %d slot(s), fewer than -np %d, after waiting %.1f s "
                          "(--elastic-timeout %g)",
                          offered, np, waited, timeout_seconds);
            *err = text;
            return false;
        }
        if (!told)
            std::fprintf(stderr,
                         "hvdrun: the discovery script's hosts offer %d slot(s), fewer than -np "
                         "%d: waiting up to %g s (--elastic-timeout)\n",
                         offered, np, timeout_seconds);
        const double nap =
            std::min(std::chrono::duration<double>(interval_).count(), timeout_seconds - waited);
        std::this_thread::sleep_for(seconds<std::chrono::microseconds>(nap));
    }
}

void HostDiscovery::start() {
    out_.clear();
    SpawnedProcess p = spawn_process({"/bin/sh", "-c", script_}, merged_environment({}), "");
    pid_ = p.pid;
    out_fd_ = p.out_fd;
    err_fd_ = p.err_fd;
    run_deadline_ = Clock::now() + seconds<Clock::duration>(kRunSeconds);
}

void HostDiscovery::add_poll_fds(std::vector<pollfd> *fds) const {
    fds->push_back({out_fd_, POLLIN, 0});  // a negative fd is ignored by poll
    fds->push_back({err_fd_, POLLIN, 0});
}

void HostDiscovery::on_poll(const pollfd *fds, size_t count) {
    if (count > 0 && out_fd_ >= 0 && fds[0].revents != 0) drain(&out_fd_, &out_);
    if (count > 1 && err_fd_ >= 0 && fds[1].revents != 0) drain(&err_fd_, nullptr);
}

bool HostDiscovery::tick(std::vector<HostSlots> *hosts) {
    if (pid_ < 0) {
        if (Clock::now() >= next_run_) start();
        return false;
    }
    if (!reaped()) return false;
    std::string err;
    if (parse(hosts, &err)) return true;
    std::fprintf(stderr, "hvdrun: warning: --host-discovery-script: %s\n", err.c_str());
    return false;
}

// Whether the run has ended and been waited for; past its deadline it is killed first.
bool HostDiscovery::reaped() {
    const bool late = Clock::now() >= run_deadline_;
    if (!late && (out_fd_ >= 0 || err_fd_ >= 0)) return false;
    if (late) kill(-pid_, SIGKILL);
    pid_t got;
    do {
        got = waitpid(pid_, &status_, late ? 0 : WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got == 0) return false;
    close_pipes();
    late_ = late;
    pid_ = -1;
    next_run_ = Clock::now() + interval_;
    return true;
}

// The finished run's host list.
bool HostDiscovery::parse(std::vector<HostSlots> *hosts, std::string *err) {
    if (late_) {
        *err = "'" + script_ + "' did not finish within " +
               std::to_string(static_cast<int>(kRunSeconds)) + " s";
        return false;
    }
    if (!WIFEXITED(status_) || WEXITSTATUS(status_) != 0) {
        *err = "'" + script_ + "' failed (wait status " + std::to_string(status_) + ")";
        return false;
    }
    std::vector<HostSlots> parsed;
    if (!parse_hostfile_text(out_, &parsed, err, default_slots_)) {
        *err = "'" + script_ + "' printed an invalid host list: " + *err;
        return false;
    }
    *hosts = std::move(parsed);
    return true;
}

int HostDiscovery::poll_timeout_ms() const {
    Clock::time_point next = pid_ < 0 ? next_run_ : run_deadline_;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::clamp<decltype(ms)>(ms + 1, 0, kMaxPollMs));
}

void HostDiscovery::close_pipes() {
    for (int *fd : {&out_fd_, &err_fd_}) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
    }
}

}  // namespace hvdrun
