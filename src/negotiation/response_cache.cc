// SPDX-License-Identifier: Apache-2.0
#include "negotiation/response_cache.h"

#include <algorithm>
#include <atomic>

#include "common/error.h"
#include "hvd/hvd.h"

namespace hvd::negotiation {

namespace {

// Stamps of puts, unique across every cache of the process.
std::atomic<uint64_t> g_last_stamp{0};

}  // namespace

bool same_op(const OpMeta &a, const OpMeta &b) {
    return a.name == b.name && a.set_id == b.set_id && a.type == b.type && a.dtype == b.dtype &&
           a.shape == b.shape && a.device_type == b.device_type && a.device_key == b.device_key &&
           a.nccl_ok == b.nccl_ok && a.reduce_op == b.reduce_op && a.root == b.root &&
           a.prescale == b.prescale && a.postscale == b.postscale && a.splits == b.splits &&
           a.group == b.group && a.group_size == b.group_size && a.out_rows == b.out_rows &&
           a.in_row == b.in_row;
}

bool ResponseCache::cacheable(const Response &resp) {
    if (resp.status != HVD_OK || resp.addressee >= 0) return false;
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
    if (meta.set_id != set_id_) return Lookup::kMiss;
    auto it = by_name_.find(meta.name);
    if (it == by_name_.end()) return Lookup::kMiss;
    *bit = it->second;
    return check(slots_[it->second], meta);
}

ResponseCache::Lookup ResponseCache::lookup(const OpMeta &meta, uint32_t *bit, Memo *memo) const {
    // The stamp names one put: if the bit still holds it, it holds this name.
    if (memo->stamp != 0 && memo->bit < slots_.size() && slots_[memo->bit].stamp == memo->stamp &&
        meta.set_id == set_id_) {
        *bit = memo->bit;
        return check(slots_[memo->bit], meta);
    }
    Lookup found = lookup(meta, bit);
    memo->bit = *bit;
    memo->stamp = found == Lookup::kMiss ? 0 : slots_[*bit].stamp;
    return found;
}

std::vector<uint32_t> ResponseCache::put(uint32_t bit, const Response &resp, const OpMeta *mine) {
    if (bit >= kMaxBits)
        throw Error(HVD_ERR_INTERNAL, strprintf("response cache bit %u is out of range", bit));
    if (resp.set_id != set_id_)
        throw Error(HVD_ERR_INTERNAL,
                    strprintf("'%s' of process set %u put in the response cache of set %u",
                              resp.name.c_str(), resp.set_id, set_id_));
    std::vector<uint32_t> changed{bit};
    auto old_name = by_name_.find(resp.name);
    if (old_name != by_name_.end() && old_name->second != bit) {
        changed.push_back(old_name->second);
        erase(old_name->second);
    }
    erase(bit);
    if (bit >= slots_.size()) slots_.resize(static_cast<size_t>(bit) + 1);
    Slot &e = slots_[bit];
    e.response = resp;
    e.response.fuse_next = false;
    e.response.request.reset();
    e.has_mine = mine != nullptr;
    if (mine) e.mine = *mine;
    e.stamp = g_last_stamp.fetch_add(1, std::memory_order_relaxed) + 1;
    by_name_[resp.name] = bit;
    touched_.insert(bit);
    return changed;
}

void ResponseCache::erase(uint32_t bit) {
    touched_.insert(bit);
    if (bit >= slots_.size() || slots_[bit].stamp == 0) return;
    Slot &e = slots_[bit];
    by_name_.erase(e.response.name);
    e.stamp = 0;
    e.has_mine = false;
}

std::vector<uint32_t> ResponseCache::bits() const {
    std::vector<uint32_t> held;
    held.reserve(by_name_.size());
    for (const auto &entry : by_name_)
        held.push_back(entry.second);
    std::sort(held.begin(), held.end());
    return held;
}

}  // namespace hvd::negotiation
