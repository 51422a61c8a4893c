// SPDX-License-Identifier: Apache-2.0
// Whether a rendezvous address names this host's loopback interface. Shared by libhvd's
// rendezvous server (engine/context.cc: a loopback address is listened on as given, any other
// on every IPv4 interface) and hvdrun, which reserves the server's port on the same interface.
// Header-only: hvdrun does not link libhvd's internals.
#pragma once

#include <string>

namespace hvd::bootstrap {

inline bool is_loopback_address(const std::string &addr) {
    return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

}  // namespace hvd::bootstrap
