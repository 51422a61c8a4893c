// SPDX-License-Identifier: Apache-2.0
// Grouped ops and the response cache. A group (of one process set, in that set's cache) is
// negotiated and completed as one unit: the coordinator holds its responses until every member is
// ready (coordinator.cc), so a group must never be split between the cache and the coordinator. On
// every rank its members wait on their bits together, or all go to the coordinator (with invalid
// votes for the bits of those that were hits, so that ranks holding them as cached ops hand them
// over too), and they run from the cache only in a round that agreed on every member's bit.
#include <memory>
#include <vector>

#include "engine/cache_negotiator.h"

namespace hvd::engine {

namespace {

// The members of the group whose first member is reqs[first]: enqueue_group queues a group's
// members together and in member order, so they form one run of the ready requests.
size_t group_run(const std::vector<RequestPtr> &reqs, size_t first) {
    const OpMeta &m = reqs[first]->meta;
    size_t n = 1;
    while (first + n < reqs.size() && reqs[first + n]->meta.set_id == m.set_id &&
           reqs[first + n]->meta.group == m.group)
        ++n;
    return n;
}

}  // namespace

size_t CacheNegotiator::report_group(const std::vector<RequestPtr> &reqs, size_t first,
                                     std::chrono::steady_clock::time_point now,
                                     std::vector<OpMeta> *to_coordinator) {
    const size_t n = group_run(reqs, first);
    SetCache *sc = set_cache(reqs[first]->meta.set_id);
    auto bits = std::make_shared<std::vector<uint32_t>>(n);
    group_found_.assign(n, Lookup::kMiss);
    // A run that is not the whole group (not expected) goes to the coordinator, which waits
    // for the rest.
    bool all_hit =
        sc != nullptr && !sc->suspended && static_cast<int64_t>(n) == reqs[first]->meta.group_size;
    for (size_t i = 0; i < n; ++i) {
        uint32_t bit = 0;
        group_found_[i] = look_up(sc, *reqs[first + i], &bit);
        (*bits)[i] = bit;
        all_hit = all_hit && group_found_[i] == Lookup::kHit && sc->waiting.find(bit) == nullptr;
    }
    if (all_hit) {
        for (size_t i = 0; i < n; ++i)
            sc->waiting.try_emplace((*bits)[i], CachedWait{reqs[first + i], now, false, bits});
        cache_news_ = true;
        return n;
    }
    for (size_t i = 0; i < n; ++i)
        hand_to_coordinator(sc, *reqs[first + i], group_found_[i], (*bits)[i], to_coordinator);
    return n;
}

bool CacheNegotiator::run_group(SetCache &sc, const std::vector<uint32_t> &bits,
                                const negotiation::SetOutcome &outcome,
                                util::Fifo<Response> &agreed) {
    for (uint32_t bit : bits) {
        if (sc.waiting.find(bit) == nullptr || !outcome.ready_everywhere.test(bit) ||
            outcome.invalid.test(bit) || sc.cache.touched(bit) || sc.cache.response(bit) == nullptr)
            return false;
    }
    for (uint32_t bit : bits)
        queue_cached(sc, bit, agreed);
    return true;
}

}  // namespace hvd::engine
