#include "bootstrap/inherited_listener.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <mutex>

#include "common/log.h"

namespace hvd::bootstrap {

namespace {

std::mutex g_mu;
int g_kept = -1;  // the launcher's socket, once taken; never closed

// The descriptor number in `text`, or -1 when it is not one.
int parse_fd(const char *text) {
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 0 || v > INT_MAX) return -1;
    return static_cast<int>(v);
}

bool is_listening_stream(int fd) {
    int type = 0, accepting = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
    len = sizeof accepting;
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) == 0 && accepting != 0;
}

// Checks the launcher's socket and keeps it; false (with a warning) when it is not one.
bool keep(const char *fd_text, int port) {
    int fd = parse_fd(fd_text);
    if (fd < 0 || !is_listening_stream(fd) || bound_port(fd) != port) {
        HVD_LOG(kWarning, 0,
                "HVD_RENDEZVOUS_FD=%s is not a listening socket on the rendezvous port %d; "
                "binding the port instead",
                fd_text, port);
        return false;
    }
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return false;
    set_nonblocking(fd);
    g_kept = fd;
    return true;
}

}  // namespace

Fd take_inherited_listener(const char *fd_text, int port) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_kept < 0 && (fd_text == nullptr || *fd_text == '\0' || !keep(fd_text, port))) return Fd();
    if (bound_port(g_kept) != port) return Fd();  // a later session on another port
    return Fd(fcntl(g_kept, F_DUPFD_CLOEXEC, 0));
}

}  // namespace hvd::bootstrap
