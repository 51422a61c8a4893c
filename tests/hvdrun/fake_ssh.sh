#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Stand-in for ssh in the hvdrun tests (no sshd runs on test machines). It logs the options
# and command hvdrun passed, then does what sshd does with a command: runs it through `sh -c`
# with ssh's stdin, starting in another directory (/) and with an almost empty environment,
# like a fresh remote login. That checks the part hvdrun owns: the quoting and content of the
# remote command line, and the secret on stdin.
log=${HVDRUN_FAKE_SSH_LOG:-/dev/null}
while [ $# -gt 2 ]; do
    echo "opt $1" >>"$log"
    shift
done
echo "host $1" >>"$log"
echo "cmd $2" >>"$log"
cd / && exec env -i PATH="$PATH" sh -c "$2"
