// SPDX-License-Identifier: Apache-2.0
#include "shm/shm_group.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "common/error.h"
#include "common/log.h"
#include "config/read.h"
#include "topology/local_topology.h"
#include "transport/transport.h"

namespace hvd::shm {

namespace {

constexpr uint64_t kMagic = 0x3168766473686d31ULL;  // "1mhsdvh1"
constexpr uint32_t kLayoutVersion = 4;
constexpr size_t kPage = 4096;

// Maps the pages of [p, p + bytes) into this process (they exist: the creator fallocated them),
// so that no collective takes a page fault.
void populate(char *p, size_t bytes) {
#ifdef MADV_POPULATE_READ
    if (::madvise(p, bytes, MADV_POPULATE_READ) == 0) return;
#endif
    for (size_t off = 0; off < bytes; off += kPage)
        (void)*static_cast<volatile char *>(p + off);
}
constexpr size_t kMaxSlotBytes = size_t{64} << 20;
// Longest single futex sleep: bounds how late an abort or the deadline is seen.
constexpr int64_t kMaxSleepMs = 10;
// Counter polls between two looks at the clock and the abort flag while spinning.
constexpr int kPollsPerCheck = 64;

size_t round_up(size_t v, size_t to) {
    return (v + to - 1) / to * to;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

// Shared (not FUTEX_PRIVATE): the word lives in a mapping of several processes.
void futex_wait(uint32_t *word, uint32_t expected, int64_t ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    ::syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake(uint32_t *word) {
    ::syscall(SYS_futex, word, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

std::string errno_text(const char *call, int err) {
    return strprintf("%s: %s", call, std::strerror(err));
}

uint64_t random_u64() {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

struct Group::Header {
    uint64_t magic;
    uint32_t version;
    int32_t size;
    uint64_t nonce;
    uint64_t slot_bytes;
    uint64_t one_shot_max_bytes;
    uint64_t single_copy_min_bytes;
    uint64_t single_copy_max_bytes;
    uint64_t mapped_min_bytes;
};

// One member's counters (written by it, polled by the others) and its sleep flag and bell
// (the futex word the others ring), on separate 128-byte lines so polling one does not steal
// the other's line.
struct Group::Control {
    alignas(128) uint64_t counters[3];
    uint64_t stamp_round[2];  // by slot half: the round last written, and its collective
    uint32_t stamp_seq[2];
    uint32_t marks[2][2];  // [Mark][slot half]: 1 for yes
    alignas(128) uint32_t sleeping;
    uint32_t bell;
    int32_t pid;    // the member's process, for single-copy reads
    uint64_t self;  // this block's address in the member's own mapping
};

namespace {

size_t controls_offset() {
    return kPage;
}

size_t slots_offset(int32_t size) {
    return controls_offset() + round_up(static_cast<size_t>(size) * 256, kPage);
}

size_t layout_bytes(int32_t size, size_t slot_bytes) {
    return slots_offset(size) + static_cast<size_t>(size) * 2 * slot_bytes;
}

// The table's default of s; its range (>= 0, else the default) keeps reads non-negative.
size_t default_bytes(config::Setting s) {
    return static_cast<size_t>(config::info(s).default_number);
}

size_t env_bytes(config::Setting s) {
    return static_cast<size_t>(config::get_int(s));
}

}  // namespace

Settings::Settings()
    : slot_bytes(default_bytes(config::Setting::kShmSlotBytes)),
      one_shot_max_bytes(default_bytes(config::Setting::kShmOneShotMaxBytes)),
      single_copy_min_bytes(default_bytes(config::Setting::kShmSingleCopyMinBytes)),
      single_copy_max_bytes(default_bytes(config::Setting::kShmSingleCopyMaxBytes)),
      mapped_min_bytes(default_bytes(config::Setting::kShmMappedMinBytes)) {}

Settings Settings::from_env() {
    Settings s;
    size_t slot = env_bytes(config::Setting::kShmSlotBytes);
    slot = slot == 0 ? s.slot_bytes : round_up(slot, kPage);
    s.slot_bytes = slot > kMaxSlotBytes ? kMaxSlotBytes : slot;
    s.one_shot_max_bytes = env_bytes(config::Setting::kShmOneShotMaxBytes);
    s.single_copy_min_bytes = env_bytes(config::Setting::kShmSingleCopyMinBytes);
    s.single_copy_max_bytes = env_bytes(config::Setting::kShmSingleCopyMaxBytes);
    s.mapped_min_bytes = env_bytes(config::Setting::kShmMappedMinBytes);
    return s;
}

Group::Group(std::string name, void *base, size_t bytes, int32_t size, int32_t my_index,
             const Settings &settings, bool owns_name)
    : name_(std::move(name)),
      base_(base),
      bytes_(bytes),
      size_(size),
      my_index_(my_index),
      settings_(settings),
      owns_name_(owns_name),
      peer_regions_(size) {
    // A process pinned to one CPU yields to its own threads only, which costs them: the
    // 256 x 4 KiB step was much slower when the engine yielded to its caller.
    yield_while_spinning_ = transport::may_run_on_several_cpus();
    Control *me = control(my_index);
    me->pid = static_cast<int32_t>(::getpid());
    me->self = reinterpret_cast<uint64_t>(me);
}

std::unique_ptr<Group> Group::create(int32_t size, int32_t my_index, const Settings &settings) {
    const size_t slot_bytes = settings.slot_bytes;
    static_assert(sizeof(Control) == 256, "one member's control block is 256 bytes");
    if (size < 1 || my_index < 0 || my_index >= size || slot_bytes == 0 || slot_bytes % kPage != 0)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("shared memory group: bad size %d, index %d or slot bytes %zu", size,
                              my_index, slot_bytes));
    std::string name = strprintf("/hvd-%d-%016llx", static_cast<int>(::getpid()),
                                 static_cast<unsigned long long>(random_u64()));
    int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw Error(HVD_ERR_TRANSPORT, errno_text(("shm_open " + name).c_str(), errno));
    size_t bytes = layout_bytes(size, slot_bytes);
    // Reserve the pages now: a full /dev/shm fails here, not with SIGBUS mid-collective.
    int err = ::ftruncate(fd, static_cast<off_t>(bytes)) != 0
                  ? errno
                  : ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    void *base = MAP_FAILED;
    if (err == 0) {
        // Not populated: each member maps its own slots first, onto its NUMA node.
        base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) err = errno;
    }
    ::close(fd);
    if (err != 0) {
        ::shm_unlink(name.c_str());
        throw Error(HVD_ERR_TRANSPORT, strprintf("shared memory segment %s of %zu bytes: %s",
                                                 name.c_str(), bytes, std::strerror(err)));
    }
    auto *h = static_cast<Header *>(base);
    h->version = kLayoutVersion;
    h->size = size;
    h->nonce = random_u64();
    h->slot_bytes = slot_bytes;
    h->one_shot_max_bytes = settings.one_shot_max_bytes;
    h->single_copy_min_bytes = settings.single_copy_min_bytes;
    h->single_copy_max_bytes = settings.single_copy_max_bytes;
    h->mapped_min_bytes = settings.mapped_min_bytes;
    __atomic_store_n(&h->magic, kMagic, __ATOMIC_RELEASE);
    std::unique_ptr<Group> group(
        new Group(std::move(name), base, bytes, size, my_index, settings, true));
    group->place_own_slots();
    return group;
}

std::unique_ptr<Group> Group::open(const std::string &name, uint64_t nonce, int32_t size,
                                   int32_t my_index) {
    if (size < 1 || my_index < 0 || my_index >= size)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("shared memory group: bad size %d or index %d", size, my_index));
    int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) throw Error(HVD_ERR_TRANSPORT, errno_text(("shm_open " + name).c_str(), errno));
    struct stat st;
    int err = ::fstat(fd, &st) != 0 ? errno : 0;
    size_t bytes = err == 0 ? static_cast<size_t>(st.st_size) : 0;
    void *base = MAP_FAILED;
    if (err == 0 && bytes >= kPage) {
        base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) err = errno;
    }
    ::close(fd);
    if (base == MAP_FAILED)
        throw Error(HVD_ERR_TRANSPORT, strprintf("shared memory segment %s: %s", name.c_str(),
                                                 err != 0 ? std::strerror(err) : "too small"));
    const auto *h = static_cast<const Header *>(base);
    const char *problem = nullptr;
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kMagic || h->version != kLayoutVersion)
        problem = "not a libhvd segment of this version";
    else if (h->nonce != nonce)
        problem = "another job's segment (nonce differs)";
    else if (h->size != size)
        problem = "made for another number of ranks";
    else if (h->slot_bytes == 0 || h->slot_bytes % kPage != 0 ||
             layout_bytes(size, h->slot_bytes) != bytes)
        problem = "its size does not match its header";
    if (problem != nullptr) {
        ::munmap(base, bytes);
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("shared memory segment %s: %s", name.c_str(), problem));
    }
    Settings settings;
    settings.slot_bytes = h->slot_bytes;
    settings.one_shot_max_bytes = h->one_shot_max_bytes;
    settings.single_copy_min_bytes = h->single_copy_min_bytes;
    settings.single_copy_max_bytes = h->single_copy_max_bytes;
    settings.mapped_min_bytes = h->mapped_min_bytes;
    std::unique_ptr<Group> group(new Group(name, base, bytes, size, my_index, settings, false));
    group->place_own_slots();
    return group;
}

void Group::place_own_slots() {
    char *mine = slot(my_index_, 0);  // both halves follow each other
    const size_t len = 2 * settings_.slot_bytes;
    populate(mine, len);  // mapped here alone, its pages may move
    std::string why;
    int node = topology::this_process_locality().numa_node;
    if (!topology::bind_memory(mine, len, node, &why))
        HVD_LOG(kDebug, -1, "shared memory: member %d's slots stay where they are (%s)", my_index_,
                why.c_str());
}

void Group::map_peers() {
    populate(static_cast<char *>(base_), bytes_);
}

Group::~Group() {
    unlink();
    ::munmap(base_, bytes_);
}

uint64_t Group::nonce() const {
    return header()->nonce;
}

void Group::unlink() {
    if (!owns_name_) return;
    ::shm_unlink(name_.c_str());
    owns_name_ = false;
}

Group::Header *Group::header() const {
    return static_cast<Header *>(base_);
}

Group::Control *Group::control(int32_t member) const {
    return reinterpret_cast<Control *>(static_cast<char *>(base_) + controls_offset()) + member;
}

char *Group::slot(int32_t member, uint64_t round) const {
    size_t index = static_cast<size_t>(member) * 2 + (round & 1);
    return static_cast<char *>(base_) + slots_offset(size_) + index * settings_.slot_bytes;
}

void Group::stamp(uint64_t round, uint32_t seq) {
    Control *me = control(my_index_);
    __atomic_store_n(&me->stamp_round[round & 1], round, __ATOMIC_RELAXED);
    __atomic_store_n(&me->stamp_seq[round & 1], seq, __ATOMIC_RELAXED);
}

bool Group::stamped(int32_t member, uint64_t round, uint32_t seq) const {
    const Control *c = control(member);
    return __atomic_load_n(&c->stamp_round[round & 1], __ATOMIC_RELAXED) == round &&
           __atomic_load_n(&c->stamp_seq[round & 1], __ATOMIC_RELAXED) == seq;
}

bool Group::reached(int32_t member, Counter c, uint64_t round) const {
    const uint64_t *word = &control(member)->counters[static_cast<int>(c)];
    return __atomic_load_n(word, __ATOMIC_ACQUIRE) >= round;
}

void Group::post(Counter c, uint64_t round) {
    // Sequentially consistent, paired with sleep_once(): either this store is seen by the
    // sleeper's last look, or the sleeper's flag is seen here and its bell rung.
    __atomic_store_n(&control(my_index_)->counters[static_cast<int>(c)], round, __ATOMIC_SEQ_CST);
    for (int32_t m = 0; m < size_; ++m) {
        if (m == my_index_) continue;
        Control *other = control(m);
        if (__atomic_load_n(&other->sleeping, __ATOMIC_SEQ_CST) == 0) continue;
        __atomic_fetch_add(&other->bell, 1, __ATOMIC_SEQ_CST);
        futex_wake(&other->bell);
    }
}

void Group::sleep_once(int32_t member, Counter c, uint64_t round, const Deadline &deadline,
                       int64_t max_ms) {
    Control *me = control(my_index_);
    __atomic_store_n(&me->sleeping, 1, __ATOMIC_SEQ_CST);
    uint32_t bell = __atomic_load_n(&me->bell, __ATOMIC_SEQ_CST);
    const uint64_t *word = &control(member)->counters[static_cast<int>(c)];
    if (__atomic_load_n(word, __ATOMIC_SEQ_CST) < round)
        futex_wait(&me->bell, bell, deadline.remaining_ms(max_ms));
    __atomic_store_n(&me->sleeping, 0, __ATOMIC_RELAXED);
}

hvd_status_t Group::wait(int32_t member, Counter c, uint64_t round, const Deadline &deadline,
                         const std::atomic<int32_t> *abort_status, transport::Transport *drive) {
    if (reached(member, c, round)) return HVD_OK;
    const auto start = std::chrono::steady_clock::now();
    auto spin_until = start + spin_policy_.window;
    const auto yield_from = start + transport::kYieldAfterSpin;
    // Yielding, each poll may wait for another process's time slice: look at the clock and
    // the abort flag after every one.
    const bool yield_every_poll = spin_policy_.yield && spin_until > start;
    const int polls_per_check = yield_every_poll ? 1 : kPollsPerCheck;
    for (;;) {
        for (int i = 0; i < polls_per_check; ++i) {
            if (reached(member, c, round)) return HVD_OK;
            if (yield_every_poll)
                ::sched_yield();  // ranks share CPUs: let the one waited for run
            else
                cpu_relax();
        }
        if (abort_status != nullptr) {
            int32_t a = abort_status->load(std::memory_order_acquire);
            if (a != 0) return static_cast<hvd_status_t>(a);
        }
        if (deadline.expired()) return HVD_ERR_TIMED_OUT;
        const bool drove = drive != nullptr && drive->progress();
        const auto now = std::chrono::steady_clock::now();
        // The transport at work (held bytes leaving, messages arriving) counts as activity,
        // as in transport::wait_all: poll on rather than sleep.
        if (drove) spin_until = std::max(spin_until, now + spin_policy_.window);
        if (now >= spin_until) {
            sleep_once(member, c, round, deadline, drive != nullptr ? kDrivenSleepMs : kMaxSleepMs);
        } else if (yield_while_spinning_ && now >= yield_from) {
            // Unpinned ranks: the member waited for may be runnable on this very CPU; let it
            // run instead of spinning it out (small allreduces of 2 unbound ranks several times
            // faster).
            ::sched_yield();
        }
    }
}

hvd_status_t Group::wait_all(Counter c, uint64_t round, const Deadline &deadline,
                             const std::atomic<int32_t> *abort_status, int32_t *laggard,
                             transport::Transport *drive) {
    for (int32_t m = 0; m < size_; ++m) {
        if (m == my_index_) continue;
        hvd_status_t s = wait(m, c, round, deadline, abort_status, drive);
        if (s != HVD_OK) {
            *laggard = m;
            return s;
        }
    }
    return HVD_OK;
}

hvd_status_t Group::wait_slot_free(uint64_t round, const Deadline &deadline,
                                   const std::atomic<int32_t> *abort_status, int32_t *laggard,
                                   transport::Transport *drive) {
    if (round <= 2) return HVD_OK;
    return wait_all(Counter::kDone, round - 2, deadline, abort_status, laggard, drive);
}

bool Group::probe_single_copy() const {
    for (int32_t m = 0; m < size_; ++m) {
        if (m == my_index_) continue;
        const Control *other = control(m);
        Control copy;
        std::string ignored;
        if (copy_remote(m, other->self, &copy, sizeof copy, false, &ignored) != HVD_OK)
            return false;
        if (copy.pid != other->pid || copy.self != other->self) return false;
    }
    return true;
}

hvd_status_t Group::copy_remote(int32_t member, uint64_t remote, void *local, size_t len,
                                bool to_remote, std::string *error) const {
    const pid_t pid = control(member)->pid;
    char *mine = static_cast<char *>(local);
    size_t done = 0;
    while (done < len) {
        struct iovec l = {mine + done, len - done};
        struct iovec r = {reinterpret_cast<void *>(remote + done), len - done};
        ssize_t moved = to_remote ? ::process_vm_writev(pid, &l, 1, &r, 1, 0)
                                  : ::process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (moved <= 0) {
            int err = moved < 0 ? errno : EIO;
            if (err == EINTR) continue;
            *error = strprintf(
                "single-copy %s of %zu bytes %s member %d (pid %d) failed after "
                "%zu: %s",
                to_remote ? "write" : "read", len, to_remote ? "to" : "from", member,
                static_cast<int>(pid), done, std::strerror(err));
            return HVD_ERR_TRANSPORT;
        }
        done += static_cast<size_t>(moved);
    }
    return HVD_OK;
}

bool Group::probe_mapped() const {
    for (int32_t m = 0; m < size_; ++m)
        if (m != my_index_ && !PeerRegions::can_take_fds_from(control(m)->pid)) return false;
    return true;
}

void Group::mark(Mark which, uint64_t round, bool on) {
    uint32_t *word = &control(my_index_)->marks[static_cast<int>(which)][round & 1];
    __atomic_store_n(word, on ? 1u : 0u, __ATOMIC_RELAXED);
}

bool Group::marked(int32_t member, Mark which, uint64_t round) const {
    const uint32_t *word = &control(member)->marks[static_cast<int>(which)][round & 1];
    return __atomic_load_n(word, __ATOMIC_RELAXED) != 0;
}

char *Group::map_region(int32_t member, const SharedRef &ref, std::string *error) {
    return peer_regions_.map(member, control(member)->pid, ref, error);
}

}  // namespace hvd::shm
