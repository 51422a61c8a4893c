// SPDX-License-Identifier: Apache-2.0
#include "negotiation/coordinator.h"

#include <algorithm>

#include "common/error.h"
#include "hvd/hvd.h"

namespace hvd::negotiation {

// What joined ranks and the fusion planner need to know of an allreduce.
void Coordinator::describe_tensor(Response &resp, const OpMeta &m) {
    resp.dtype = m.dtype;
    resp.shape = m.shape;
    resp.reduce_op = m.reduce_op;
    resp.prescale = m.prescale;
    resp.postscale = m.postscale;
}

// CUDA tensors run on NCCL only where every member can and each has a GPU of its own (NCCL
// refuses two ranks on one device) and no member is joined (a joined rank takes part with
// zeros in host memory); otherwise every member stages them through host memory.
void Coordinator::choose_device_path(Response &resp, const std::vector<OpMeta> &metas,
                                     bool some_joined) {
    resp.device_type = metas[0].device_type;
    resp.nccl = resp.device_type == HVD_DEVICE_CUDA && !some_joined;
    std::vector<uint64_t> devices;
    uint64_t key = 1469598103934665603ull;  // FNV-1a over the members' device keys
    for (const OpMeta &m : metas) {
        resp.nccl = resp.nccl && m.nccl_ok;
        devices.push_back(m.device_key);
        for (int shift = 0; shift < 64; shift += 8) {
            key ^= (m.device_key >> shift) & 0xff;
            key *= 1099511628211ull;
        }
    }
    // Also on the host path: responses of different devices or members never fuse.
    resp.devices_key = resp.device_type == HVD_DEVICE_CUDA ? key : 0;
    std::sort(devices.begin(), devices.end());
    if (std::adjacent_find(devices.begin(), devices.end()) != devices.end()) resp.nccl = false;
}

uint32_t Coordinator::take_seq() {
    uint32_t seq = next_seq_;
    next_seq_ = next_seq_ % kNegotiatedSeqLimit + 1;
    return seq;
}

Coordinator::Coordinator(int32_t size) {
    std::vector<int32_t> all(static_cast<size_t>(size));
    for (int32_t r = 0; r < size; ++r)
        all[r] = r;
    sets_[0] = std::move(all);
}

const std::vector<int32_t> &Coordinator::members(uint16_t set_id) const {
    static const std::vector<int32_t> kNone;
    auto it = sets_.find(set_id);
    return it == sets_.end() ? kNone : it->second;
}

int32_t Coordinator::member_index(uint16_t set_id, int32_t rank) const {
    const std::vector<int32_t> &m = members(set_id);
    auto it = std::lower_bound(m.begin(), m.end(), rank);
    return it != m.end() && *it == rank ? static_cast<int32_t>(it - m.begin()) : -1;
}

void Coordinator::add_ready(int32_t rank, const ReadyReport &report, std::vector<Response> *out) {
    for (const OpMeta &m : report.metas) {
        int32_t index = member_index(m.set_id, rank);
        if (index < 0) {
            // The enqueue checks membership against the rank's own view; this only happens
            // if that view and the coordinator's disagree (a set destroyed meanwhile).
            Response resp;
            resp.name = m.name;
            resp.set_id = m.set_id;
            resp.type = m.type;
            resp.seq = take_seq();
            resp.status = HVD_ERR_INVALID_ARG;
            resp.message = strprintf("%s '%s': rank %d is not a member of process set %u",
                                     op_type_name(m.type), m.name.c_str(), rank, m.set_id);
            resp.addressee = rank;
            out->push_back(std::move(resp));
            continue;
        }
        Key key{m.set_id, m.name};
        auto it = pending_.find(key);
        if (it == pending_.end()) {
            Pending p;
            p.by_member.resize(members(m.set_id).size());
            p.since = std::chrono::steady_clock::now();
            it = pending_.emplace(key, std::move(p)).first;
        }
        Pending &p = it->second;
        // A rank cannot report a name twice: its enqueue rejects names still in flight, and
        // a name leaves pending_ only once every member reported it.
        if (!p.by_member[index]) {
            p.by_member[index] = m;
            ++p.count;
        }
        p.after_round = std::max(p.after_round, report.after_round);
        if (m.type == OpType::kJoin) {
            auto &joined = joined_[m.set_id];
            joined.resize(p.by_member.size(), false);
            joined[index] = true;
            last_joined_[m.set_id] = index;
        }
        complete_ready(m.set_id, &key, out);
    }
}

// While some member of a set has joined, any pending op of that set may have become complete
// (joined members count as ready), so the whole set is scanned; otherwise only the op that
// just got a report can have completed (keeps a burst of n reports O(n), not O(n^2)).
void Coordinator::complete_ready(uint16_t set_id, const Key *touched, std::vector<Response> *out) {
    auto j = joined_.find(set_id);
    const std::vector<bool> *joined = j == joined_.end() ? nullptr : &j->second;
    bool join_done = false;
    if (joined == nullptr && touched != nullptr) {
        auto it = pending_.find(*touched);
        if (it != pending_.end()) try_complete(it, nullptr, out, &join_done);
    } else {
        for (auto it = pending_.lower_bound({set_id, std::string()});
             it != pending_.end() && it->first.first == set_id;)
            it = try_complete(it, joined, out, &join_done);
    }
    if (join_done) {  // everyone joined: the next epoch starts with nobody joined
        joined_.erase(set_id);
        last_joined_.erase(set_id);
    }
}

std::map<Coordinator::Key, Coordinator::Pending>::iterator Coordinator::try_complete(
    std::map<Key, Pending>::iterator it, const std::vector<bool> *joined,
    std::vector<Response> *out, bool *join_done) {
    Pending &p = it->second;
    int32_t covered = p.count;
    if (joined)
        for (size_t i = 0; i < p.by_member.size(); ++i)
            if (!p.by_member[i] && (*joined)[i]) ++covered;
    if (covered < static_cast<int32_t>(p.by_member.size())) return std::next(it);
    std::string group;
    int32_t group_size = 0;
    for (const auto &m : p.by_member)
        if (m) {
            group = m->group;
            group_size = m->group_size;
            break;
        }
    Response resp = complete(it->first, p);
    resp.group = group;
    resp.after_round = p.after_round;
    *join_done |= resp.type == OpType::kJoin;
    emit(std::move(resp), group, group_size, out);
    return pending_.erase(it);
}

// The ranks' descriptions of one op must agree (HVD_ERR_MISMATCH) and give sizes that fit
// in 64 bits together (HVD_ERR_INVALID_ARG); otherwise *resp becomes that error response.
bool Coordinator::rejected(const std::vector<OpMeta> &metas, const std::vector<int32_t> &ranks,
                           Response *resp) {
    std::string err = validate_op(metas, ranks);
    int32_t status = HVD_ERR_MISMATCH;
    if (err.empty()) {
        err = check_sizes(metas, ranks);
        status = HVD_ERR_INVALID_ARG;
    }
    if (err.empty()) return false;
    resp->status = status;
    resp->message = err;
    return true;
}

Response Coordinator::complete(const Key &key, Pending &p) {
    // Members that joined without reporting this op take part with zeros (allreduce only).
    std::vector<OpMeta> metas;
    std::vector<int32_t> ranks;
    const std::vector<int32_t> &all = members(key.first);
    for (size_t i = 0; i < p.by_member.size(); ++i) {
        if (!p.by_member[i]) continue;
        metas.push_back(std::move(*p.by_member[i]));
        ranks.push_back(all[i]);
    }
    if (metas.size() < p.by_member.size()) return complete_with_joined(key, metas, ranks, p);
    Response resp;
    resp.name = key.second;
    resp.set_id = key.first;
    resp.type = metas[0].type;
    resp.seq = take_seq();
    if (rejected(metas, ranks, &resp)) return resp;
    choose_device_path(resp, metas, false);
    switch (resp.type) {
        case OpType::kAllgather:
            for (const OpMeta &m : metas)
                resp.first_dims.push_back(m.shape.empty() ? 0 : m.shape[0]);
            describe_tensor(resp, metas[0]);  // row shape and dtype, for the fusion planner
            if (std::string err = check_gather_outputs(metas, ranks, resp.first_dims);
                !err.empty()) {
                resp.status = HVD_ERR_INVALID_ARG;
                resp.message = err;
                resp.first_dims.clear();
            }
            break;
        case OpType::kReducescatter:
            describe_tensor(resp, metas[0]);
            break;
        case OpType::kAlltoall:
            for (const OpMeta &m : metas)
                for (int32_t rows : m.splits)
                    resp.first_dims.push_back(rows);
            break;
        case OpType::kProcessSetCreate:
        case OpType::kProcessSetDestroy:
            apply_membership(resp, metas[0]);
            break;
        case OpType::kJoin:
            resp.first_dims = {last_joined_[key.first]};
            break;
        case OpType::kAllreduce:
            describe_tensor(resp, metas[0]);
            break;
        default:
            break;
    }
    return resp;
}

Response Coordinator::complete_with_joined(const Key &key, std::vector<OpMeta> &metas,
                                           const std::vector<int32_t> &ranks, const Pending &p) {
    Response resp;
    resp.name = key.second;
    resp.set_id = key.first;
    resp.type = metas[0].type;
    resp.seq = take_seq();
    if (resp.type != OpType::kAllreduce) {
        int32_t joined_rank = -1;
        for (size_t i = 0; i < p.by_member.size() && joined_rank < 0; ++i)
            if (!p.by_member[i]) joined_rank = members(key.first)[i];
        resp.status = HVD_ERR_INVALID_ARG;
        resp.message = strprintf(
            "%s '%s': rank %d has joined; only allreduce can run while a "
            "rank is joined",
            op_type_name(resp.type), resp.name.c_str(), joined_rank);
        return resp;
    }
    if (rejected(metas, ranks, &resp)) return resp;
    choose_device_path(resp, metas, true);
    describe_tensor(resp, metas[0]);
    return resp;
}

// Process sets change here, when their op is emitted, not when rank 0's engine later runs
// it: other ranks may use a new set as soon as they have run its response.
void Coordinator::apply_membership(Response &resp, const OpMeta &meta) {
    if (resp.type == OpType::kProcessSetCreate) {
        // Each rank checked its ranks at enqueue and validate_op that all members sent the
        // same; checked again here because they came over the wire and become a set's members.
        const int32_t size = static_cast<int32_t>(sets_.at(0).size());
        for (size_t i = 0; i < meta.splits.size() || meta.splits.empty(); ++i) {
            int32_t r = meta.splits.empty() ? -1 : meta.splits[i];
            if (r >= 0 && r < size && (i == 0 || meta.splits[i - 1] < r)) continue;
            resp.status = HVD_ERR_INVALID_ARG;
            resp.message = strprintf(
                "process_set_create '%s': ranks %s are not ascending ranks of a job of "
                "%d ranks",
                meta.name.c_str(), ranks_string(meta.splits).c_str(), size);
            return;
        }
        if (sets_.size() >= 0xffff) {
            resp.status = HVD_ERR_NO_MEMORY;
            resp.message = "too many process sets (65535)";
            return;
        }
        while (sets_.count(next_set_id_) || next_set_id_ == 0)
            ++next_set_id_;
        uint16_t id = next_set_id_++;
        sets_[id] = meta.splits;
        resp.first_dims = {id};
    } else {
        const uint16_t id = static_cast<uint16_t>(meta.root);
        if (id == 0 || meta.root != id || sets_.count(id) == 0) {
            // The global set is never destroyed (each rank refuses it at enqueue).
            resp.status = HVD_ERR_INVALID_ARG;
            resp.message = strprintf("process_set_destroy '%s': no process set %d to destroy",
                                     meta.name.c_str(), meta.root);
            return;
        }
        sets_.erase(id);
        // Ops some members reported on the set can never complete now (each member's engine
        // fails its own as it runs this response): forget them, or they would wait here for
        // good, and the stall inspector report them (a stall shutdown end the job for them).
        // This runs for a response of set 0: erasing another set's entries leaves the caller's
        // iteration over set 0's pending ops valid.
        auto erase_set = [id](auto &by_key) {
            auto first = by_key.lower_bound({id, std::string()});
            auto last = first;
            while (last != by_key.end() && last->first.first == id)
                ++last;
            by_key.erase(first, last);
        };
        erase_set(pending_);
        erase_set(held_);
        joined_.erase(id);
        last_joined_.erase(id);
    }
}

// A group is negotiated and completed as one unit: its responses leave together, in the
// order their ops became ready, once the last one is ready.
void Coordinator::emit(Response resp, const std::string &group, int32_t group_size,
                       std::vector<Response> *out) {
    if (group.empty()) {
        out->push_back(std::move(resp));
        return;
    }
    Key key{resp.set_id, group};
    std::vector<Response> &held = held_[key];
    held.push_back(std::move(resp));
    if (static_cast<int32_t>(held.size()) < group_size) return;
    for (Response &r : held)
        out->push_back(std::move(r));
    held_.erase(key);
}

void Coordinator::expire(uint16_t set_id, const std::string &name, int32_t status,
                         const std::string &message, std::vector<Response> *out) {
    auto it = pending_.find({set_id, name});
    if (it == pending_.end()) return;
    const std::vector<int32_t> &m = members(set_id);
    for (size_t i = 0; i < it->second.by_member.size(); ++i) {
        const auto &meta = it->second.by_member[i];
        if (!meta) continue;
        Response resp;
        resp.name = name;
        resp.set_id = set_id;
        resp.type = meta->type;
        resp.seq = take_seq();
        resp.status = status;
        resp.message = message;
        resp.addressee = m[i];
        out->push_back(std::move(resp));
    }
    pending_.erase(it);
}

std::vector<Coordinator::Waiting> Coordinator::waiting() const {
    std::vector<Waiting> out;
    for (const auto &kv : pending_) {
        Waiting w;
        w.set_id = kv.first.first;
        w.name = kv.first.second;
        w.since = kv.second.since;
        const std::vector<int32_t> &m = members(w.set_id);
        for (size_t i = 0; i < kv.second.by_member.size() && i < m.size(); ++i)
            if (!kv.second.by_member[i]) w.missing_ranks.push_back(m[i]);
        out.push_back(std::move(w));
    }
    return out;
}

}  // namespace hvd::negotiation
