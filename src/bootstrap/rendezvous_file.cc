// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/rendezvous_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>

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

// An open directory (closed with the object) and its path.
class DirHandle {
  public:
    DirHandle(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    DirHandle(const DirHandle &) = delete;
    DirHandle &operator=(const DirHandle &) = delete;
    ~DirHandle() { ::close(fd_); }
    int fd() const { return fd_; }
    const std::string &path() const { return path_; }

  private:
    int fd_;
    std::string path_;
};

// Opens `path` if it is a directory of this user's that nobody else may enter or write: not
// a symbolic link, owned by this user, no permission bit for group or others. Returns the
// descriptor (every later access goes through it, so the directory checked is the one used),
// or -1 and why not in *why.
int open_private_dir(const std::string &path, std::string *why) {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        *why = errno == ENOTDIR || errno == ELOOP ? "not a directory (or a symbolic link)"
                                                  : strerror(errno);
        return -1;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        *why = strerror(errno);
    } else if (st.st_uid != ::getuid()) {
        *why = strprintf("owned by uid %u, not by this user (uid %u)",
                         static_cast<unsigned>(st.st_uid), static_cast<unsigned>(::getuid()));
    } else if ((st.st_mode & 077) != 0) {
        *why = strprintf("mode %o lets group or others in (it must be 0700)",
                         static_cast<unsigned>(st.st_mode & 0777));
    } else {
        // Made by this user under a restrictive umask: ours, and still private once usable.
        if ((st.st_mode & 0700) != 0700) ::fchmod(fd, 0700);
        return fd;
    }
    ::close(fd);
    return -1;
}

constexpr int kTmpDirCandidates = 8;

// The directory of this user's rendezvous files: $XDG_RUNTIME_DIR when it is set and private,
// else the first of $TMPDIR/hvd-<uid>, $TMPDIR/hvd-<uid>.1, ... .7 (TMPDIR defaulting to /tmp)
// that is private or can be made (0700). A candidate someone else made, or with loose
// permissions, is skipped with a warning: every rank of the job skips the same ones, so they
// all meet in the same directory. Throws HVD_ERR_TRANSPORT naming the candidates when none
// will do.
DirHandle rendezvous_dir() {
    std::string why;
    const char *xdg = env_get("XDG_RUNTIME_DIR");
    if (xdg != nullptr && xdg[0] == '/') {
        int fd = open_private_dir(xdg, &why);
        if (fd >= 0) return DirHandle(fd, xdg);
        HVD_LOG(kDebug, -1, "not using XDG_RUNTIME_DIR %s for the rendezvous file: %s", xdg,
                why.c_str());
    }
    const char *tmp = env_get("TMPDIR");
    std::string base = std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/hvd-" +
                       std::to_string(::getuid());
    std::string refused;
    for (int k = 0; k < kTmpDirCandidates; ++k) {
        std::string path = k == 0 ? base : base + "." + std::to_string(k);
        // Another error (no such parent, no permission) would repeat for every candidate.
        bool give_up = ::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST;
        if (give_up) {
            why = strerror(errno);
        } else {
            int fd = open_private_dir(path, &why);
            if (fd >= 0) return DirHandle(fd, path);
        }
        HVD_LOG(kWarning, -1, "not using %s for the rendezvous file: %s", path.c_str(),
                why.c_str());
        refused += strprintf("%s%s: %s", refused.empty() ? "" : "; ", path.c_str(), why.c_str());
        if (give_up) break;
    }
    throw Error(HVD_ERR_TRANSPORT,
                strprintf("no private directory for the rendezvous file (%s); remove those, or "
                          "set XDG_RUNTIME_DIR or TMPDIR to a directory only this user can use",
                          refused.c_str()));
}

std::string file_name(const std::string &job_id) {
    return "hvd-rdv-" + sanitise(job_id);
}

// Creates `name` in dir exclusively (never following a planted link), 0600, with `content`.
void write_private_file(const DirHandle &dir, const std::string &name, const std::string &content) {
    const std::string path = dir.path() + "/" + name;
    int fd = ::openat(dir.fd(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0600);
    if (fd < 0)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rendezvous file %s: create: %s", path.c_str(), strerror(errno)));
    try {
        write_all(fd, content, path);
    } catch (...) {
        ::close(fd);
        ::unlinkat(dir.fd(), name.c_str(), 0);
        throw;
    }
    ::close(fd);
}

// Reads the file if it is ours and private. Returns false if absent, foreign or unreadable.
bool read_private_file(const DirHandle &dir, const std::string &name, std::string *content,
                       bool *warned) {
    int fd = ::openat(dir.fd(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::getuid() &&
              (st.st_mode & 077) == 0;
    if (!ok && !*warned) {
        HVD_LOG(kWarning, -1,
                "ignoring rendezvous file %s/%s: not a private file of this user (mode %o)",
                dir.path().c_str(), name.c_str(), static_cast<unsigned>(st.st_mode & 0777));
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
    return !content.empty() && content.back() == '\n' && parse_endpoint_text(content, ep);
}

}  // namespace

std::string endpoint_text(const RendezvousEndpoint &ep) {
    return ep.addr + " " + std::to_string(ep.port) + " " + ep.secret;
}

bool parse_endpoint_text(const std::string &text, RendezvousEndpoint *ep) {
    std::istringstream in(text);
    RendezvousEndpoint e;
    std::string extra;
    if (!(in >> e.addr >> e.port >> e.secret) || (in >> extra)) return false;
    if (e.port < 1 || e.port > 65535) return false;
    *ep = e;
    return true;
}

std::string rendezvous_file_path(const std::string &job_id) {
    return rendezvous_dir().path() + "/" + file_name(job_id);
}

void publish_rendezvous(const std::string &job_id, const RendezvousEndpoint &ep) {
    if (ep.addr.empty() || ep.secret.empty() || has_space(ep.addr) || has_space(ep.secret) ||
        ep.port < 1 || ep.port > 65535)
        throw Error(HVD_ERR_INVALID_ARG, strprintf("rendezvous file: bad endpoint '%s' port %d",
                                                   ep.addr.c_str(), ep.port));
    DirHandle dir = rendezvous_dir();
    const std::string name = file_name(job_id);
    const std::string tmp =
        name + ".tmp." + std::to_string(::getpid()) + "." + random_secret().substr(0, 8);
    write_private_file(dir, tmp, endpoint_text(ep) + "\n");
    // Replaces whatever has the name (a stale file; a link is replaced, never followed).
    if (::renameat(dir.fd(), tmp.c_str(), dir.fd(), name.c_str()) != 0) {
        int e = errno;
        ::unlinkat(dir.fd(), tmp.c_str(), 0);
        throw Error(HVD_ERR_TRANSPORT, strprintf("rendezvous file %s/%s: rename: %s",
                                                 dir.path().c_str(), name.c_str(), strerror(e)));
    }
}

RendezvousEndpoint lookup_rendezvous(const std::string &job_id, const Deadline &deadline) {
    DirHandle dir = rendezvous_dir();
    const std::string name = file_name(job_id);
    bool warned = false;
    for (;;) {
        std::string content;
        RendezvousEndpoint ep;
        if (read_private_file(dir, name, &content, &warned) && parse_endpoint(content, &ep))
            return ep;
        if (deadline.expired())
            throw Error(HVD_ERR_TIMED_OUT,
                        strprintf("rendezvous file %s/%s did not appear before the deadline (is "
                                  "rank 0 of job '%s' running on this host?)",
                                  dir.path().c_str(), name.c_str(), job_id.c_str()));
        ::poll(nullptr, 0, static_cast<int>(deadline.remaining_ms(kPollIntervalMs)));
    }
}

void remove_rendezvous(const std::string &job_id) {
    try {
        DirHandle dir = rendezvous_dir();
        ::unlinkat(dir.fd(), file_name(job_id).c_str(), 0);
    } catch (const Error &) {
        // No private directory: nothing of ours to remove.
    }
}

}  // namespace hvd::bootstrap
