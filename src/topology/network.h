// SPDX-License-Identifier: Apache-2.0
// Which network interfaces a rank uses toward other hosts: the ones the user chose
// (UCX_NET_DEVICES, HVD_IFACE, Horovod's HOROVOD_GLOO_IFACE) or the one routed toward the
// rendezvous server, with its address, for UCX's device list and for errors about peers.
#pragma once

#include <string>

namespace hvd::topology {

// HVD_IFACE, else HOROVOD_GLOO_IFACE (a comma-separated list of interfaces), or "" when
// neither is set.
std::string configured_interfaces();

struct NetInterface {
    std::string name;     // "" when unknown
    std::string address;  // its IPv4 address; "" when it has none or it is unknown
};

// This host's interface toward other hosts: the first entry of `devices` (UCX_NET_DEVICES
// syntax: "eth1", "mlx5_0:1,eth1"; "all" counts as no choice) when given, else the interface
// whose address this host uses to reach `toward` (a host name or address). Never throws;
// unknown parts stay empty.
NetInterface local_interface(const std::string &devices, const std::string &toward);

// "10.0.0.3 on eth1", "eth1", "10.0.0.3" or "an unknown address".
std::string describe(const NetInterface &nic);

}  // namespace hvd::topology
