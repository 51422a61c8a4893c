// SPDX-License-Identifier: Apache-2.0
// Host lists (-H, --hostfile) and the placement of ranks onto hosts. Pure functions, apart
// from read_hostfile and this_host_name, so that placement can be unit-tested.
#pragma once

#include <string>
#include <vector>

namespace hvdrun {

struct HostSlots {
    std::string name;
    int slots = 1;
};

// Where one rank runs, with Horovod's rank arithmetic: local = ranks on the same host,
// cross = ranks with the same local rank, one per host.
struct Placement {
    int rank = 0;
    std::string host;
    int local_rank = 0;
    int local_size = 0;
    int cross_rank = 0;
    int cross_size = 0;
};

// "host1:2,host2,[::1]:4" (an entry without slots gets default_slots: --slots, else 1).
// Returns false with *err on a malformed entry, zero slots, or a host listed twice.
bool parse_host_list(const std::string &spec, std::vector<HostSlots> *out, std::string *err,
                     int default_slots = 1);

// Hostfile text: one host per line, "host slots=N", "host:N" or "host" (default_slots);
// '#' starts a comment. Also the output of a host discovery script.
bool parse_hostfile_text(const std::string &text, std::vector<HostSlots> *out, std::string *err,
                         int default_slots = 1);

// Reads and parses a hostfile; *err names the file on failure.
bool read_hostfile(const std::string &path, std::vector<HostSlots> *out, std::string *err,
                   int default_slots = 1);

// Fills hosts in order, each up to its slots, with ranks 0..np-1. Hosts left without ranks
// do not count. Returns false with *err when the hosts have fewer than np slots.
bool place_ranks(const std::vector<HostSlots> &hosts, int np, std::vector<Placement> *out,
                 std::string *err);

// True for names that mean this machine: localhost, 127.0.0.1, ::1, or this_host (the
// gethostname() result, compared also without its domain part).
bool is_local_host(const std::string &name, const std::string &this_host);

// gethostname(), or "localhost" if it fails.
std::string this_host_name();

}  // namespace hvdrun
