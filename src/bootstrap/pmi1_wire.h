// SPDX-License-Identifier: Apache-2.0
// The text of PMI-1's wire protocol (the "simple PMI" that MPICH's Hydra process manager
// serves on the socket it names in PMI_FD, as Slurm's --mpi=pmi2 plugin also does): one line
// per message, "cmd=<name>" then space-separated key=value fields, ended by '\n'. Values may
// hold no space, '=' or newline; pmi1_value_text hex-encodes anything that might. Pure.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hvd::bootstrap {

// "cmd=<cmd> k1=v1 k2=v2\n".
std::string pmi1_line(const std::string &cmd,
                      const std::vector<std::pair<std::string, std::string>> &fields = {});

// The fields of one line (without or with its '\n'), "cmd" among them. False when a word is
// not key=value or there is no cmd.
bool pmi1_parse(const std::string &line, std::map<std::string, std::string> *fields);

// Text that travels as a PMI-1 value whatever bytes it holds (lower-case hex), and back
// (false when `value` is not such hex).
std::string pmi1_value_text(const std::string &bytes);
bool pmi1_value_bytes(const std::string &value, std::string *bytes);

}  // namespace hvd::bootstrap
