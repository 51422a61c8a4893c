#include "engine/coordinator.h"

#include "hvd/hvd.h"

namespace hvd::engine {

void Coordinator::add_ready(int32_t rank, const std::vector<OpMeta> &metas,
                            std::vector<Response> *out) {
    for (const OpMeta &m : metas) {
        auto it = pending_.find(m.name);
        if (it == pending_.end()) {
            Pending p;
            p.by_rank.resize(static_cast<size_t>(size_));
            p.since = std::chrono::steady_clock::now();
            it = pending_.emplace(m.name, std::move(p)).first;
        }
        Pending &p = it->second;
        // A rank cannot report a name twice: its enqueue rejects names still in flight, and
        // a name leaves pending_ only once every rank reported it.
        if (!p.by_rank[rank]) {
            p.by_rank[rank] = m;
            ++p.count;
        }
        if (p.count == size_) {
            out->push_back(complete(m.name, p));
            pending_.erase(it);
        }
    }
}

Response Coordinator::complete(const std::string &name, Pending &p) {
    std::vector<OpMeta> metas;
    metas.reserve(p.by_rank.size());
    for (auto &m : p.by_rank)
        metas.push_back(std::move(*m));
    Response resp;
    resp.name = name;
    resp.type = metas[0].type;
    resp.seq = next_seq_++;
    std::string err = validate_op(metas);
    if (!err.empty()) {
        resp.status = HVD_ERR_MISMATCH;
        resp.message = err;
        return resp;
    }
    if (resp.type == OpType::kAllgather)
        for (const OpMeta &m : metas)
            resp.first_dims.push_back(m.shape.empty() ? 0 : m.shape[0]);
    return resp;
}

std::vector<Coordinator::Waiting> Coordinator::waiting() const {
    std::vector<Waiting> out;
    for (const auto &kv : pending_) {
        Waiting w;
        w.name = kv.first;
        w.since = kv.second.since;
        for (int32_t r = 0; r < size_; ++r)
            if (!kv.second.by_rank[r]) w.missing_ranks.push_back(r);
        out.push_back(std::move(w));
    }
    return out;
}

}  // namespace hvd::engine
