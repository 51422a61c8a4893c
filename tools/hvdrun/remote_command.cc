// SPDX-License-Identifier: Apache-2.0
#include "remote_command.h"

#include <algorithm>

#include "network_interfaces.h"

namespace hvdrun {
namespace {

bool is_plain(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '/' || c == ',' || c == ':' || c == '=' || c == '+' ||
           c == '@';
}

}  // namespace

std::string shell_quote(const std::string &word) {
    bool plain = !word.empty();
    for (char c : word) {
        plain = plain && is_plain(c);
    }
    if (plain) return word;
    std::string quoted = "'";
    for (char c : word) {
        if (c == '\'') {
            quoted += "'\\''";
        } else {
            quoted += c;
        }
    }
    return quoted + "'";
}

std::string remote_shell_command(const std::string &cwd, const std::vector<EnvVar> &env,
                                 const std::vector<std::string> &command,
                                 const std::vector<std::string> &interfaces) {
    // `env` stops reading options at the first NAME=VALUE, so a program whose name starts
    // with '-' is still run, not parsed as an option. HVD_RANK always comes first.
    std::string check = interface_check_command(interfaces);
    std::string run = "env";
    for (const EnvVar &var : env) {
        run += " " + shell_quote(var.first + "=" + var.second);
    }
    for (const std::string &word : command) {
        run += " " + shell_quote(word);
    }
    // The rank runs in the background while a watcher reads the rest of ssh's stdin (kept as
    // fd 3: a background command's own stdin is /dev/null): EOF there means hvdrun or its ssh
    // is gone, and the rank gets SIGTERM, then SIGKILL.
    const std::string kill_after = std::to_string(kRemoteKillAfterSeconds);
    return (check.empty() ? "" : check + " && ") +
           "read -r HVD_SECRET && export HVD_SECRET && cd " + shell_quote(cwd) +
           " || exit; exec 3<&0; " + run + " </dev/null 3<&- & p=$!; { cat >/dev/null; " +
           "kill -TERM $p; sleep " + kill_after +
           "; kill -KILL $p; } <&3 >/dev/null 2>&1 & w=$!; exec 3<&-; wait $p; s=$?; " +
           "kill $w 2>/dev/null; exit $s";
}

std::vector<std::string> ssh_argv(const std::string &host, const SshOptions &ssh,
                                  const std::string &cwd, const std::vector<EnvVar> &env,
                                  const std::vector<std::string> &command) {
    std::vector<std::string> argv = {"ssh", "-o", "BatchMode=yes"};
    if (ssh.connect_timeout > 0) {
        argv.insert(argv.end(), {"-o", "ConnectTimeout=" + std::to_string(ssh.connect_timeout)});
    }
    if (ssh.alive_timeout > 0) {
        const int interval = std::max(1, ssh.alive_timeout / kServerAliveCount);
        argv.insert(argv.end(), {"-o", "ServerAliveInterval=" + std::to_string(interval), "-o",
                                 "ServerAliveCountMax=" + std::to_string(kServerAliveCount)});
    }
    if (ssh.port > 0) argv.insert(argv.end(), {"-p", std::to_string(ssh.port)});
    if (!ssh.identity_file.empty()) argv.insert(argv.end(), {"-i", ssh.identity_file});
    argv.push_back(host);
    argv.push_back(remote_shell_command(cwd, env, command, ssh.interfaces));
    return argv;
}

}  // namespace hvdrun
