// SPDX-License-Identifier: Apache-2.0
#include "controlled_job.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "controller_protocol.h"
#include "elastic_driver.h"
#include "signals.h"

namespace hvdrun {
namespace {

constexpr size_t kMaxLineBytes = 1 << 20;

class ControlledJob {
  public:
    ControlledJob(ElasticDriver *driver, int in_fd, int out_fd)
        : driver_(driver), in_fd_(in_fd), out_fd_(out_fd) {}

    // -1 while the job goes on, else hvdrun's exit code.
    int step(int signal_fd);

  private:
    void send(const std::string &line);
    int read_input();
    int on_line(const std::string &line);
    int fail(int code, const std::string &why);

    ElasticDriver *driver_;
    int in_fd_;
    int out_fd_;
    std::string in_;
    std::set<int> running_;
    std::set<int> stopping_;  // asked to stop: their host left
};

void ControlledJob::send(const std::string &line) {
    size_t done = 0;
    while (done < line.size()) {
        ssize_t n = write(out_fd_, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the controller is gone; its input's end ends the job
        done += static_cast<size_t>(n);
    }
}

int ControlledJob::fail(int code, const std::string &why) {
    std::fprintf(stderr, "hvdrun: %s\n", why.c_str());
    send(controller::failed_line(why));
    return code;
}

int ControlledJob::on_line(const std::string &line) {
    controller::Input in;
    std::string err;
    if (!controller::parse_input(line, &in, &err)) return fail(2, "controller: " + err);
    if (in.kind == controller::Input::kStop) {
        std::fprintf(stderr, "hvdrun: the controller stopped the job\n");
        return running_.empty() ? 0 : 1;
    }
    if (in.kind == controller::Input::kHosts) {
        driver_->update_hosts(std::move(in.hosts));
        return -1;
    }
    if (running_.erase(in.id) == 0)
        return fail(2, "controller: no worker " + std::to_string(in.id) + " is running");
    std::string ends = driver_->worker_exited(in.id, in.code);
    if (stopping_.erase(in.id) != 0) {
        std::fprintf(stderr, "hvdrun: worker %d stopped (exit code %d)\n", in.id, in.code);
        return -1;
    }
    if (in.code == 0) return -1;
    if (!ends.empty()) return fail(in.code, ends);
    std::fprintf(stderr, "hvdrun: worker %d exited with code %d; the job goes on with %d\n", in.id,
                 in.code, driver_->live_workers());
    return -1;
}

int ControlledJob::read_input() {
    char buf[4096];
    ssize_t n = read(in_fd_, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return -1;
    if (n <= 0) {
        in_fd_ = -1;
        if (running_.empty()) return 0;
        return fail(1, "the controller closed hvdrun's input while " +
                           std::to_string(running_.size()) + " worker(s) ran");
    }
    in_.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = in_.find('\n')) != std::string::npos;) {
        std::string line = in_.substr(0, nl);
        in_.erase(0, nl + 1);
        int code = on_line(line);
        if (code >= 0) return code;
    }
    if (in_.size() > kMaxLineBytes) return fail(2, "controller: a line longer than 1 MiB");
    return -1;
}

int ControlledJob::step(int signal_fd) {
    for (const RankLaunch &launch : driver_->take_launches()) {
        send(controller::start_line(launch.rank, launch.host, launch.vars));
        running_.insert(launch.rank);
    }
    for (int id : driver_->take_stops()) {
        send(controller::stop_line(id));
        stopping_.insert(id);
    }
    if (running_.empty() && driver_->finishing()) return 0;
    std::vector<pollfd> fds = {{signal_fd, POLLIN, 0}, {in_fd_, POLLIN, 0}};
    driver_->add_poll_fds(&fds);
    if (poll(fds.data(), fds.size(), driver_->poll_timeout_ms()) > 0) {
        if (fds[0].revents != 0) {
            int sig = drain_signal_pipe(signal_fd);
            if (sig != 0) return fail(128 + sig, std::string("received signal ") + strsignal(sig));
        }
        if (fds[1].revents != 0) {
            int code = read_input();
            if (code >= 0) return code;
        }
        driver_->on_poll(fds.data() + 2, fds.size() - 2);
    }
    driver_->tick();
    return -1;
}

}  // namespace

int run_controlled(ElasticDriver *driver, int signal_fd, int in_fd, int out_fd) {
    ControlledJob job(driver, in_fd, out_fd);
    for (;;) {
        int code = job.step(signal_fd);
        if (code >= 0) return code;
    }
}

}  // namespace hvdrun
