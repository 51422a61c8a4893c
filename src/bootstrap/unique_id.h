// SPDX-License-Identifier: Apache-2.0
// hvd_unique_id_t: where a job's rendezvous server listens and the job's secret, packed in
// 128 bytes the application ships to every rank. The server itself lives in the process that
// made the id, in a registry here, until its job is done.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/kv_store.h"
#include "hvd/hvd.h"

namespace hvd::bootstrap {

struct UniqueIdContents {
    std::string addr;
    int port = 0;
    std::string secret;
};

// Starts a rendezvous server on a free port and returns its id. Throws hvd::Error.
hvd_unique_id_t make_unique_id(int64_t idle_timeout_ms);

// Throws hvd::Error(HVD_ERR_INVALID_ARG) for bytes that are not a libhvd unique id.
UniqueIdContents parse_unique_id(const hvd_unique_id_t &id);

// The server behind an id made in this process, or null if it was made elsewhere.
std::shared_ptr<bootstrap::KvServer> local_server_for(const UniqueIdContents &id);

}  // namespace hvd::bootstrap
