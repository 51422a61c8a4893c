// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/kv_table.h"

#include <algorithm>

namespace hvd::bootstrap {

std::vector<KvWaiter> KvTable::put(const std::string &key, std::string value) {
    values_[key] = std::move(value);
    auto it = parked_.find(key);
    if (it == parked_.end()) return {};
    std::vector<KvWaiter> waiters = std::move(it->second);
    parked_.erase(it);
    return waiters;
}

const std::string *KvTable::get_or_park(const std::string &key, const KvWaiter &waiter) {
    auto it = values_.find(key);
    if (it != values_.end()) return &it->second;
    parked_[key].push_back(waiter);
    return nullptr;
}

void KvTable::drop_waiters(int conn_id) {
    for (auto it = parked_.begin(); it != parked_.end();) {
        auto &w = it->second;
        w.erase(std::remove_if(w.begin(), w.end(),
                               [conn_id](const KvWaiter &x) { return x.conn_id == conn_id; }),
                w.end());
        it = w.empty() ? parked_.erase(it) : std::next(it);
    }
}

size_t KvTable::num_parked() const {
    size_t n = 0;
    for (const auto &kv : parked_)
        n += kv.second.size();
    return n;
}

}  // namespace hvd::bootstrap
