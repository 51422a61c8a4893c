// SPDX-License-Identifier: Apache-2.0
// libhvd's side of the membership protocol of elastic jobs (elastic_protocol.h): asks
// hvdrun's membership service for this worker's place in the next round, or for the newest
// round. Each call is one authenticated TCP exchange bounded by its deadline.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/elastic_protocol.h"
#include "common/deadline.h"

namespace hvd::bootstrap::elastic {

// Where the service is and who this worker is (HVD_ELASTIC_ADDR/PORT, HVD_WORKER_ID,
// HVD_SECRET).
struct ServiceEndpoint {
    std::string addr;
    int32_t port = 0;
    std::string secret;
    int64_t worker_id = 0;
};

// Blocks until the service forms the next round with this worker in it, or the deadline.
// Throws hvd::Error: HVD_ERR_TIMED_OUT, HVD_ERR_TRANSPORT (service unreachable, connection
// lost, or a reply that fails authentication), HVD_ERR_ABORTED (the service refused: e.g. the
// job fell below its minimum number of workers), each naming the service's address.
Assignment join_next_round(const ServiceEndpoint &service, const Deadline &deadline);

// The newest round and whether workers wait to join a later one. Throws as join_next_round.
Status query_status(const ServiceEndpoint &service, int64_t round, const Deadline &deadline);

}  // namespace hvd::bootstrap::elastic
