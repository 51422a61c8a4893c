// SPDX-License-Identifier: Apache-2.0
// The ssh command line that starts one rank on a remote host.
#pragma once

#include <string>
#include <vector>

#include "rank_env.h"

namespace hvdrun {

struct SshOptions {
    int port = 0;             // 0: ssh's default
    int connect_timeout = 0;  // seconds; 0: ssh's default
    // Seconds without an answer from the remote host (ssh's server-alive messages) before
    // ssh gives up on it, ending that host's ranks for the launcher; 0: ssh's default (never).
    int alive_timeout = 0;
    std::string identity_file;            // ssh -i; empty: ssh's default keys
    std::vector<std::string> interfaces;  // --network-interfaces the remote host must have
};

// Quotes `word` for a POSIX shell: 'word', with each ' written as '\''. Words made only of
// characters no shell treats specially are returned unquoted, to keep --verbose readable.
std::string shell_quote(const std::string &word);

// Seconds between the SIGTERM and the SIGKILL a remote rank gets when its ssh connection ends.
constexpr int kRemoteKillAfterSeconds = 3;
// Unanswered server-alive messages after which ssh gives up on the remote host.
constexpr int kServerAliveCount = 3;

// The remote shell command, every word quoted:
//   [<interface check> && ]read -r HVD_SECRET && export HVD_SECRET && cd <cwd> || exit;
//   <env VAR=... prog args </dev/null, in the background, watched>; exit <its status>
// The interface check (interface_check_command) makes a host without one of `interfaces`
// fail before the program starts.
// The job secret comes as the first line of ssh's stdin, not on the command line, where `ps`
// on either host would show it; the rank's own stdin is /dev/null as for local ranks. `env`
// must not contain HVD_SECRET. hvdrun keeps ssh's stdin open while the rank runs: when it
// closes (hvdrun stopped the rank, or died, or the connection broke) the rank gets SIGTERM
// and kRemoteKillAfterSeconds later SIGKILL, so no rank outlives its launcher on a remote
// host. The exit status is the program's (128 + n when signal n ended it). Assumes a POSIX
// shell as the remote user's login shell.
std::string remote_shell_command(const std::string &cwd, const std::vector<EnvVar> &env,
                                 const std::vector<std::string> &command,
                                 const std::vector<std::string> &interfaces = {});

// argv for the local ssh process: ssh -o BatchMode=yes [-o ConnectTimeout=S] [-p port]
// [-i identity_file] host
// '<remote_shell_command>'. BatchMode makes a missing key fail at once instead of prompting.
std::vector<std::string> ssh_argv(const std::string &host, const SshOptions &ssh,
                                  const std::string &cwd, const std::vector<EnvVar> &env,
                                  const std::vector<std::string> &command);

}  // namespace hvdrun
