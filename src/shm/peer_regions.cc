// SPDX-License-Identifier: Apache-2.0
#include "shm/peer_regions.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace hvd::shm {

namespace {

int pidfd_open(int pid) {
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

int pidfd_getfd(int pidfd, int fd) {
    return static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
}

// The inode of the file behind descriptor fd; 0 if fstat fails.
uint64_t inode_of(int fd) {
    struct stat st;
    return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// Whether the process behind pfd still holds a region: its descriptor fd still names the file
// of `inode`. Only a descriptor it closed (EBADF) or one that now names another file says no;
// when this process cannot take a descriptor (it is out of them), assume yes.
bool still_held(int pfd, int32_t fd, uint64_t inode) {
    int mine = pidfd_getfd(pfd, fd);
    if (mine < 0) return errno != EBADF;
    const uint64_t now = inode_of(mine);
    ::close(mine);
    return now == 0 || now == inode;
}

}  // namespace

PeerRegions::PeerRegions(int32_t members)
    : by_member_(static_cast<size_t>(members)), pidfds_(static_cast<size_t>(members), -1) {}

PeerRegions::~PeerRegions() {
    for (auto &mappings : by_member_)
        for (const Mapping &m : mappings)
            ::munmap(m.base, m.bytes);
    for (int fd : pidfds_)
        if (fd >= 0) ::close(fd);
}

bool PeerRegions::can_take_fds_from(int pid) {
    int pfd = pidfd_open(pid);
    if (pfd < 0) return false;
    // An invalid descriptor number: EBADF once the kernel has checked the ptrace rights,
    // EPERM before, ENOSYS without the call.
    int fd = pidfd_getfd(pfd, -1);
    int err = errno;
    if (fd >= 0) ::close(fd);
    ::close(pfd);
    return fd < 0 && err == EBADF;
}

int PeerRegions::pidfd(int32_t member, int pid, std::string *error) {
    int &fd = pidfds_[static_cast<size_t>(member)];
    if (fd < 0) {
        fd = pidfd_open(pid);
        if (fd < 0)
            *error = strprintf("pidfd_open of member %d (pid %d): %s", member, pid,
                               std::strerror(errno));
    }
    return fd;
}

void PeerRegions::drop_freed(int32_t member, int pfd) {
    std::vector<Mapping> &mine = by_member_[static_cast<size_t>(member)];
    for (size_t i = 0; i < mine.size();) {
        if (still_held(pfd, mine[i].fd, mine[i].inode)) {
            ++i;
            continue;
        }
        ::munmap(mine[i].base, mine[i].bytes);
        mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

char *PeerRegions::map(int32_t member, int pid, const SharedRef &ref, std::string *error) {
    std::vector<Mapping> &mine = by_member_[static_cast<size_t>(member)];
    for (Mapping &m : mine) {
        if (m.id == ref.id && m.bytes == ref.bytes) {
            m.last_use = ++uses_;
            return m.base;
        }
    }
    int pfd = pidfd(member, pid, error);
    if (pfd < 0) return nullptr;
    int fd = pidfd_getfd(pfd, ref.fd);
    if (fd < 0) {
        *error = strprintf("pidfd_getfd of descriptor %d from member %d (pid %d): %s", ref.fd,
                           member, pid, std::strerror(errno));
        return nullptr;
    }
    // A new region of this member: release the ones it has freed since.
    drop_freed(member, pfd);
    const uint64_t inode = inode_of(fd);
    void *base =
        ::mmap(nullptr, ref.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    int err = errno;
    ::close(fd);
    if (base == MAP_FAILED) {
        *error =
            strprintf("mmap of %llu bytes shared by member %d (pid %d): %s",
                      static_cast<unsigned long long>(ref.bytes), member, pid, std::strerror(err));
        return nullptr;
    }
    if (mine.size() >= kPerMember) {
        size_t oldest = 0;
        for (size_t i = 1; i < mine.size(); ++i)
            if (mine[i].last_use < mine[oldest].last_use) oldest = i;
        ::munmap(mine[oldest].base, mine[oldest].bytes);
        mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(oldest));
    }
    mine.push_back(Mapping{ref.id, static_cast<char *>(base), ref.bytes, ++uses_, ref.fd, inode});
    return static_cast<char *>(base);
}

}  // namespace hvd::shm
