// SPDX-License-Identifier: Apache-2.0
// The line protocol between hvdrun --elastic-controller and the program that runs it (hvd.ray's
// driver): hvdrun keeps the membership service and its rounds; the controller starts and
// watches the workers. It runs over the controller's pipes to hvdrun's stdin and stdout, so
// only the process that started hvdrun speaks it; the job secret travels in `start` lines.
//
// hvdrun -> controller (stdout), one line each:
//   start <id> <host> NAME=VALUE...   start worker <id> on <host> with these variables
//   stop <id>                          stop worker <id>: its host left the hosts (it has left
//                                      the membership); report its end with `exited` as usual
//   failed <reason>                    the job cannot go on; hvdrun exits 1 after it
// controller -> hvdrun (stdin):
//   exited <id> <code>                 worker <id> ended: 0 finished, else failed
//   hosts [<host>:<slots>...]          the hosts now available (replaces the last list)
//   stop                               end the job (as does end of input)
// Host names and variable values are percent-encoded (%XX) where they hold '%', spaces or
// control characters. hvdrun's own messages stay on stderr.
#pragma once

#include <string>
#include <vector>

#include "hosts.h"
#include "rank_env.h"

namespace hvdrun::controller {

std::string encode(const std::string &text);
// False when `text` holds a malformed %XX.
bool decode(const std::string &text, std::string *out);

std::string start_line(int id, const std::string &host, const std::vector<EnvVar> &vars);
std::string stop_line(int id);
std::string failed_line(const std::string &reason);

struct Input {
    enum Kind { kExited, kHosts, kStop } kind = kStop;
    int id = -1;
    int code = 0;
    std::vector<HostSlots> hosts;
};

// Parses one line from the controller (no newline). False with *err naming what is wrong.
bool parse_input(const std::string &line, Input *out, std::string *err);

}  // namespace hvdrun::controller
