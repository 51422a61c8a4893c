#include "bootstrap/rendezvous_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "bootstrap/secret.h"
#include "bootstrap/sha256.h"
#include "common/env.h"
#include "common/error.h"
#include "common/log.h"

namespace hvd::bootstrap {

namespace {

constexpr size_t kMaxIdChars = 64;
constexpr int64_t kPollIntervalMs = 10;
constexpr size_t kMaxFileBytes = 4096;

bool safe_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

std::string sanitise(const std::string &job_id) {
    std::string out = job_id;
    for (char &c : out)
        if (!safe_char(c)) c = '_';
    if (out == job_id && out.size() <= kMaxIdChars) return out;
    return out.substr(0, kMaxIdChars / 2) + "-" + sha256_hex(job_id).substr(0, 16);
}

bool has_space(const std::string &s) {
    return s.find_first_of(" \t\r\n") != std::string::npos;
}

void write_all(int fd, const std::string &data, const std::string &path) {
    size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::write(fd, data.data() + off, data.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("rendezvous file %s: write: %s", path.c_str(), strerror(errno)));
        off += static_cast<size_t>(n);
    }
}

// Creates `tmp` exclusively (never following a planted link), 0600, with `content`.
void write_private_file(const std::string &tmp, const std::string &content) {
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rendezvous file %s: create: %s", tmp.c_str(), strerror(errno)));
    try {
        write_all(fd, content, tmp);
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    ::close(fd);
}

// Reads the file if it is ours and private. Returns false if absent, foreign or unreadable.
bool read_private_file(const std::string &path, std::string *content, bool *warned) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::getuid() &&
              (st.st_mode & 077) == 0;
    if (!ok && !*warned) {
        HVD_LOG(kWarning, -1,
                "ignoring rendezvous file %s: not a private file of this user (mode %o)",
                path.c_str(), static_cast<unsigned>(st.st_mode & 0777));
        *warned = true;
    }
    char buf[kMaxFileBytes];
    ssize_t n = ok ? ::read(fd, buf, sizeof buf) : -1;
    ::close(fd);
    if (n <= 0) return false;
    content->assign(buf, static_cast<size_t>(n));
    return true;
}

// "addr port secret\n"; false while the content is not a complete, valid line.
bool parse_endpoint(const std::string &content, RendezvousEndpoint *ep) {
    if (content.empty() || content.back() != '\n') return false;
    std::istringstream in(content);
    RendezvousEndpoint e;
    std::string extra;
    if (!(in >> e.addr >> e.port >> e.secret) || (in >> extra)) return false;
    if (e.port < 1 || e.port > 65535) return false;
    *ep = e;
    return true;
}

}  // namespace

std::string rendezvous_file_path(const std::string &job_id) {
    const char *dir = env_get("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/hvd-rdv-" + std::to_string(::getuid()) + "-" +
           sanitise(job_id);
}

void publish_rendezvous(const std::string &job_id, const RendezvousEndpoint &ep) {
    if (ep.addr.empty() || ep.secret.empty() || has_space(ep.addr) || has_space(ep.secret) ||
        ep.port < 1 || ep.port > 65535)
        throw Error(HVD_ERR_INVALID_ARG, strprintf("rendezvous file: bad endpoint '%s' port %d",
                                                   ep.addr.c_str(), ep.port));
    std::string path = rendezvous_file_path(job_id);
    std::string tmp =
        path + ".tmp." + std::to_string(::getpid()) + "." + random_secret().substr(0, 8);
    write_private_file(tmp, ep.addr + " " + std::to_string(ep.port) + " " + ep.secret + "\n");
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rendezvous file %s: rename: %s", path.c_str(), strerror(e)));
    }
}

RendezvousEndpoint lookup_rendezvous(const std::string &job_id, const Deadline &deadline) {
    std::string path = rendezvous_file_path(job_id);
    bool warned = false;
    for (;;) {
        std::string content;
        RendezvousEndpoint ep;
        if (read_private_file(path, &content, &warned) && parse_endpoint(content, &ep)) return ep;
        if (deadline.expired())
            throw Error(HVD_ERR_TIMED_OUT,
                        strprintf("rendezvous file %s did not appear before the deadline (is "
                                  "rank 0 of job '%s' running on this host?)",
                                  path.c_str(), job_id.c_str()));
        ::poll(nullptr, 0, static_cast<int>(deadline.remaining_ms(kPollIntervalMs)));
    }
}

void remove_rendezvous(const std::string &job_id) {
    ::unlink(rendezvous_file_path(job_id).c_str());
}

}  // namespace hvd::bootstrap
