// SPDX-License-Identifier: Apache-2.0
#include "engine/intake.h"

#include "common/error.h"

namespace hvd::engine {

hvd_status_t Intake::enqueue(const RequestPtr *reqs, size_t n, std::string *err) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
        *err = strprintf("rank %d: the context is finalizing", rank_);
        return HVD_ERR_NOT_READY;
    }
    // Names go in one by one; on a clash, the ones this call added come out again.
    for (size_t i = 0; i < n; ++i) {
        Request &r = *reqs[i];
        r.in_flight = names_.enter(r.meta.set_id, r.meta.name);
        if (r.in_flight != nullptr) {
            r.in_flight->request = &r;
            continue;
        }
        for (size_t j = 0; j < i; ++j) {
            names_.leave(reqs[j]->in_flight);
            reqs[j]->in_flight = nullptr;
        }
        *err = strprintf("rank %d: an op named '%s' is already in flight", rank_,
                         reqs[i]->meta.name.c_str());
        return HVD_ERR_INVALID_ARG;
    }
    for (size_t i = 0; i < n; ++i)
        queue_.push_back(reqs[i]);
    if (timeline_->active())
        for (size_t i = 0; i < n; ++i)
            timeline_->begin(reqs[i]->meta.name, "QUEUE");
    work_queued_.store(true);
    return HVD_OK;
}

void Intake::close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
}

void Intake::take(std::vector<RequestPtr> *fresh) {
    fresh->clear();
    if (!work_queued_.load()) return;
    std::lock_guard<std::mutex> lock(mu_);
    fresh->swap(queue_);
    work_queued_.store(false);
}

void Intake::finish_all(const RequestPtr *reqs, size_t n, hvd_status_t status,
                        const std::string &message) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t i = 0; i < n; ++i) {
            if (reqs[i]->in_flight == nullptr) continue;  // made by the engine, or finished
            names_.leave(reqs[i]->in_flight);
            reqs[i]->in_flight = nullptr;
        }
    }
    for (size_t i = 0; i < n; ++i)
        reqs[i]->settle(status, message);
    for (size_t i = 0; i < n; ++i) {
        reqs[i]->notify();
        if (RequestPtr parent = reqs[i]->parent.lock()) parent->member_done(status, message);
    }
}

Request *Intake::find(uint16_t set_id, const std::string &name) {
    std::lock_guard<std::mutex> lock(mu_);
    return names_.find(set_id, name);
}

std::string Intake::auto_name(OpType type, uint16_t set_id) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t n = auto_name_counters_[{set_id, static_cast<int>(type)}]++;
    return strprintf("%s.noname.%llu", op_type_name(type), static_cast<unsigned long long>(n));
}

}  // namespace hvd::engine
