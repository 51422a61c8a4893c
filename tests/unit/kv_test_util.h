// SPDX-License-Identifier: Apache-2.0
// What the rendezvous tests share: the job's secret and address, catching an error's status
// and message, connecting a rank, waiting for failure notices, and capturing the log lines a
// server or client writes to stderr. Used by test_kv_store.cc and test_kv_frame_mac.cc.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/kv_store.h"
#include "common/error.h"

namespace kvtest {

using hvd::Deadline;
using hvd::bootstrap::KvClient;

inline const std::string kSecret = "0123456789abcdef-job-secret";
inline const std::string kLoopback = "127.0.0.1";
constexpr int64_t kTimeoutMs = 5000;  // generous bound for anything that should succeed

// The status and message an action throws, or HVD_OK.
struct Outcome {
    hvd_status_t status = HVD_OK;
    std::string message;
};

inline Outcome catching(const std::function<void()> &action) {
    Outcome o;
    try {
        action();
    } catch (const hvd::Error &e) {
        o.status = e.status();
        o.message = e.what();
    }
    return o;
}

inline std::unique_ptr<KvClient> connect_rank(int port, int32_t rank, int32_t size,
                                              const std::string &secret = kSecret) {
    return std::make_unique<KvClient>(kLoopback, port, secret, rank, size,
                                      Deadline::after_ms(kTimeoutMs));
}

// Waits (bounded) for failure notices on a client, as the engine's event loop would.
inline std::vector<int32_t> wait_failures(KvClient &c, int64_t timeout_ms) {
    Deadline deadline = Deadline::after_ms(timeout_ms);
    for (;;) {
        std::vector<int32_t> f = c.poll_failures();
        if (!f.empty() || deadline.expired()) return f;
        pollfd p{c.fd(), POLLIN, 0};
        poll(&p, 1, static_cast<int>(deadline.remaining_ms(100)));
    }
}

// Lines of a text file (no <fstream>: cmocka's fail() macro breaks it).
inline std::vector<std::string> read_lines(const std::string &path) {
    std::vector<std::string> lines;
    FILE *f = std::fopen(path.c_str(), "r");
    if (!f) return lines;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, f))
        lines.emplace_back(buf);
    std::fclose(f);
    return lines;
}

// Redirects stderr (where log lines go) to a file while alive; counts lines containing every
// one of some tags.
class StderrCapture {
  public:
    StderrCapture() {
        path_ = "/tmp/hvd_test_kv_log_" + std::to_string(::getpid()) + ".log";
        std::fflush(stderr);
        saved_ = ::dup(2);
        FILE *f = std::fopen(path_.c_str(), "w");
        ::dup2(::fileno(f), 2);
        std::fclose(f);
    }
    ~StderrCapture() {
        restore();
        std::remove(path_.c_str());
    }
    StderrCapture(const StderrCapture &) = delete;
    StderrCapture &operator=(const StderrCapture &) = delete;
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        saved_ = -1;
    }
    int count(std::initializer_list<std::string> tags) const {
        int n = 0;
        for (const std::string &line : read_lines(path_)) {
            bool all = true;
            for (const std::string &tag : tags)
                all = all && line.find(tag) != std::string::npos;
            n += all ? 1 : 0;
        }
        return n;
    }
    int count(const std::string &tag) const { return count({tag}); }
    // Every captured line, for a failure message.
    std::string text() const {
        std::string all;
        for (const std::string &line : read_lines(path_))
            all += line;
        return all;
    }

  private:
    std::string path_;
    int saved_ = -1;
};

}  // namespace kvtest
