// (process set, name), the key ranks match ops by, without a copy of the name: a view of the
// Request's own meta.name. A map entry keyed this way must not outlive the request it views
// (the engine's maps hold or finish the request before the entry goes), and a lookup may build
// one from any string without allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "engine/request.h"

namespace hvd::engine {

struct NameKey {
    uint16_t set_id = 0;
    std::string_view name;

    bool operator==(const NameKey &o) const { return set_id == o.set_id && name == o.name; }
};

struct NameKeyHash {
    size_t operator()(const NameKey &k) const {
        return std::hash<std::string_view>()(k.name) ^ (size_t{k.set_id} * 0x9e3779b97f4a7c15u);
    }
};

inline NameKey name_key(const Request &r) {
    return {r.meta.set_id, r.meta.name};
}

}  // namespace hvd::engine
