#include "engine/response_cache.h"

#include "hvd/hvd.h"

namespace hvd::engine {

bool same_op(const OpMeta &a, const OpMeta &b) {
    return a.name == b.name && a.set_id == b.set_id && a.type == b.type && a.dtype == b.dtype &&
           a.shape == b.shape && a.device_type == b.device_type && a.reduce_op == b.reduce_op &&
           a.root == b.root && a.prescale == b.prescale && a.postscale == b.postscale &&
           a.splits == b.splits && a.group == b.group && a.group_size == b.group_size &&
           a.out_rows == b.out_rows && a.in_row == b.in_row;
}

bool ResponseCache::cacheable(const Response &resp) {
    if (resp.status != HVD_OK || resp.addressee >= 0 || resp.set_id != 0 || !resp.group.empty())
        return false;
    switch (resp.type) {
        case OpType::kAllreduce:
        case OpType::kAllgather:
        case OpType::kBroadcast:
        case OpType::kAlltoall:
        case OpType::kReducescatter:
            return true;
        default:
            return false;
    }
}

ResponseCache::Lookup ResponseCache::lookup(const OpMeta &meta, uint32_t *bit) const {
    if (meta.set_id != 0) return Lookup::kMiss;
    auto it = by_name_.find(meta.name);
    if (it == by_name_.end()) return Lookup::kMiss;
    *bit = it->second;
    const Entry &e = by_bit_.at(it->second);
    return e.has_mine && same_op(e.mine, meta) ? Lookup::kHit : Lookup::kChanged;
}

std::vector<uint32_t> ResponseCache::put(uint32_t bit, const Response &resp, const OpMeta *mine) {
    std::vector<uint32_t> changed{bit};
    auto old_name = by_name_.find(resp.name);
    if (old_name != by_name_.end() && old_name->second != bit) {
        changed.push_back(old_name->second);
        erase(old_name->second);
    }
    erase(bit);
    Entry &e = by_bit_[bit];
    e.response = resp;
    e.response.fuse_next = false;
    e.response.request.reset();
    e.has_mine = mine != nullptr;
    if (mine) e.mine = *mine;
    by_name_[resp.name] = bit;
    touched_.insert(bit);
    return changed;
}

void ResponseCache::erase(uint32_t bit) {
    auto it = by_bit_.find(bit);
    touched_.insert(bit);
    if (it == by_bit_.end()) return;
    by_name_.erase(it->second.response.name);
    by_bit_.erase(it);
}

const Response *ResponseCache::response(uint32_t bit) const {
    auto it = by_bit_.find(bit);
    return it == by_bit_.end() ? nullptr : &it->second.response;
}

}  // namespace hvd::engine
