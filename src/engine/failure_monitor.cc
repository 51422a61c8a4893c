// SPDX-License-Identifier: Apache-2.0
#include "engine/failure_monitor.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "engine/engine.h"

namespace hvd::engine {

namespace {
constexpr int kPollMs = 500;  // only bounds how late a stop request is seen
}

FailureMonitor::FailureMonitor(int32_t rank, std::unique_ptr<bootstrap::KvClient> kv,
                               AbortState *abort, Engine *engine)
    : rank_(rank), kv_(std::move(kv)), abort_(abort), engine_(engine) {
    if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
        throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: pipe2 failed", rank));
}

FailureMonitor::~FailureMonitor() {
    stop();
    ::close(pipe_[0]);
    ::close(pipe_[1]);
}

void FailureMonitor::start() {
    thread_ = std::thread([this] { loop(); });
}

void FailureMonitor::wake() {
    char c = 'w';
    ssize_t ignored = ::write(pipe_[1], &c, 1);
    (void)ignored;
}

std::unique_ptr<bootstrap::KvClient> FailureMonitor::stop() {
    if (thread_.joinable()) {
        char c = 's';
        ssize_t ignored = ::write(pipe_[1], &c, 1);
        (void)ignored;
        thread_.join();
    }
    return std::move(kv_);
}

void FailureMonitor::loop() {
    for (;;) {
        if (abort_->aborted() && kv_) {
            // Leave without a goodbye: the server reports this rank as failed to the others.
            kv_.reset();
        }
        struct pollfd fds[2] = {{pipe_[0], POLLIN, 0}, {kv_ ? kv_->fd() : -1, POLLIN, 0}};
        ::poll(fds, kv_ ? 2 : 1, kPollMs);
        if (fds[0].revents & POLLIN) {
            char buf[64];
            ssize_t n = ::read(pipe_[0], buf, sizeof buf);
            for (ssize_t i = 0; i < n; ++i)
                if (buf[i] == 's') return;
        }
        if (!kv_ || !(fds[1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        for (int32_t failed : kv_->poll_failures()) {
            std::string detail =
                failed == bootstrap::KvClient::kServerLost
                    ? strprintf(
                          "rank %d: lost the connection to the rendezvous server (the "
                          "process hosting it died)",
                          rank_)
                    : strprintf("rank %d: rank %d failed (process died or aborted)", rank_, failed);
            if (abort_->set(HVD_ERR_PEER_FAILED, detail))
                HVD_LOG(kError, rank_, "%s", detail.c_str());
            engine_->wake();
        }
    }
}

}  // namespace hvd::engine
