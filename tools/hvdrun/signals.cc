// SPDX-License-Identifier: Apache-2.0
#include "signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hvdrun {
namespace {

int g_write_fd = -1;

void on_signal(int sig) {
    int saved = errno;  // the interrupted code may be about to read errno
    unsigned char byte = static_cast<unsigned char>(sig);
    (void)!write(g_write_fd, &byte, 1);  // pipe full: a wake-up is already pending
    errno = saved;
}

}  // namespace

int install_signal_pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    g_write_fd = fds[1];
    struct sigaction action = {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int sig : kCaughtSignals) {
        sigaction(sig, &action, nullptr);
    }
    signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill hvdrun while ranks run
    return fds[0];
}

int drain_signal_pipe(int fd) {
    int stop = 0;
    unsigned char buf[64];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return stop;
        for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] != SIGCHLD) stop = buf[i];
        }
    }
}

}  // namespace hvdrun
