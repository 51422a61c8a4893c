// SPDX-License-Identifier: Apache-2.0
// The rendezvous server's data: the key-value map and the GETs parked on keys that do not
// exist yet. Pure bookkeeping, no I/O; the server's thread is its only user.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hvd::bootstrap {

// A GET waiting for its key: which connection asked, and the request id to answer with.
struct KvWaiter {
    int conn_id = -1;
    uint64_t request_id = 0;
};

class KvTable {
  public:
    // Stores (or replaces) the value and returns the waiters parked on the key, which are no
    // longer parked: the caller answers them with the value.
    std::vector<KvWaiter> put(const std::string &key, std::string value);
    // The value if the key exists; otherwise parks the waiter and returns nullptr. The pointer
    // is valid until the next put of the same key.
    const std::string *get_or_park(const std::string &key, const KvWaiter &waiter);
    // Forgets every GET of a connection that went away.
    void drop_waiters(int conn_id);
    size_t num_parked() const;

  private:
    std::unordered_map<std::string, std::string> values_;
    std::unordered_map<std::string, std::vector<KvWaiter>> parked_;
};

}  // namespace hvd::bootstrap
