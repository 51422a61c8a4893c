// SPDX-License-Identifier: Apache-2.0
// The ranks of a single-host job as members of one shared-memory segment: a staging slot per
// member (two halves, used by alternate rounds) and per-member progress counters. The
// single-host collectives (collectives/*_shm.cc) move data through the slots with plain loads
// and stores, paced by the counters: no transport, no page pinning, no kernel on the data path.
//
// Rounds: every collective on the group takes one or more rounds, numbered 1, 2, ... in the
// order the members run them (the same on all, as for every collective). In round t a member
// uses its slot half t % 2, and signals its progress by raising its own counters to t. A
// member writes half t % 2 only after every member's kDone counter reached t - 2 (everyone has
// finished reading that half's previous round).
//
// Mapped rounds (allreduces of hvd_mem_alloc memory, collectives/shm/allreduce_shm_mapped.cc): a
// member's slot half holds where its buffers are instead of data; kReduced then says it has
// mapped every other member's buffers (or failed to: its `resolved` mark says which), and kDone
// that it has written its share into every member's buffers. A round that some member cannot
// use ends with kDone and the collective starts again through the slots.
//
// Waiting: spin for the group's spin policy's window (yielding the CPU after every poll where
// it says so), then sleep on a futex in the segment (the poster
// wakes members that said they sleep). Every wait ends at the deadline or when the abort flag
// is raised (the failure monitor raises it when a peer process dies).
//
// One thread per member uses a Group (the engine thread). Members may be threads of one
// process (tests) or separate processes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/deadline.h"
#include "hvd/hvd.h"
#include "shm/peer_regions.h"
#include "transport/transport.h"

namespace hvd::shm {

enum class Counter : int {
    kReady = 0,    // this member's data for the round is in its slot
    kReduced = 1,  // this member's share of a reduction is in its slot
    kDone = 2,     // this member has finished reading the round's slots (in a mapped round:
                   // writing its share into every member's buffers)
};

// A member's yes/no for a mapped round, one per slot half.
enum class Mark : int {
    kMapped = 0,    // with kReady: its buffers are regions, and its slot half says where
    kResolved = 1,  // with kReduced: it mapped every other member's buffers
};

// The group's tunables. The creator's values go into the segment's header and every member
// uses those, so all members choose the same algorithm for the same op whatever their own
// environment says. Defaults: the settings table's (config/settings.h).
struct Settings {
    // Bytes of one slot half (HVD_SHM_SLOT_BYTES, rounded up to whole pages).
    size_t slot_bytes;
    // Allreduces up to this size are reduced whole by every member in one round
    // (HVD_SHM_ONE_SHOT_MAX_BYTES).
    size_t one_shot_max_bytes;
    // Broadcasts in this range (allgather blocks from the minimum on) go by single copy, once
    // enabled (HVD_SHM_SINGLE_COPY_MIN_BYTES, 0 = never; HVD_SHM_SINGLE_COPY_MAX_BYTES).
    // With 2 ranks it made 128 KiB broadcasts and 512 KiB allgathers faster, but 64 MiB
    // broadcasts slower, as a single copy leaves all the work to the reader while staging
    // splits it.
    size_t single_copy_min_bytes;
    size_t single_copy_max_bytes;
    // Allreduces from this size (and above one_shot_max_bytes) whose buffers every member
    // allocated with hvd_mem_alloc are reduced in place in those buffers, once enabled
    // (HVD_SHM_MAPPED_MIN_BYTES, 0 = never); measured faster than the slots from there on.
    size_t mapped_min_bytes;

    // The table's defaults.
    Settings();
    // The environment's values (HVD_SHM_SLOT_BYTES, ...); a malformed or negative one keeps
    // the default, as does a slot of 0, and a slot is at most 64 MiB.
    static Settings from_env();
};

class Group {
  public:
    // Creates and maps a new segment for `size` members under a fresh name; this process is
    // member `my_index`. Throws hvd::Error(HVD_ERR_TRANSPORT) naming the call that failed
    // (e.g. /dev/shm full or absent), HVD_ERR_INVALID_ARG for a bad size or index.
    static std::unique_ptr<Group> create(int32_t size, int32_t my_index, const Settings &settings);
    // Maps the segment another member created. Throws HVD_ERR_TRANSPORT if it is absent or its
    // header does not match (size, layout version, nonce). Takes the creator's settings.
    static std::unique_ptr<Group> open(const std::string &name, uint64_t nonce, int32_t size,
                                       int32_t my_index);
    ~Group();  // unmaps (and unlinks the name if this member created it and still holds it)
    Group(const Group &) = delete;
    Group &operator=(const Group &) = delete;

    // The segment's name and nonce, for the other members' open().
    const std::string &name() const { return name_; }
    uint64_t nonce() const;
    // Removes the segment's name (the memory stays while anyone maps it). The creator calls
    // it once every member has mapped the segment, so nothing is left behind by a crash.
    void unlink();
    // Maps the whole segment into this process, so that no collective takes a page fault.
    // Each member's own slots are on its NUMA node (create and open bind them there when the
    // member runs within one node of several); call this once every member has mapped the
    // segment, after which they stay there.
    void map_peers();

    int32_t size() const { return size_; }
    int32_t my_index() const { return my_index_; }
    size_t slot_bytes() const { return settings_.slot_bytes; }
    size_t one_shot_max_bytes() const { return settings_.one_shot_max_bytes; }

    // The next round number: every member gets the same sequence.
    uint64_t next_round() { return ++round_; }
    // Member m's slot half for round t (slot_bytes() bytes, page aligned).
    char *slot(int32_t member, uint64_t round) const;

    // Marks this member's slot half for `round` as written for the collective `seq` (before
    // posting kReady). stamped() checks a member whose kReady reached `round` (acquired): false
    // means the members are not in the same collective, a fatal inconsistency.
    void stamp(uint64_t round, uint32_t seq);
    bool stamped(int32_t member, uint64_t round, uint32_t seq) const;

    // Raises this member's counter c to `round` (release: writes to the slots before it are
    // visible to a member that sees the new value) and wakes sleeping members.
    void post(Counter c, uint64_t round);
    // Waits until member m's counter c is at least `round` (acquire). HVD_OK, HVD_ERR_TIMED_OUT,
    // or the abort status. With `drive`, the wait also drives that transport (its progress(),
    // every few microseconds while polling and at least every kDrivenSleepMs while asleep), so
    // bytes of a completed send that it still holds (Transport::sends_need_progress) leave
    // while this member waits; the calling thread must be the one allowed to drive it.
    hvd_status_t wait(int32_t member, Counter c, uint64_t round, const Deadline &deadline,
                      const std::atomic<int32_t> *abort_status,
                      transport::Transport *drive = nullptr);
    // The same for every member; *laggard gets the member waited for when it fails.
    hvd_status_t wait_all(Counter c, uint64_t round, const Deadline &deadline,
                          const std::atomic<int32_t> *abort_status, int32_t *laggard,
                          transport::Transport *drive = nullptr);
    // Before writing this member's slot in `round`: every member finished round - 2.
    hvd_status_t wait_slot_free(uint64_t round, const Deadline &deadline,
                                const std::atomic<int32_t> *abort_status, int32_t *laggard,
                                transport::Transport *drive = nullptr);
    // Longest sleep of a wait that drives a transport: how late its held bytes may leave.
    static constexpr int64_t kDrivenSleepMs = 1;

    // ---- Single copy: reading another member's buffer straight from its process (Linux
    // cross-memory attach, process_vm_readv), so a block crosses once instead of through a slot.

    // Tries a read of every other member's control block from its process; true if all work
    // (same user or ptrace rights, one PID namespace). Call once every member has mapped the
    // segment.
    bool probe_single_copy() const;
    // Turns single copy on (for the settings' range) or off; off until called. Every member
    // must make the same call.
    void enable_single_copy(bool on) {
        single_copy_on_ = on && settings_.single_copy_min_bytes > 0;
    }
    // Whether a transfer of `bytes` may go by single copy with no upper bound: allgathers
    // (every member reads the others' blocks) and two-member broadcasts (both copy half).
    bool single_copy_unbounded(size_t bytes) const {
        return single_copy_on_ && bytes >= settings_.single_copy_min_bytes;
    }
    bool single_copy(size_t bytes) const {
        return single_copy_on_ && bytes >= settings_.single_copy_min_bytes &&
               bytes <= settings_.single_copy_max_bytes;
    }
    // Copies len bytes between `remote` (an address in member's process) and `local`: from
    // remote to local, or the other way when to_remote. HVD_OK, or HVD_ERR_TRANSPORT with
    // *error saying what failed.
    hvd_status_t copy_remote(int32_t member, uint64_t remote, void *local, size_t len,
                             bool to_remote, std::string *error) const;

    // How this member's waits poll before sleeping on the futex (this process's context's
    // policy; default: a 50 us window, no yielding). Set before the group is used.
    void set_spin_policy(const transport::SpinPolicy &policy) { spin_policy_ = policy; }

    // ---- Mapped buffers: members whose buffers are hvd_mem_alloc regions (shm/shared_memory.h)
    // read and write each other's buffers in place, each mapping the others' regions.

    // Whether this process may map every other member's regions (takes their file
    // descriptors). Call once every member has mapped the segment.
    bool probe_mapped() const;
    // Turns the mapped path on or off (off until called). Every member must make the same call.
    void enable_mapped(bool on) { mapped_on_ = on && settings_.mapped_min_bytes > 0; }
    // Whether other members' regions may be mapped at all (single-copy reads of blocks in
    // regions then go through the mapping).
    bool may_map() const { return mapped_on_; }
    // Whether an allreduce of `bytes` may go the mapped way (the same answer on every member).
    bool mapped(size_t bytes) const { return mapped_on_ && bytes >= settings_.mapped_min_bytes; }
    // This member's mark `which` for `round`, written before posting the counter it goes
    // with; marked() reads member m's after that counter (see Mark).
    void mark(Mark which, uint64_t round, bool on);
    bool marked(int32_t member, Mark which, uint64_t round) const;
    // The start, in this process, of member m's region `ref`; nullptr with *error if it cannot
    // be mapped.
    char *map_region(int32_t member, const SharedRef &ref, std::string *error);

  private:
    struct Header;
    struct Control;
    Group(std::string name, void *base, size_t bytes, int32_t size, int32_t my_index,
          const Settings &settings, bool owns_name);
    Header *header() const;
    Control *control(int32_t member) const;
    // Maps this member's slots and binds them to its NUMA node (topology/local_topology.h).
    void place_own_slots();
    bool reached(int32_t member, Counter c, uint64_t round) const;
    void sleep_once(int32_t member, Counter c, uint64_t round, const Deadline &deadline,
                    int64_t max_ms);

    std::string name_;
    void *base_;
    size_t bytes_;
    int32_t size_;
    int32_t my_index_;
    Settings settings_;
    bool owns_name_;
    uint64_t round_ = 0;
    bool single_copy_on_ = false;
    bool mapped_on_ = false;
    PeerRegions peer_regions_;
    bool yield_while_spinning_ = true;  // this process may run on more than one CPU
    transport::SpinPolicy spin_policy_;
};

}  // namespace hvd::shm
