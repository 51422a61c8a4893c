// SPDX-License-Identifier: Apache-2.0
// The address a rendezvous server on this host tells ranks on other hosts to connect to.
#pragma once

#include <string>

namespace hvd::bootstrap {

// HVD_RENDEZVOUS_ADDR when set; else the first IPv4 address of the interface named by
// UCX_NET_DEVICES, HVD_IFACE or HOROVOD_GLOO_IFACE when one is; else the first non-loopback
// IPv4 address this host's name (gethostname; HVD_HOSTNAME only places ranks) resolves to;
// else the name itself, with *listen_everywhere set: a server then listens on every
// interface, since the name resolves only to loopback here (Debian's 127.0.1.1) and to some
// other address, which this host cannot tell, elsewhere. Never throws; thread-safe.
std::string advertised_address(bool *listen_everywhere);

}  // namespace hvd::bootstrap
