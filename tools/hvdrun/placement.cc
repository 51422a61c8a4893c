// SPDX-License-Identifier: Apache-2.0
#include "placement.h"

#include <map>

namespace hvdrun {

using hvd::topology::contains;
using hvd::topology::cpu_list_text;
using hvd::topology::intersects;
using hvd::topology::Machine;
using hvd::topology::Place;

namespace {

// The places of a level that have CPUs (a NUMA node of memory alone has none).
std::vector<const Place *> places_of(const Machine &m, Level level) {
    const std::vector<Place> *all = &m.cores;
    if (level == Level::kNuma) all = &m.numa_nodes;
    if (level == Level::kSocket) all = &m.packages;
    std::vector<const Place *> out;
    for (const Place &p : *all)
        if (!p.cpus.empty()) out.push_back(&p);
    return out;
}

const char *place_name(Level level) {
    return level == Level::kNuma ? "NUMA node" : level == Level::kSocket ? "socket" : "core";
}

int cores_in(const Machine &m, const Place &place) {
    int n = 0;
    for (const Place &core : m.cores)
        n += contains(place.cpus, core.cpus) ? 1 : 0;
    return n > 0 ? n : 1;
}

// The bind-level place holding `mapped`, else the j-th bind-level place inside it; nullptr
// when neither exists.
const Place *bound_place(const std::vector<const Place *> &bind_places, const Place &mapped,
                         int j) {
    std::vector<const Place *> inside;
    for (const Place *b : bind_places) {
        if (contains(b->cpus, mapped.cpus)) return b;
        if (contains(mapped.cpus, b->cpus)) inside.push_back(b);
    }
    return inside.empty() ? nullptr : inside[static_cast<size_t>(j) % inside.size()];
}

std::string rank_list(const std::vector<int> &ranks) {
    std::string text;
    for (size_t i = 0; i < ranks.size(); ++i)
        text += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
    return text;
}

}  // namespace

bool place_local_ranks(const Machine &machine, const BindPolicy &policy,
                       const std::vector<int> &ranks, std::vector<std::vector<int>> *cpus,
                       std::string *err) {
    cpus->assign(ranks.size(), {});
    if (policy.bind_to == Level::kNone || policy.bind_to == Level::kSlot) return true;
    const std::string flag = std::string("--bind-to ") + level_name(policy.bind_to);
    std::vector<const Place *> map_places = places_of(machine, policy.map_by);
    std::vector<const Place *> bind_places = places_of(machine, policy.bind_to);
    if (map_places.empty() || bind_places.empty()) {
        *err = flag + ": this host's topology has no " +
               place_name(map_places.empty() ? policy.map_by : policy.bind_to) + " with CPUs";
        return false;
    }
    std::vector<int> mapped_count(map_places.size(), 0);
    std::map<const Place *, std::vector<int>> sharing;  // bound place -> its ranks
    for (size_t k = 0; k < ranks.size(); ++k) {
        size_t m = k % map_places.size();
        const Place *bound = bound_place(bind_places, *map_places[m], mapped_count[m]++);
        if (bound == nullptr) {
            *err = flag + ": rank " + std::to_string(ranks[k]) + "'s " + place_name(policy.map_by) +
                   " (--map-by " + level_name(policy.map_by) + ") holds no " +
                   place_name(policy.bind_to);
            return false;
        }
        (*cpus)[k] = bound->cpus;
        sharing[bound].push_back(ranks[k]);
    }
    if (policy.overload_allowed) return true;
    for (const Place *b : bind_places) {
        auto it = sharing.find(b);
        if (it == sharing.end()) continue;
        int cores = cores_in(machine, *b);
        if (static_cast<int>(it->second.size()) <= cores) continue;
        *err = flag + ": ranks " + rank_list(it->second) + " would share " +
               place_name(policy.bind_to) + " L#" + std::to_string(b->index) + " (CPUs " +
               cpu_list_text(b->cpus) + "), which has " + std::to_string(cores) + " core" +
               (cores == 1 ? "" : "s") + " (" + std::to_string(ranks.size()) +
               " ranks on this host); use " + flag + ":overload-allowed to allow it, or " +
               "--bind-to none";
        return false;
    }
    return true;
}

std::string describe_binding(const Machine &machine, const std::vector<int> &cpus) {
    std::string parts, map;
    for (const Place &package : machine.packages) {
        std::string fields;
        for (const Place &core : machine.cores) {
            if (!contains(package.cpus, core.cpus)) continue;
            std::string field;
            std::vector<int> hwts;
            for (size_t t = 0; t < core.cpus.size(); ++t) {
                bool bound = contains(cpus, {core.cpus[t]});
                field += bound ? 'B' : '.';
                if (bound) hwts.push_back(static_cast<int>(t));
            }
            fields += (fields.empty() ? "" : "/") + field;
            if (!intersects(core.cpus, cpus)) continue;
            parts += (parts.empty() ? "" : ", ") + std::string("socket ") +
                     std::to_string(package.index) + "[core " + std::to_string(core.index) +
                     "[hwt " + cpu_list_text(hwts) + "]]";
        }
        map += "[" + fields + "]";
    }
    return parts + ": " + map;
}

}  // namespace hvdrun
