// SPDX-License-Identifier: Apache-2.0
// Which inter-rank protocol a rank speaks. Ranks exchange control messages (ready reports,
// response batches, cache votes and outcomes) whose layout changes between libhvd versions; a
// job whose ranks run libhvd builds that disagree on it would misread each other's messages.
// Every rank appends its protocol and version to the host name it publishes at init, and
// every rank checks the others' before anything else is exchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvd::negotiation {

// Bump whenever a message between ranks changes its layout or meaning.
// 2: response batches carry each response's group (grouped ops are cached).
// 3: cache votes carry ready and invalid bits and the join per process set.
// 4: ready reports carry a CUDA tensor's device and NCCL ability, responses the device type
//    and the GPU data path.
// 5: response batches and rank 0's cache votes carry the op types that may run on the hosts'
//    hierarchy (autotune switches them).
// 6: from three ranks, cache votes go to rank 0, which sends each rank the round's outcome.
constexpr int32_t kWireProtocol = 6;

// What a rank publishes under the rendezvous key "host": its host name, then (after a
// newline, which no host name contains) "libhvd <version> protocol <n>".
std::string host_entry(const std::string &host);

// The host names of the entries, in rank order; throws hvd::Error(HVD_ERR_MISMATCH) naming
// every rank whose protocol differs from this rank's (an entry without one comes from a libhvd
// older than the check), with each one's version. `rank` is this rank, for the message.
std::vector<std::string> hosts_of_same_protocol(const std::vector<std::string> &entries,
                                                int32_t rank);

}  // namespace hvd::negotiation
