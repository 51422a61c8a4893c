// SPDX-License-Identifier: Apache-2.0
// What UCX's transport list (UCX_TLS) allows between ranks of one host.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

namespace hvd::transport {

// The value of UCX_TLS in a read configuration (environment and UCX's configuration files),
// e.g. "all", "tcp,self" or "^sm"; "" when UCX does not print it. Does not block; throws
// nothing (a failure to print gives "").
std::string configured_tls(const ucp_config_t *config);

// Whether a UCX_TLS value lets UCX carry messages between ranks of one host through shared
// memory (posix, sysv or xpmem, also through the aliases all, sm, shm and mm). Where it does
// not, UCX moves them over TCP (or another network transport), whose sends complete with bytes
// left in UCX's buffer. A list starting with '^' names what is excluded. Unknown names count
// as network transports, so a value this cannot read gives false. Pure; thread-safe.
bool tls_allow_shared_memory(const std::string &tls);

}  // namespace hvd::transport
