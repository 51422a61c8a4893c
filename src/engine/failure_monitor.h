// SPDX-License-Identifier: Apache-2.0
// Watches the rendezvous connection after init. The rendezvous server tells every rank when
// another rank's connection drops without a goodbye (the process died, or aborted), and a
// dropped server means its host process died: either way the context aborts with
// HVD_ERR_PEER_FAILED within milliseconds, whatever the data transport noticed. When this
// context aborts for any reason, the monitor drops its own connection so that the other
// ranks learn it too.
#pragma once

#include <memory>
#include <thread>

#include "bootstrap/kv_store.h"
#include "engine/abort_state.h"

namespace hvd::engine {

class Engine;

class FailureMonitor {
  public:
    FailureMonitor(int32_t rank, std::unique_ptr<bootstrap::KvClient> kv, AbortState *abort,
                   Engine *engine);
    ~FailureMonitor();
    FailureMonitor(const FailureMonitor &) = delete;
    FailureMonitor &operator=(const FailureMonitor &) = delete;

    void start();
    // Wakes the monitor to look at the abort state now. Thread-safe.
    void wake();
    // Stops the thread and hands the connection back (null if it was dropped by an abort).
    std::unique_ptr<bootstrap::KvClient> stop();

  private:
    void loop();

    int32_t rank_;
    std::unique_ptr<bootstrap::KvClient> kv_;
    AbortState *abort_;
    Engine *engine_;
    int pipe_[2] = {-1, -1};
    std::thread thread_;
};

}  // namespace hvd::engine
