// SPDX-License-Identifier: Apache-2.0
// The address a rendezvous server on this host tells ranks on other hosts to connect to.
#pragma once

#include <string>

namespace hvd::bootstrap {

// HVD_RENDEZVOUS_ADDR when set; else the first IPv4 address of the interface named by
// UCX_NET_DEVICES, HVD_IFACE or HOROVOD_GLOO_IFACE when one is; else the first non-loopback
// IPv4 address this host's name (gethostname; HVD_HOSTNAME only places ranks) resolves to;
// else, with *listen_everywhere set (a server then listens on every interface), the name
// itself when it resolves only to loopback here (Debian's 127.0.1.1: other hosts may resolve
// it to an address this host cannot tell), or 127.0.0.1 when it does not resolve at all.
// Never throws; thread-safe.
std::string advertised_address(bool *listen_everywhere);

}  // namespace hvd::bootstrap
