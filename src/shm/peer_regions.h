// SPDX-License-Identifier: Apache-2.0
// Other processes' shared regions (shm/shared_memory.h) mapped into this one: a member of a
// shared-memory group publishes a region's SharedRef, and the others map it here by taking a
// copy of its memfd (pidfd_getfd, which needs the same rights over the process as
// process_vm_readv) and mapping that.
//
// Mappings are cached by (member, region id) and reused by later collectives; at most
// kPerMember per member stay mapped, the least recently used unmapped first. Whenever a member's
// region is mapped anew, the member's other mappings are checked and those whose region the
// owner has freed are dropped (its descriptor is closed, or now names another file), so that
// freed memory is released once the owner allocates again; a region freed last stays mapped
// until then or until this cache is destroyed. Not thread-safe: the group's one engine thread
// uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shm/shared_memory.h"

namespace hvd::shm {

class PeerRegions {
  public:
    static constexpr size_t kPerMember = 16;

    explicit PeerRegions(int32_t members);
    ~PeerRegions();
    PeerRegions(const PeerRegions &) = delete;
    PeerRegions &operator=(const PeerRegions &) = delete;

    // The start, in this process, of `member`'s region `ref` (pid: the member's process),
    // mapped read-write on first use. nullptr with *error saying which call failed.
    char *map(int32_t member, int pid, const SharedRef &ref, std::string *error);

    // Whether this process may take file descriptors from process `pid` (the kernel has
    // pidfd_getfd, and ptrace rules allow it).
    static bool can_take_fds_from(int pid);

  private:
    struct Mapping {
        uint64_t id;
        char *base;
        size_t bytes;
        uint64_t last_use;
        int32_t fd;      // the region's descriptor in its owner
        uint64_t inode;  // of the file it mapped
    };
    int pidfd(int32_t member, int pid, std::string *error);
    // Drops the member's mappings whose region its owner no longer holds.
    void drop_freed(int32_t member, int pfd);

    std::vector<std::vector<Mapping>> by_member_;
    std::vector<int> pidfds_;
    uint64_t uses_ = 0;
};

}  // namespace hvd::shm
