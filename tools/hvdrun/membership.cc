// SPDX-License-Identifier: Apache-2.0
#include "membership.h"

#include <algorithm>
#include <stdexcept>

namespace hvdrun {

void Membership::add_worker(int id, const std::string &host) {
    if (find(id) != nullptr) throw std::logic_error("worker " + std::to_string(id) + " twice");
    workers_.push_back(Worker{id, host});
}

void Membership::worker_exited(int id) {
    if (Worker *w = find(id)) {
        w->live = false;
        w->waiting = false;
    }
}

void Membership::set_waiting(int id, bool waiting) {
    Worker *w = find(id);
    if (w != nullptr && w->live) w->waiting = waiting;
}

int Membership::live() const {
    return static_cast<int>(
        std::count_if(workers_.begin(), workers_.end(), [](const Worker &w) { return w.live; }));
}

int Membership::waiting() const {
    return static_cast<int>(std::count_if(workers_.begin(), workers_.end(),
                                          [](const Worker &w) { return w.live && w.waiting; }));
}

const std::string &Membership::host_of(int id) const {
    static const std::string kNone;
    const Worker *w = find(id);
    return w != nullptr ? w->host : kNone;
}

bool Membership::ready(bool timed_out) const {
    int waiting_now = waiting();
    if (waiting_now == 0 || waiting_now < min_np_) return false;
    if (waiting_now == live()) return true;
    if (!timed_out) return false;
    // Members of the newest round that have not asked again are still in it.
    return std::none_of(workers_.begin(), workers_.end(), [this](const Worker &w) {
        return w.live && !w.waiting && round_ > 0 && w.round == round_;
    });
}

std::vector<int> Membership::form() {
    std::vector<const Worker *> order;
    for (const Worker &w : workers_)
        if (w.live && w.waiting) order.push_back(&w);
    const int64_t previous = round_;
    // Members of the newest round first, by their rank; the rest keep start order.
    std::stable_sort(order.begin(), order.end(), [previous](const Worker *a, const Worker *b) {
        bool a_member = previous > 0 && a->round == previous;
        bool b_member = previous > 0 && b->round == previous;
        if (a_member != b_member) return a_member;
        return a_member && a->rank < b->rank;
    });
    ++round_;
    std::vector<int> ids;
    for (const Worker *w : order)
        ids.push_back(w->id);
    for (size_t rank = 0; rank < ids.size(); ++rank) {
        Worker *w = find(ids[rank]);
        w->waiting = false;
        w->round = round_;
        w->rank = static_cast<int>(rank);
    }
    return ids;
}

bool Membership::pending() const {
    return std::any_of(workers_.begin(), workers_.end(), [this](const Worker &w) {
        return w.live ? w.round != round_ : round_ > 0 && w.round == round_;
    });
}

Membership::Worker *Membership::find(int id) {
    for (Worker &w : workers_)
        if (w.id == id) return &w;
    return nullptr;
}

const Membership::Worker *Membership::find(int id) const {
    return const_cast<Membership *>(this)->find(id);
}

}  // namespace hvdrun
