// SPDX-License-Identifier: Apache-2.0
#include "shm/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "common/error.h"
#include "topology/local_topology.h"

namespace hvd::shm {

namespace {

struct Region {
    uint64_t id;
    int fd;
    size_t bytes;
};

struct Registry {
    std::mutex mu;
    std::map<uintptr_t, Region> by_start;  // region start -> region
    uint64_t next_id = 1;
};

Registry &registry() {
    static Registry *r = new Registry;  // never destroyed: regions may be freed at exit
    return *r;
}

[[noreturn]] void fail_with(int err, const char *call, size_t bytes) {
    hvd_status_t s = err == EINVAL ? HVD_ERR_INVALID_ARG : HVD_ERR_NO_MEMORY;
    throw Error(s,
                strprintf("shared memory of %zu bytes: %s: %s", bytes, call, std::strerror(err)));
}

}  // namespace

void *shared_alloc(size_t bytes) {
    if (bytes == 0) throw Error(HVD_ERR_INVALID_ARG, "shared memory: 0 bytes requested");
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    if (bytes > SIZE_MAX - page) fail_with(ENOMEM, "size", bytes);
    const size_t len = (bytes + page - 1) / page * page;
    int fd = ::memfd_create("hvd-mem", MFD_CLOEXEC);
    if (fd < 0) fail_with(errno, "memfd_create", bytes);
    const char *call = "ftruncate";
    int err = ::ftruncate(fd, static_cast<off_t>(len)) != 0 ? errno : 0;
    if (err == 0) {
        call = "posix_fallocate";
        err = ::posix_fallocate(fd, 0, static_cast<off_t>(len));
    }
    void *p = MAP_FAILED;
    if (err == 0) {
        call = "mmap";
        p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
        if (p == MAP_FAILED) err = errno;
    }
    std::string why;  // not on this rank's NUMA node (the OS refused) is no failure
    if (err == 0)
        (void)topology::bind_memory(p, len, topology::this_process_locality().numa_node, &why);
    if (err != 0) {
        ::close(fd);
        fail_with(err == EINVAL ? ENOMEM : err, call, bytes);
    }
    try {
        Registry &r = registry();
        std::lock_guard<std::mutex> lock(r.mu);
        r.by_start[reinterpret_cast<uintptr_t>(p)] = Region{r.next_id++, fd, len};
    } catch (...) {
        ::munmap(p, len);
        ::close(fd);
        throw;
    }
    return p;
}

hvd_status_t shared_free(void *p) {
    Registry &r = registry();
    Region region;
    {
        std::lock_guard<std::mutex> lock(r.mu);
        auto it = r.by_start.find(reinterpret_cast<uintptr_t>(p));
        if (it == r.by_start.end()) return HVD_ERR_INVALID_ARG;
        region = it->second;
        r.by_start.erase(it);
    }
    ::munmap(p, region.bytes);
    ::close(region.fd);
    return HVD_OK;
}

bool shared_find(const void *p, size_t len, SharedRef *ref) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.by_start.upper_bound(at);
    if (it == r.by_start.begin()) return false;
    --it;
    const Region &region = it->second;
    const uintptr_t offset = at - it->first;
    if (offset >= region.bytes || len > region.bytes - offset) return false;
    ref->id = region.id;
    ref->fd = region.fd;
    ref->bytes = region.bytes;
    ref->offset = offset;
    return true;
}

}  // namespace hvd::shm
