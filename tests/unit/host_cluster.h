// SPDX-License-Identifier: Apache-2.0
// A job of N ranks as threads split into "hosts" for the hierarchical collectives' tests:
// each host of two ranks or more gets its own shared-memory group and every rank the
// hierarchy make_hierarchy builds (every collective hierarchical at every size where it
// applies); the dtypes they test.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/hierarchy.h"
#include "rank_threads.h"
#include "shm/shm_group.h"

namespace rank_threads {

constexpr int32_t kAllDtypes[] = {HVD_DTYPE_UINT8,   HVD_DTYPE_INT8,    HVD_DTYPE_UINT16,
                                  HVD_DTYPE_INT16,   HVD_DTYPE_INT32,   HVD_DTYPE_INT64,
                                  HVD_DTYPE_FLOAT16, HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT64,
                                  HVD_DTYPE_BOOL,    HVD_DTYPE_BFLOAT16};

// Each rank's host and place on it (none known where places is empty).
struct HostLayout {
    std::vector<std::string> host_of;
    std::vector<hvd::collectives::RankPlace> places;
};

// The layouts both the allgather and broadcast tests run: 2+2, 2+1, 3+1, 1+1+1, 1+1, 2+2+1
// with a host's ranks apart, and 3+2 whose first host's shares are held by its local ranks 0
// and 2 (by NIC), and by 0 and 2 again with its ranks apart (by NUMA node).
inline std::vector<HostLayout> host_layouts() {
    return {{{"a", "a", "b", "b"}, {}},
            {{"a", "a", "b"}, {}},
            {{"a", "a", "a", "b"}, {}},
            {{"a", "b", "c"}, {}},
            {{"a", "b"}, {}},
            {{"x", "y", "x", "z", "y"}, {}},
            {{"a", "a", "a", "b", "b"}, {{"eth0", 0}, {"eth0", 0}, {"eth1", 1}, {}, {}}},
            {{"x", "y", "x", "y", "x"},
             {{"eth0", 0}, {"eth0", 1}, {"eth0", 0}, {"eth0", 0}, {"eth0", 1}}}};
}

// A layout as text for failure messages: "a a b", "a a a b b (placed)".
inline std::string layout_name(const std::vector<std::string> &host_of,
                               const std::vector<hvd::collectives::RankPlace> &places = {}) {
    std::string text;
    for (const std::string &h : host_of)
        text += (text.empty() ? "" : " ") + h;
    return places.empty() ? text : text + " (placed)";
}

// The name of the algorithm `table` picks for `bytes` in host memory ("none" when none does).
template <typename Run>
std::string chosen_name(const std::vector<hvd::collectives::Algorithm<Run>> &table,
                        const hvd::collectives::Comm &comm, size_t bytes) {
    const auto *a = hvd::collectives::choose(table, comm, bytes, hvd::collectives::Memory::kHost);
    return a != nullptr ? a->name : "none";
}

struct HostCluster {
    // Rank r runs on host host_of[r], at places[r] on it (none known where empty).
    // single_copy_from > 0: the hosts' groups read by single copy from that many bytes on
    // (else only through their slots).
    explicit HostCluster(const std::vector<std::string> &host_of, size_t single_copy_from = 0,
                         const std::vector<hvd::collectives::RankPlace> &places = {})
        : world(static_cast<int32_t>(host_of.size())) {
        const auto by_host = hvd::collectives::ranks_by_host(host_of);
        hvd::shm::Settings settings;
        settings.slot_bytes = kTestSlotBytes;
        if (single_copy_from > 0) {
            settings.single_copy_min_bytes = single_copy_from;
            settings.single_copy_max_bytes = SIZE_MAX;
        }
        groups.resize(host_of.size());
        for (const std::vector<int32_t> &ranks : by_host) {
            const int32_t n = static_cast<int32_t>(ranks.size());
            if (n < 2) continue;
            groups[ranks[0]] = hvd::shm::Group::create(n, 0, settings);
            for (int32_t i = 1; i < n; ++i)
                groups[ranks[i]] = hvd::shm::Group::open(groups[ranks[0]]->name(),
                                                         groups[ranks[0]]->nonce(), n, i);
            groups[ranks[0]]->unlink();
            for (int32_t r : ranks)
                groups[r]->enable_single_copy(single_copy_from > 0);
        }
        for (int32_t r = 0; r < world.size(); ++r) {
            hierarchies.push_back(hvd::collectives::make_hierarchy(by_host, r, places));
            hierarchies.back().local_shm = groups[r].get();
        }
    }
    World world;
    std::vector<std::unique_ptr<hvd::shm::Group>> groups;  // rank r's host group
    std::vector<hvd::collectives::Hierarchy> hierarchies;
};

}  // namespace rank_threads
