// SPDX-License-Identifier: Apache-2.0
// hvdrun --network-interfaces: the interfaces a job's traffic between hosts may use. Each
// rank gets UCX_NET_DEVICES (UCX's network devices; shared memory is not affected), ranks on
// this host are checked here and remote ranks by their shell before the program starts.
#pragma once

#include <string>
#include <vector>

namespace hvdrun {

// "eth0,ib0" into names. False with *err for an empty list, an empty name or a name that is
// not an interface name (letters, digits, '_', '-', '.', ':'; at most 15 characters).
bool parse_interface_list(const std::string &text, std::vector<std::string> *out, std::string *err);

// The first of `names` this machine lacks, or "" when it has them all.
std::string missing_local_interface(const std::vector<std::string> &names);

// The first IPv4 address of interface `name` on this machine, or "" when it has none.
std::string interface_ipv4_address(const std::string &name);

// A POSIX shell command that exits 2, after saying which host lacks which interface on
// stderr, unless every one of `names` exists (/sys/class/net/<name>). "" for no names.
std::string interface_check_command(const std::vector<std::string> &names);

}  // namespace hvdrun
