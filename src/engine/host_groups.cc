// SPDX-License-Identifier: Apache-2.0
#include "engine/host_groups.h"

#include <cstring>

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

// HVD_HIERARCHICAL_ALLREDUCE as one letter: 'a' (auto, the default), '1' or '0'; an unknown
// value warns and counts as auto.
char hierarchical_mode(int32_t rank) {
    const char *v = config::get_string(config::Setting::kHierarchicalAllreduce);
    if (v == nullptr || std::strcmp(v, "auto") == 0) return 'a';
    bool on = false;
    if (config::parse_bool(v, &on)) return on ? '1' : '0';
    HVD_LOG(kWarning, rank, "ignoring HVD_HIERARCHICAL_ALLREDUCE=%s (auto, 1 or 0): auto", v);
    return 'a';
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
                                                         const Deadline &deadline,
                                                         std::unique_ptr<shm::Group> *group) {
    const std::vector<std::vector<int32_t>> by_host = collectives::ranks_by_host(hosts);
    if (!collectives::hierarchy_applies(by_host)) {
        if (rank == 0 && by_host.size() > 1 && hierarchical_mode(rank) == '1')
            HVD_LOG(kWarning, rank,
                    "HVD_HIERARCHICAL_ALLREDUCE=1 needs the same number of ranks (two or more) "
                    "on every host: the allreduces run flat");
        return nullptr;
    }
    std::unique_ptr<collectives::Hierarchy> h =
        std::make_unique<collectives::Hierarchy>(collectives::make_hierarchy(by_host, rank));
    const char mode = hierarchical_mode(rank);
    const bool wanted = config::get_bool(config::Setting::kShm) && mode != '0';
    std::string problem;
    *group = attach_host_group(kv, rank, h->local_members, wanted, deadline, &problem);
    const size_t min_bytes =
        mode == '1'
            ? 0
            : static_cast<size_t>(config::get_int(config::Setting::kHierarchicalAllreduceMinBytes));
    // Every rank must pick the same algorithm for a size: the settings travel with the answer.
    std::string mine = std::string(*group ? "1" : "0") + mode + std::to_string(min_bytes);
    std::vector<std::string> answers = kv.all_gather("hierarchy", mine, deadline);
    bool agree = true;
    for (const std::string &a : answers)
        agree = agree && a == mine;
    if (!agree || !*group) {
        if (wanted && !*group)
            HVD_LOG(kWarning, rank, "no shared memory on this host (%s): allreduces run flat",
                    problem.c_str());
        else if (!agree && rank == 0)
            HVD_LOG(kWarning, rank,
                    "not every rank has shared memory with its host and the same "
                    "HVD_HIERARCHICAL_ALLREDUCE and HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES: "
                    "allreduces run flat");
        group->reset();
        return nullptr;
    }
    h->local_shm = group->get();
    h->allreduce_min_bytes = min_bytes;
    HVD_LOG(kDebug, rank,
            "hierarchical allreduce from %zu bytes: %zu hosts of %zu ranks (local %d, cross %d)",
            h->allreduce_min_bytes, by_host.size(), by_host[0].size(), h->local_index,
            h->cross_index);
    return h;
}

}  // namespace hvd::engine
