// SPDX-License-Identifier: Apache-2.0
#include "engine/host_groups.h"

#include <cstring>
#include <limits>
#include <string>

#include "common/error.h"
#include "common/log.h"
#include "config/read.h"

namespace hvd::engine {

namespace {

// The group offered under `key` by the host's first rank ("<name> <nonce hex>"), opened as
// member `index` of `n`; null with *problem otherwise.
std::unique_ptr<shm::Group> open_offer(const std::string &offer, int32_t n, int32_t index,
                                       std::string *problem) {
    size_t space = offer.find(' ');
    if (space == std::string::npos) {
        *problem = "the host's first rank has no segment to offer";
        return nullptr;
    }
    try {
        uint64_t nonce = std::stoull(offer.substr(space + 1), nullptr, 16);
        return shm::Group::open(offer.substr(0, space), nonce, n, index);
    } catch (const Error &e) {
        *problem = e.what();
    } catch (const std::exception &) {
        *problem = "malformed offer '" + offer + "'";
    }
    return nullptr;
}

// Whether every rank of host_ranks answered `flag` at `pos` of its all_gather value.
bool all_answered(const std::vector<std::string> &answers, const std::vector<int32_t> &host_ranks,
                  size_t pos) {
    for (int32_t r : host_ranks) {
        const std::string &a = answers.at(static_cast<size_t>(r));
        if (a.size() <= pos || a[pos] != '1') return false;
    }
    return true;
}

// A HVD_HIERARCHICAL_* setting as one letter: 'a' (auto, the default), '1' or '0'; an unknown
// value warns and counts as auto.
char hierarchical_mode(config::Setting setting, int32_t rank) {
    const char *v = config::get_string(setting);
    if (v == nullptr || std::strcmp(v, "auto") == 0) return 'a';
    bool on = false;
    if (config::parse_bool(v, &on)) return on ? '1' : '0';
    HVD_LOG(kWarning, rank, "ignoring HVD_%s=%s (auto, 1 or 0): auto", config::info(setting).name,
            v);
    return 'a';
}

// From which size a collective runs hierarchically (kHierarchyOff: never), by its setting
// (mode) and size setting, where its algorithm applies to the hosts.
size_t min_bytes_of(char mode, bool applies, config::Setting min_bytes) {
    if (!applies || mode == '0') return collectives::kHierarchyOff;
    return mode == '1' ? 0 : static_cast<size_t>(config::get_int(min_bytes));
}

// Separates the settings from the place in the "hierarchy" exchange.
constexpr char kPlaceMark = '|';

// A rank's place on its host, for choosing share holders: "<NUMA node> <nearest NIC>"
// ("-1 " when unknown).
std::string place_text(const topology::RankLocality &loc) {
    return std::to_string(loc.numa_node) + " " + loc.nic;
}

// place_text()'s value; unknown parts where malformed (a rank of another build).
collectives::RankPlace parse_place(const std::string &text) {
    collectives::RankPlace place;
    const size_t space = text.find(' ');
    try {
        place.numa_node = std::stoi(text.substr(0, space));
    } catch (const std::exception &) {
        return place;
    }
    if (space != std::string::npos) place.nic = text.substr(space + 1);
    return place;
}

// "NUMA node 0, NIC eth0", "no NUMA node, no NIC": for the log.
std::string place_name(const collectives::RankPlace &place) {
    return (place.numa_node < 0 ? std::string("no NUMA node")
                                : "NUMA node " + std::to_string(place.numa_node)) +
           (place.nic.empty() ? ", no NIC" : ", NIC " + place.nic);
}

std::string size_text(size_t min_bytes) {
    return min_bytes == collectives::kHierarchyOff ? "never" : std::to_string(min_bytes);
}

}  // namespace

std::unique_ptr<shm::Group> attach_host_group(bootstrap::KvClient &kv, int32_t rank,
                                              const std::vector<int32_t> &host_ranks, bool wanted,
                                              const Deadline &deadline, std::string *problem) {
    const int32_t first = host_ranks.at(0);
    const int32_t n = static_cast<int32_t>(host_ranks.size());
    int32_t index = 0;
    while (host_ranks[index] != rank)
        ++index;
    const std::string key = "shm." + std::to_string(first);
    std::unique_ptr<shm::Group> group;
    if (!wanted) *problem = "HVD_SHM=0";
    if (rank == first) {
        std::string offer;
        if (wanted) {
            try {
                group = shm::Group::create(n, 0, shm::Settings::from_env());
                offer = strprintf("%s %016llx", group->name().c_str(),
                                  static_cast<unsigned long long>(group->nonce()));
            } catch (const Error &e) {
                *problem = e.what();
            }
        }
        kv.put(key, offer);
    } else {
        std::string offer = kv.get(key, deadline);
        if (wanted) group = open_offer(offer, n, index, problem);
    }
    std::vector<std::string> mapped = kv.all_gather("shm-mapped", group ? "1" : "0", deadline);
    if (group) {
        group->unlink();  // every rank that could has mapped it: no name left behind
        group->map_peers();
    }
    const bool host_mapped = all_answered(mapped, host_ranks, 0);
    // Single copy needs every rank of the host able to read every other's memory (same user
    // or ptrace rights, one PID namespace); a rank that cannot keeps all of them staging.
    // Mapped buffers likewise need every rank able to take every other's file descriptors.
    bool can_read = host_mapped && group->probe_single_copy();
    bool can_map = can_read && group->probe_mapped();
    std::string mine = std::string(can_read ? "1" : "0") + (can_map ? "1" : "0");
    std::vector<std::string> answers = kv.all_gather("shm-single-copy", mine, deadline);
    if (!host_mapped) {
        if (problem->empty() && wanted) *problem = "a rank of this host could not map it";
        return nullptr;
    }
    const bool everyone_reads = all_answered(answers, host_ranks, 0);
    group->enable_single_copy(everyone_reads);
    group->enable_mapped(everyone_reads && all_answered(answers, host_ranks, 1));
    HVD_LOG(kDebug, rank,
            "shared memory of this host's %d ranks: they %s read each other's memory; mapped "
            "buffers (hvd_mem_alloc) %s",
            n, everyone_reads ? "can" : "cannot", group->may_map() ? "on" : "off");
    return group;
}

std::unique_ptr<collectives::Hierarchy> set_up_hierarchy(bootstrap::KvClient &kv, int32_t rank,
                                                         const std::vector<std::string> &hosts,
                                                         const topology::RankLocality &locality,
                                                         const Deadline &deadline,
                                                         std::unique_ptr<shm::Group> *group) {
    using config::Setting;
    const std::vector<std::vector<int32_t>> by_host = collectives::ranks_by_host(hosts);
    if (by_host.size() < 2) return nullptr;
    const char allreduce = hierarchical_mode(Setting::kHierarchicalAllreduce, rank);
    const char allgather = hierarchical_mode(Setting::kHierarchicalAllgather, rank);
    const char broadcast = hierarchical_mode(Setting::kHierarchicalBroadcast, rank);
    const bool applies = collectives::hierarchy_applies(by_host);
    if (rank == 0 && !applies && allreduce == '1')
        HVD_LOG(kWarning, rank,
                "HVD_HIERARCHICAL_ALLREDUCE=1 needs a host that runs two ranks or more: every "
                "host runs one, so the allreduces run flat");
    std::unique_ptr<collectives::Hierarchy> h =
        std::make_unique<collectives::Hierarchy>(collectives::make_hierarchy(by_host, rank));
    h->allreduce_min_bytes =
        min_bytes_of(allreduce, applies, Setting::kHierarchicalAllreduceMinBytes);
    h->allgather_min_bytes = allgather != '0' && collectives::spans_hosts(by_host, allgather == '1')
                                 ? 0
                                 : collectives::kHierarchyOff;
    const int64_t allgather_max = config::get_int(Setting::kHierarchicalAllgatherMaxBytes);
    if (allgather == 'a' && allgather_max > 0)
        h->allgather_max_bytes = static_cast<size_t>(allgather_max);
    h->broadcast_min_bytes =
        min_bytes_of(broadcast, collectives::spans_hosts(by_host, broadcast == '1'),
                     Setting::kHierarchicalBroadcastMinBytes);
    h->cuda_allreduce = allreduce == '1' && applies;
    h->cuda_allgather = allgather == '1' && applies;  // else no host would run NCCL at all
    const bool any = h->allreduce_min_bytes != collectives::kHierarchyOff ||
                     h->allgather_min_bytes != collectives::kHierarchyOff ||
                     h->broadcast_min_bytes != collectives::kHierarchyOff;
    // A host of one rank needs no group. Every rank of a job spanning hosts takes part in the
    // exchanges, whatever its settings say: one that skipped them would leave the others
    // waiting for it.
    const bool alone = h->local_members.size() == 1;
    const bool wanted = config::get_bool(Setting::kShm) && any && !alone;
    std::string problem;
    *group = attach_host_group(kv, rank, h->local_members, wanted, deadline, &problem);
    const bool ready = *group != nullptr || alone;
    // Every rank must pick the same algorithm for a size: the settings travel with the answer,
    // followed by this rank's place on its host.
    std::string mine = std::string(ready ? "1" : "0") + allreduce + allgather + broadcast + " " +
                       size_text(h->allreduce_min_bytes) + " " + size_text(h->allgather_min_bytes) +
                       "-" + size_text(h->allgather_max_bytes) + " " +
                       size_text(h->broadcast_min_bytes);
    std::vector<std::string> answers =
        kv.all_gather("hierarchy", mine + kPlaceMark + place_text(locality), deadline);
    bool agree = true;
    std::vector<collectives::RankPlace> places(answers.size());
    for (size_t r = 0; r < answers.size(); ++r) {
        const size_t mark = answers[r].find(kPlaceMark);
        agree = agree && answers[r].compare(0, mark, mine) == 0 && mark == mine.size();
        if (mark != std::string::npos) places[r] = parse_place(answers[r].substr(mark + 1));
    }
    if (!agree || !ready || !any) {
        if (wanted && !ready)
            HVD_LOG(kWarning, rank,
                    "no shared memory on this host (%s): the collectives across hosts run flat",
                    problem.c_str());
        else if (!agree && rank == 0)
            HVD_LOG(kWarning, rank,
                    "not every rank has shared memory with its host and the same "
                    "HVD_HIERARCHICAL_{ALLREDUCE,ALLGATHER,BROADCAST} and their _MIN_BYTES: the "
                    "collectives across hosts run flat");
        group->reset();
        return nullptr;
    }
    collectives::Hierarchy placed = collectives::make_hierarchy(by_host, rank, places);
    h->local_share = placed.local_share;
    h->cross_members = placed.cross_members;
    h->cross_index = placed.cross_index;
    h->local_shm = group->get();
    if (h->allreduce_min_bytes != collectives::kHierarchyOff)
        HVD_LOG(kDebug, rank,
                "hierarchical allreduce from %zu bytes: %zu hosts, %zu shares (this host %zu "
                "ranks; local %d, %s; place %s)",
                h->allreduce_min_bytes, by_host.size(), h->min_local_size(),
                h->local_members.size(), h->local_index,
                h->my_share() >= 0 ? ("share " + std::to_string(h->my_share()) + ", cross " +
                                      std::to_string(h->cross_index))
                                         .c_str()
                                   : "no share",
                place_name(places[rank]).c_str());
    HVD_LOG(kDebug, rank,
            "hierarchical allgather from %s to %s bytes, broadcast from %s bytes: %zu hosts "
            "(this rank's host %d, of %zu ranks; local %d)",
            size_text(h->allgather_min_bytes).c_str(),
            h->allgather_max_bytes == std::numeric_limits<size_t>::max()
                ? "any"
                : std::to_string(h->allgather_max_bytes).c_str(),
            size_text(h->broadcast_min_bytes).c_str(), by_host.size(), h->host_index,
            h->local_members.size(), h->local_index);
    return h;
}

}  // namespace hvd::engine
