#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End-to-end checks of the hvdrun launcher: hvdrun_cases.sh <path-to-hvdrun> <case>.
# Each case runs hvdrun on real processes and compares its exit code and output with values
# written out here by hand.
set -u
HVDRUN=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/hvdrun_test.XXXXXX")
trap 'rm -rf "$T"' EXIT
unset HVD_RUN_GRACE_SECONDS HVD_RUN_BIND_TO

fail() {
    echo "FAIL [$CASE]: $*"
    echo "--- stdout:"; cat "$T/out" 2>/dev/null
    echo "--- stderr:"; cat "$T/err" 2>/dev/null
    exit 1
}

# run ARGS...: runs hvdrun, keeping stdout, stderr, exit code ($rc), seconds taken ($secs).
run() {
    start=$(date +%s)
    "$HVDRUN" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    secs=$(($(date +%s) - start))
}

expect_rc() { [ "$rc" -eq "$1" ] || fail "exit code $rc, expected $1"; }

# expect_once FILE LINE: LINE occurs exactly once, as a whole line.
expect_once() {
    n=$(grep -cxF -- "$2" "$T/$1")
    [ "$n" -eq 1 ] || fail "'$2' appears $n times in $1, expected once"
}

# expect_match FILE REGEX: some line of FILE matches the extended regex.
expect_match() { grep -qE -- "$2" "$T/$1" || fail "no line of $1 matches '$2'"; }

expect_lines() {
    n=$(wc -l <"$T/$1")
    [ "$n" -eq "$2" ] || fail "$1 has $n lines, expected $2"
}

# wait_for FILE...: waits up to 10 s until every FILE exists.
wait_for() {
    for _ in $(seq 100); do
        missing=0
        for f in "$@"; do [ -e "$f" ] || missing=1; done
        [ $missing -eq 0 ] && return 0
        sleep 0.1
    done
    fail "timed out waiting for $*"
}

# live_members PGID: processes of group PGID that are not zombies. (A killed rank's child is
# reparented and stays a zombie until init reaps it, which some containers never do.)
live_members() { ps -eo pgid=,stat=,pid= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { print $3 }'; }

# Every process group whose id is listed in FILE (one per line) must be gone within 3 s.
expect_groups_gone() {
    for _ in $(seq 30); do
        alive=$(while read -r pgid; do live_members "$pgid"; done <"$1")
        [ -z "$alive" ] && return 0
        sleep 0.1
    done
    echo "$alive" | xargs kill -9
    fail "processes $alive of the ranks were still alive after hvdrun returned"
}

case_env() {
    run -np 3 sh -c 'echo "rank=$HVD_RANK size=$HVD_SIZE local=$HVD_LOCAL_RANK/$HVD_LOCAL_SIZE cross=$HVD_CROSS_RANK/$HVD_CROSS_SIZE host=$HVD_HOSTNAME addr=$HVD_RENDEZVOUS_ADDR"
                     echo "job $HVD_RENDEZVOUS_PORT $HVD_SECRET $HVD_JOB_ID"'
    expect_rc 0
    for r in 0 1 2; do
        expect_once out "[$r]<stdout>: rank=$r size=3 local=$r/3 cross=0/1 host=localhost addr=127.0.0.1"
    done
    expect_lines out 6
    sed -n 's/^\[[0-9]\]<stdout>: job //p' "$T/out" | sort -u >"$T/job"
    [ "$(wc -l <"$T/job")" -eq 1 ] || fail "ranks disagree on port/secret/job id: $(cat "$T/job")"
    read -r port secret job <"$T/job"
    [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || fail "bad HVD_RENDEZVOUS_PORT '$port'"
    echo "$secret" | grep -qxE '[0-9a-f]{64}' || fail "HVD_SECRET '$secret' is not 64 hex digits"
    echo "$job" | grep -qxE '[0-9a-f]{16}' || fail "HVD_JOB_ID '$job' is not 16 hex digits"
    run -np 1 sh -c 'echo "$HVD_SECRET $HVD_JOB_ID"'
    [ "$(sed 's/^\[0\]<stdout>: //' "$T/out")" != "$secret $job" ] || fail "secret reused"
}

# The rendezvous port is reserved by hvdrun for the whole job: a launcher's test bind (no
# SO_REUSEADDR) fails on it before rank 0 listens, and after the ranks are done.
case_rendezvous_port() {
    probe='import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
    print("free")
except OSError:
    print("held")'
    run -np 2 sh -c 'sleep 0.$HVD_RANK; echo "rank $HVD_RANK $(python3 -c "$0" "$HVD_RENDEZVOUS_PORT")"' "$probe"
    expect_rc 0
    expect_once out "[0]<stdout>: rank 0 held"
    expect_once out "[1]<stdout>: rank 1 held"
}

case_output() {
    run -np 2 sh -c 'echo "out-$HVD_RANK"; echo "err-$HVD_RANK" >&2; cat; printf "tail-$HVD_RANK"'
    expect_rc 0
    for r in 0 1; do
        expect_once out "[$r]<stdout>: out-$r"
        expect_once out "[$r]<stdout>: tail-$r"
        expect_once err "[$r]<stderr>: err-$r"
    done
    expect_lines out 4  # and `cat` read nothing: stdin is /dev/null
    expect_lines err 2
}

case_no_prefix() {
    run -np 2 --no-prefix sh -c 'echo "out-$HVD_RANK"; echo "err-$HVD_RANK" >&2'
    expect_rc 0
    expect_once out "out-0"
    expect_once out "out-1"
    expect_once err "err-0"
    expect_once err "err-1"
}

# Four ranks write 3000 long lines each at once; every relayed line must be whole.
case_whole_lines() {
    run -np 4 awk 'BEGIN { r = ENVIRON["HVD_RANK"]; pad = sprintf("%0300d", 0)
                          for (i = 0; i < 3000; i++) print r "-" i "-" pad }'
    expect_rc 0
    expect_lines out 12000
    bad=$(grep -cvE '^\[([0-3])\]<stdout>: \1-[0-9]+-0{300}$' "$T/out")
    [ "$bad" -eq 0 ] || fail "$bad lines are broken or carry another rank's prefix"
    for r in 0 1 2 3; do
        expect_once out "[$r]<stdout>: $r-2999-$(printf '%0300d' 0)"
    done
}

case_exit_code() {
    run -np 3 sh -c '[ "$HVD_RANK" = 1 ] && exit 3; exit 0'
    expect_rc 3
    expect_match err '^hvdrun: rank 1 \(pid [0-9]+\) exited with code 3$'
}

# A rank killed by SIGKILL while the others sleep: the others get the default 5 s grace,
# then SIGTERM to their whole process group (the shell and its sleep).
case_signal() {
    run -np 3 sh -c 'echo $$ >"$0/pgid.$HVD_RANK"; [ "$HVD_RANK" = 2 ] && kill -9 $$; sleep 60' "$T"
    expect_rc 137
    expect_match err '^hvdrun: rank 2 \(pid [0-9]+\) killed by signal 9 \(Killed\)$'
    [ "$secs" -ge 4 ] && [ "$secs" -le 10 ] || fail "took $secs s, expected the 5 s grace"
    cat "$T"/pgid.* >"$T/pgids"
    expect_groups_gone "$T/pgids"
}

# A survivor that ignores SIGTERM is killed 3 s later; HVD_RUN_GRACE_SECONDS sets the grace.
case_sigkill_escalation() {
    HVD_RUN_GRACE_SECONDS=0.5 run -np 2 sh -c '
        echo $$ >"$0/pgid.$HVD_RANK"
        [ "$HVD_RANK" = 0 ] && exit 5
        trap "" TERM; sleep 60' "$T"
    expect_rc 5
    expect_match err '^hvdrun: rank 1 \(pid [0-9]+\) still running, sending SIGKILL$'
    [ "$secs" -ge 2 ] && [ "$secs" -le 6 ] || fail "took $secs s, expected 0.5 s + 3 s"
    cat "$T"/pgid.* >"$T/pgids"
    expect_groups_gone "$T/pgids"
}

# A host gone from the discovery script's output: its worker, which here never asks to join
# a round and ignores SIGTERM, gets SIGTERM after --grace-seconds and SIGKILL 3 s later; the
# job goes on and ends with the other worker's exit 0.
case_elastic_stop() {
    printf '#!/bin/sh\n[ -e "%s/drop" ] && echo localhost || printf "localhost\\n127.0.0.1\\n"\n' \
        "$T" >"$T/discover.sh"
    chmod +x "$T/discover.sh"
    run -np 2 --min-np 1 --grace-seconds 0.5 --host-discovery-script "$T/discover.sh" sh -c '
        [ "$HVD_HOSTNAME" = localhost ] && exec sleep 7
        echo $$ >"$0/pgid"; trap "" TERM; touch "$0/drop"; sleep 60' "$T"
    expect_rc 0
    expect_match err '^hvdrun: host 127.0.0.1 no longer offers worker 1 a slot'
    expect_match err '^hvdrun: stopping worker 1: its host left the job$'
    expect_match err '^hvdrun: rank 1 \(pid [0-9]+\) still running after SIGTERM, sending SIGKILL$'
    expect_match err '^hvdrun: worker 1 \(pid [0-9]+\) killed by signal 9 '
    expect_groups_gone "$T/pgid"
}

# An elastic job whose discovery script offers fewer than -np slots at first waits for them
# (up to --elastic-timeout): here they come at the third run; with --elastic-timeout 2 and
# never, hvdrun ends with an error naming -np, the slots and the wait.
case_elastic_start_wait() {
    printf '#!/bin/sh\nn=$(cat "%s/runs" 2>/dev/null || echo 0)\necho $((n + 1)) >"%s/runs"\n[ "$n" -ge 2 ] && [ -z "${NEVER:-}" ] && echo localhost:2 || echo localhost\n' \
        "$T" "$T" >"$T/discover.sh"
    chmod +x "$T/discover.sh"
    run -np 2 --host-discovery-script "$T/discover.sh" sh -c 'echo "worker=$HVD_WORKER_ID"'
    expect_rc 0
    expect_once err "hvdrun: the discovery script's hosts offer 1 slot(s), fewer than -np 2: waiting up to 600 s (--elastic-timeout)"
    expect_once out "[0]<stdout>: worker=0"
    expect_once out "[1]<stdout>: worker=1"
    NEVER=1 run -np 2 --elastic-timeout 2 --host-discovery-script "$T/discover.sh" true
    expect_rc 2
    expect_match err '^hvdrun: --host-discovery-script: its hosts offer 1 slot\(s\), fewer than -np 2, after waiting 2\.[0-9] s \(--elastic-timeout 2\)$'
    [ "$secs" -le 5 ] || fail "took $secs s, expected 2 s"
}

# SIGTERM / SIGINT to hvdrun reach every rank as SIGTERM; hvdrun exits 128+signal.
forward_signal() {
    sig=$1
    "$HVDRUN" -np 2 sh -c 'trap "echo got-term-$HVD_RANK; exit 7" TERM
                           touch "$0/ready.$HVD_RANK"; sleep 60 & wait' "$T" \
        >"$T/out" 2>"$T/err" </dev/null &
    pid=$!
    wait_for "$T/ready.0" "$T/ready.1"
    kill -s "$sig" $pid
    { wait $pid; } 2>/dev/null
    rc=$?
}

case_forward_signals() {
    forward_signal TERM
    expect_rc 143
    expect_once out "[0]<stdout>: got-term-0"
    expect_once out "[1]<stdout>: got-term-1"
    rm -f "$T"/ready.*
    forward_signal INT
    expect_rc 130
    expect_once out "[0]<stdout>: got-term-0"
    expect_once out "[1]<stdout>: got-term-1"
}

# hvdrun killed outright (no chance to clean up): each rank still gets SIGTERM, through the
# parent-death signal set at spawn.
case_hvdrun_killed() {
    "$HVDRUN" -np 2 sh -c 'echo $$ >"$0/pgid.$HVD_RANK"; exec sleep 60' "$T" \
        >"$T/out" 2>"$T/err" </dev/null &
    pid=$!
    wait_for "$T/pgid.0" "$T/pgid.1"
    kill -9 $pid
    { wait $pid; } 2>/dev/null
    cat "$T"/pgid.* >"$T/pgids"
    expect_groups_gone "$T/pgids"
}

case_usage_errors() {
    run --bogus -np 1 true
    expect_rc 2
    expect_once err "hvdrun: unknown option '--bogus' (see hvdrun --help)"
    for args in "true" "-np 0 true" "-np x true" "-np 1" "-np 2 -H localhost:1 true" \
        "-np 1 -H a:0 true" "-np 1 --grace-seconds -1 true" "-np 1 -H a --hostfile f true" \
        "-np 1 -x 1BAD=2 true" "-np 1 --ssh-port 70000 true" "-np 1 --verbose=1 true"; do
        # shellcheck disable=SC2086 # word splitting of $args is intended
        run $args
        expect_rc 2
        expect_match err '^hvdrun: '
    done
    HVD_RUN_GRACE_SECONDS=soon run -np 1 true
    expect_rc 2
    expect_once err "hvdrun: invalid HVD_RUN_GRACE_SECONDS value 'soon' (expected seconds >= 0)"
}

case_missing_program() {
    run -np 2 /nonexistent/prog
    expect_rc 127
    expect_once err "hvdrun: cannot execute '/nonexistent/prog': No such file or directory"
    run -np 1 hvdrun_no_such_program_in_path
    expect_rc 127
    expect_once err "hvdrun: cannot execute 'hvdrun_no_such_program_in_path': No such file or directory"
}

PLACEMENT_PROG='echo "local=$HVD_LOCAL_RANK/$HVD_LOCAL_SIZE cross=$HVD_CROSS_RANK/$HVD_CROSS_SIZE host=$HVD_HOSTNAME"'

case_placement() {
    run -np 4 -H localhost:2,127.0.0.1:2 sh -c "$PLACEMENT_PROG"
    expect_rc 0
    expect_once out "[0]<stdout>: local=0/2 cross=0/2 host=localhost"
    expect_once out "[1]<stdout>: local=1/2 cross=0/2 host=localhost"
    expect_once out "[2]<stdout>: local=0/2 cross=1/2 host=127.0.0.1"
    expect_once out "[3]<stdout>: local=1/2 cross=1/2 host=127.0.0.1"
    # --slots: the slots of an entry without its own; an entry's own slots win.
    run -np 3 --slots 2 -H localhost,127.0.0.1:1 sh -c "$PLACEMENT_PROG"
    expect_rc 0
    expect_once out "[1]<stdout>: local=1/2 cross=0/1 host=localhost"
    expect_once out "[2]<stdout>: local=0/1 cross=1/2 host=127.0.0.1"
}

case_hostfile() {
    printf '# two hosts\nlocalhost slots=1\n\n127.0.0.1:2  # comment\n' >"$T/hosts"
    run -np 3 --hostfile "$T/hosts" sh -c "$PLACEMENT_PROG"
    expect_rc 0
    expect_once out "[0]<stdout>: local=0/1 cross=0/2 host=localhost"
    expect_once out "[1]<stdout>: local=0/2 cross=1/2 host=127.0.0.1"
    expect_once out "[2]<stdout>: local=1/2 cross=0/1 host=127.0.0.1"
}

case_aliases_and_info() {
    for np in "-n 2" "--num-proc 2" "--num-proc=2"; do
        # shellcheck disable=SC2086
        run $np sh -c 'echo "size=$HVD_SIZE"'
        expect_rc 0
        expect_lines out 2
        expect_once out "[1]<stdout>: size=2"
    done
    run --version
    expect_rc 0
    expect_match out '^hvdrun \(libhvd\) [0-9]+\.[0-9]+\.[0-9]+$'
    run --help
    expect_rc 0
    expect_match out '^usage: hvdrun -np N'
}

# hwloc's own view (Debian's hwloc tools), worked out apart from hvdrun's code: hwloc-calc
# ARGS... restricted to the CPUs this shell (and so hvdrun) may run on.
calc() {
    command -v hwloc-calc >/dev/null ||
        fail "needs hwloc-calc and hwloc-bind (Debian package hwloc; scripts/test.sh installs it)"
    hwloc-calc --restrict "$(hwloc-bind --get)" "$@"
}

# expand LIST: "0-2,5" -> "0,1,2,5", as hwloc-calc -I writes CPU numbers.
expand() {
    echo "$1" | tr ',' '\n' | awk -F- '{ if (NF == 2) for (c = $1; c <= $2; c++) print c; else print $1 }' |
        paste -sd, -
}

SHOW_CPUS='awk "/^Cpus_allowed_list/ { print \"cpus=\" \$2 }" /proc/self/status'

# expect_cpus RANK PUS: rank RANK printed its Cpus_allowed_list (SHOW_CPUS) and it is PUS.
expect_cpus() {
    got=$(sed -n "s/^\[$1\]<stdout>: cpus=//p" "$T/out")
    [ "$(expand "$got")" = "$2" ] || fail "rank $1 runs on CPUs '$got', hwloc expects '$2'"
}

# --bind-to core|numa|socket|none and --map-by on this host: each rank's CPUs, read back from
# /proc, are hwloc-calc's for the place mpirun's rules give it; impossible requests and bad
# values are refused.
case_bind() {
    cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)
    ncores=$(calc -N core all)
    nnuma=$(calc -N numa all)
    run -np "$ncores" --bind-to core sh -c "$SHOW_CPUS"
    expect_rc 0
    expect_lines out "$ncores"
    for r in $(seq 0 $((ncores - 1))); do expect_cpus "$r" "$(calc --po -I pu "core:$r")"; done
    run -np $((ncores + 1)) --bind-to core true
    expect_rc 2
    expect_match err "^hvdrun: --bind-to core: ranks 0 and $ncores would share core L#0 \(CPUs [0-9,-]+\), which has 1 core \($((ncores + 1)) ranks on this host\); use --bind-to core:overload-allowed to allow it, or --bind-to none$"
    run -np $((ncores + 1)) --bind-to core:overload-allowed sh -c "$SHOW_CPUS"
    expect_rc 0
    expect_cpus "$ncores" "$(calc --po -I pu core:0)"
    # By NUMA node: rank r on NUMA node r mod the NUMA nodes, bound to all of it.
    run -np 2 --map-by numa --bind-to numa:overload-allowed sh -c "$SHOW_CPUS"
    expect_rc 0
    for r in 0 1; do expect_cpus "$r" "$(calc --po -I pu "numa:$((r % nnuma))")"; done
    # --map-by socket alone binds to the socket, as mpirun does.
    run -np 1 --map-by socket --report-bindings sh -c "$SHOW_CPUS"
    expect_rc 0
    expect_cpus 0 "$(calc --po -I pu package:0)"
    expect_match err "^\[[^]:]+:[0-9]+\] MCW rank 0 bound to socket 0\[core 0\[hwt 0[-0-9]*\]\](, socket 0\[core [0-9]+\[hwt [-0-9]+\]\])*: \[B"
    run -np 2 --bind-to=none --report-bindings sh -c 'awk "/^Cpus_allowed_list/ { print \$2 }" /proc/self/status'
    expect_rc 0
    expect_once out "[1]<stdout>: $cpus"
    expect_match err "^\[[^]:]+:[0-9]+\] MCW rank 1 is not bound \(or bound to all available processors\)$"
    HVD_RUN_BIND_TO=core run -np 1 sh -c "$SHOW_CPUS"
    expect_rc 0
    expect_cpus 0 "$(calc --po -I pu core:0)"
    HVD_RUN_BIND_TO=core run -np 2 --bind-to none sh -c 'awk "/^Cpus_allowed_list/ { print \$2 }" /proc/self/status'
    expect_rc 0
    expect_once out "[1]<stdout>: $cpus"
    HVD_RUN_BIND_TO=hwthread run -np 1 true
    expect_rc 2
    expect_once err "hvdrun: invalid HVD_RUN_BIND_TO value 'hwthread' (expected core, numa, socket or none, optionally :overload-allowed)"
    run -np 1 --bind-to l3cache true
    expect_rc 2
    expect_once err "hvdrun: invalid --bind-to value 'l3cache' (expected core, numa, socket or none, optionally :overload-allowed)"
    run -np 1 --map-by node true
    expect_rc 2
    expect_once err "hvdrun: invalid --map-by value 'node' (expected slot, core, numa or socket)"
    # Ranks on another host are bound there, by hvdrun --exec-bound on that host's topology
    # (the ssh stand-in runs it on this one), and report their own bindings.
    mkdir -p "$T/bin"
    cp "$HERE/fake_ssh.sh" "$T/bin/ssh"
    if [ "$ncores" -ge 2 ]; then
        PATH="$T/bin:$PATH" run -np 3 -H localhost:1,fakehost-b:2 --bind-to core \
            --report-bindings sh -c "$SHOW_CPUS"
        expect_rc 0
        expect_cpus 0 "$(calc --po -I pu core:0)"
        expect_cpus 1 "$(calc --po -I pu core:0)"
        expect_cpus 2 "$(calc --po -I pu core:1)"
        expect_match err "\[[^]:]+:[0-9]+\] MCW rank 2 bound to socket [0-9]+\[core 1\[hwt"
        expect_match err "^\[[^]:]+:[0-9]+\] MCW rank 0 bound to socket [0-9]+\[core 0\[hwt"
    fi
    # Elastic workers are pinned by their slot on the host: worker 1 fails, its host sits out a
    # 1 s cooldown, and worker 2 takes slot 1 (core 1) while worker 0 holds slot 0.
    if [ "$ncores" -ge 2 ]; then
        run -np 2 --min-np 1 --max-np 2 --blacklist-cooldown-range 1 1 -H localhost:2 \
            --bind-to core --report-bindings sh -c "$SHOW_CPUS"'
            [ "$HVD_WORKER_ID" = 1 ] && exit 3; [ "$HVD_WORKER_ID" = 0 ] && sleep 4; exit 0'
        expect_rc 0
        expect_cpus 0 "$(calc --po -I pu core:0)"
        expect_cpus 1 "$(calc --po -I pu core:1)"
        expect_cpus 2 "$(calc --po -I pu core:1)"
        expect_match err "\[[^]:]+:[0-9]+\] MCW rank 2 bound to socket [0-9]+\[core 1\[hwt"
        # A host that offers more slots later: its CPUs stay split among the slots it first
        # offered (one, core 0), and the worker on the added slot runs unpinned.
        printf '#!/bin/sh\nn=$(cat "%s/runs" 2>/dev/null || echo 0)\necho $((n + 1)) >"%s/runs"\n[ "$n" -ge 1 ] && echo localhost:2 || echo localhost:1\n' \
            "$T" "$T" >"$T/discover.sh"
        chmod +x "$T/discover.sh"
        run -np 1 --min-np 1 --max-np 2 --bind-to core --host-discovery-script "$T/discover.sh" \
            sh -c "$SHOW_CPUS"'; [ "$HVD_WORKER_ID" = 0 ] && sleep 4; exit 0'
        expect_rc 0
        expect_cpus 0 "$(calc --po -I pu core:0)"
        expect_cpus 1 "$(expand "$cpus")"
        expect_once err "hvdrun: warning: worker on slot 1 of host localhost runs unpinned: --bind-to split that host's CPUs among the 1 slot(s) it first offered"
    fi
    # More ranks on that host than it has cores: its hvdrun says so, and the job fails.
    PATH="$T/bin:$PATH" run -np $((ncores + 2)) -H localhost:1,fakehost-b:$((ncores + 1)) \
        --bind-to core true
    expect_rc 127
    expect_match err "hvdrun on [^:]+: rank [0-9]+: --bind-to core: ranks 0 and $ncores would share core .*\(ranks numbered by their place on this host\)$"
    # The wrapper refuses arguments it does not understand.
    run --exec-bound core slot 0 1 5 0 true
    expect_rc 127
    expect_match err "^hvdrun on [^:]+: rank 5: usage: hvdrun --exec-bound BIND MAP"
}

# Machines this host is not, through hwloc's synthetic topologies (HWLOC_SYNTHETIC, read by
# hvdrun and by hwloc-calc alike): two sockets of one CPU each on CPUs 0 and 1 (real pinning),
# and two sockets of two NUMA nodes of four 2-thread cores (the planned CPUs, from --verbose).
case_bind_synthetic() {
    if [ "$(calc --po -I pu pu:0-1)" = "0,1" ]; then
        export HWLOC_SYNTHETIC="pack:2 numa:1 core:1 pu:1"
        run -np 2 --map-by socket --bind-to core sh -c "$SHOW_CPUS"
        expect_rc 0
        for r in 0 1; do expect_cpus "$r" "$(hwloc-calc --po -I pu "package:$r")"; done
    fi
    export HWLOC_SYNTHETIC="pack:2 numa:2 core:4 pu:2"
    planned() { expand "$(sed -n "s/^hvdrun: rank $1 on .*, cpus \([0-9,-]*\)).*/\1/p" "$T/err")"; }
    run -np 5 --map-by numa --bind-to core --verbose --report-bindings true
    expect_rc 0
    for r in 0 1 2 3 4; do
        first=$(hwloc-calc -I core "numa:$((r % 4))" | cut -d, -f$((r / 4 + 1)))
        [ "$(planned $r)" = "$(hwloc-calc --po -I pu "core:$first")" ] ||
            fail "rank $r planned on CPUs '$(planned $r)', not core $first's"
    done
    expect_match err "^\[[^]:]+:[0-9]+\] MCW rank 1 bound to socket 0\[core 4\[hwt 0-1\]\]: \[\.\./\.\./\.\./\.\./BB/\.\./\.\./\.\.\]\[\.\./\.\./\.\./\.\./\.\./\.\./\.\./\.\.\]$"
    run -np 3 --map-by socket --bind-to numa --verbose true
    expect_rc 0
    for r in 0 1 2; do
        numa=$(hwloc-calc -I numa "package:$((r % 2))" | cut -d, -f$((r / 2 + 1)))
        [ "$(planned $r)" = "$(hwloc-calc --po -I pu "numa:$numa")" ] ||
            fail "rank $r planned on CPUs '$(planned $r)', not NUMA node $numa's"
    done
    export HWLOC_SYNTHETIC="pack:1 core:2 pu:1"
    run -np 3 --bind-to socket true
    expect_rc 2
    expect_once err "hvdrun: --bind-to socket: ranks 0, 1 and 2 would share socket L#0 (CPUs 0-1), which has 2 cores (3 ranks on this host); use --bind-to socket:overload-allowed to allow it, or --bind-to none"
}

case_exports() {
    HVDRUN_TEST_B=from-env run -np 2 -x HVDRUN_TEST_A=given -x HVDRUN_TEST_B -x HVDRUN_TEST_UNSET \
        sh -c 'echo "A=$HVDRUN_TEST_A B=$HVDRUN_TEST_B"'
    expect_rc 0
    expect_once out "[0]<stdout>: A=given B=from-env"
    expect_once out "[1]<stdout>: A=given B=from-env"
    expect_once err "hvdrun: warning: -x HVDRUN_TEST_UNSET: not set in this environment, skipped"
}

# Remote ranks through the ssh stand-in: ssh options, the cd, the environment (only HVD_* and
# -x), and arguments with spaces, quotes and '$' arriving intact.
case_remote() {
    mkdir -p "$T/bin" "$T/work dir"
    cp "$HERE/fake_ssh.sh" "$T/bin/ssh"
    export HVDRUN_FAKE_SSH_LOG="$T/ssh.log" HVDRUN_LOCAL_ONLY=1
    cd "$T/work dir" || fail "cd"
    x_value="it's \$HOME \"q\""
    PATH="$T/bin:$PATH" run -np 2 -H fakehost-a,fakehost-b -p 2222 --start-timeout 7 \
        -x "HVDRUN_TEST_X=$x_value" --verbose \
        sh -c 'printf "%s|" "$@"; echo; pwd
               echo "$HVD_RANK/$HVD_SIZE $HVD_HOSTNAME $HVD_RENDEZVOUS_ADDR L=${HVDRUN_LOCAL_ONLY-unset}"
               echo "X=$HVDRUN_TEST_X"; echo "secret $HVD_SECRET"; cat' \
        argv0 'a b' "c'd" '$e' ''
    expect_rc 0
    for r in 0 1; do
        expect_once out "[$r]<stdout>: a b|c'd|\$e||"
        expect_once out "[$r]<stdout>: $T/work dir"
        expect_once out "[$r]<stdout>: X=$x_value"
    done
    expect_once out "[0]<stdout>: 0/2 fakehost-a fakehost-a L=unset"
    expect_once out "[1]<stdout>: 1/2 fakehost-b fakehost-a L=unset"
    # Both got the job's secret through ssh's stdin, and `cat` found their stdin empty.
    expect_lines out 10
    sed -n 's/^\[[01]\]<stdout>: secret //p' "$T/out" | sort -u >"$T/secret"
    grep -qxE '[0-9a-f]{64}' "$T/secret" && [ "$(wc -l <"$T/secret")" -eq 1 ] ||
        fail "remote ranks got secrets '$(cat "$T/secret")', expected one 64-hex-digit value"
    ! grep -q 'HVD_SECRET=' "$T/ssh.log" || fail "the secret is on the ssh command line"
    expect_match err '^hvdrun: rank 1 on fakehost-b \(local 0/1, cross 1/2\): ssh -o BatchMode=yes'
    # A silent host is given up after HVD_PEER_TIMEOUT (30 s by default).
    for line in "opt BatchMode=yes" "opt ConnectTimeout=7" "opt ServerAliveInterval=10" \
        "opt ServerAliveCountMax=3" "opt 2222" "host fakehost-a" "host fakehost-b"; do
        grep -qxF "$line" "$T/ssh.log" || fail "ssh was not given '$line': $(cat "$T/ssh.log")"
    done
    # Rank 0 here, rank 1 remote: remote ranks must be sent to this host's name.
    PATH="$T/bin:$PATH" run -np 2 -H localhost,fakehost-b sh -c 'echo "addr=$HVD_RENDEZVOUS_ADDR"'
    expect_rc 0
    expect_once out "[0]<stdout>: addr=$(hostname)"
    expect_once out "[1]<stdout>: addr=$(hostname)"
}

# horovodrun's tuning flags and config file reach every rank as HVD_* settings; a later source
# wins: config file, then flags, then -x.
case_tuning_flags() {
    cat >"$T/hvd.yaml" <<'YAML'
params:
  fusion_threshold_mb: 8
  cycle_time_ms: 3
  hierarchical_allreduce: true
timeline:
  filename: /tmp/from-config.json
stall_check:
  enabled: false
YAML
    show='echo "F=$HVD_FUSION_THRESHOLD C=$HVD_CYCLE_TIME T=$HVD_TIMELINE S=$HVD_STALL_CHECK_DISABLE L=$HVD_LOG_LEVEL A=${HVD_AUTOTUNE-unset} H=$HVD_HIERARCHICAL_ALLREDUCE G=${HVD_HIERARCHICAL_ALLGATHER-unset}"'
    HVD_CYCLE_TIME=99 run -np 2 --config-file "$T/hvd.yaml" --cycle-time-ms 1.5 \
        --log-level ERROR -x HVD_TIMELINE=/tmp/from-x.json --hierarchical-allgather sh -c "$show"
    expect_rc 0
    for r in 0 1; do
        expect_once out "[$r]<stdout>: F=8388608 C=1.5 T=/tmp/from-x.json S=1 L=error A=unset H=1 G=1"
    done
    ! grep -q "has no effect" "$T/err" || fail "a hierarchical key was said to have no effect"
    # A bad file is a usage error naming the line; nothing starts.
    printf 'params:\n  cycle_time_ms: soon\n' >"$T/bad.yaml"
    run -np 1 --config-file "$T/bad.yaml" sh -c 'echo started'
    expect_rc 2
    expect_once err "hvdrun: $T/bad.yaml:2: invalid value 'soon' for params.cycle_time_ms (expected milliseconds, 0 to 86400000)"
    [ ! -s "$T/out" ] || fail "a rank started despite the bad config file"
    run -np 1 --fusion-threshold-mb lots true
    expect_rc 2
    expect_once err "hvdrun: invalid --fusion-threshold-mb value 'lots' (expected whole MiB, 0 to 1048576)"
}

# --network-interfaces: UCX_NET_DEVICES for every rank; an interface this host or a remote
# host lacks stops the job before the program starts, naming the host and the interface.
case_network_interfaces() {
    run -np 2 --network-interfaces lo sh -c 'echo "D=$UCX_NET_DEVICES"'
    expect_rc 0
    expect_once out "[0]<stdout>: D=lo"
    expect_once out "[1]<stdout>: D=lo"
    run -np 1 --network-interfaces lo,hvdnosuch0 sh -c 'echo started'
    expect_rc 2
    expect_once err "hvdrun: host $(hostname) has no network interface hvdnosuch0 (--network-interfaces)"
    [ ! -s "$T/out" ] || fail "a rank started without its interface"
    mkdir -p "$T/bin"
    cp "$HERE/fake_ssh.sh" "$T/bin/ssh"
    export HVDRUN_FAKE_SSH_LOG="$T/ssh.log"
    PATH="$T/bin:$PATH" run -np 1 -H fakehost-a --network-interfaces hvdnosuch0 \
        sh -c 'echo started'
    expect_rc 2
    expect_match err "^\[0\]<stderr>: hvdrun: host .* has no network interface hvdnosuch0 \(--network-interfaces\)$"
    ! grep -q started "$T/out" || fail "the remote rank started without its interface"
}

# --ssh-identity-file goes to ssh as -i; a key that cannot be read is a usage error.
case_ssh_identity() {
    mkdir -p "$T/bin"
    cp "$HERE/fake_ssh.sh" "$T/bin/ssh"
    export HVDRUN_FAKE_SSH_LOG="$T/ssh.log"
    : >"$T/id_test"
    PATH="$T/bin:$PATH" run -np 1 -H fakehost-a --ssh-identity-file "$T/id_test" -p 2200 \
        sh -c 'echo "rank $HVD_RANK"'
    expect_rc 0
    expect_once out "[0]<stdout>: rank 0"
    grep -qxF "opt $T/id_test" "$T/ssh.log" && grep -qxF "opt -i" "$T/ssh.log" ||
        fail "ssh was not given -i $T/id_test: $(cat "$T/ssh.log")"
    run -np 1 -H fakehost-a -i "$T/no_such_key" true
    expect_rc 2
    expect_once err "hvdrun: --ssh-identity-file $T/no_such_key: No such file or directory"
}

# --check-build loads the library and prints what it supports.
case_check_build() {
    [ -n "${HVD_LIBRARY-}" ] || fail "the test needs HVD_LIBRARY (set by ctest)"
    run --check-build
    expect_rc 0
    expect_match out "^libhvd v[0-9]+\.[0-9]+\.[0-9]+ \($HVD_LIBRARY\)$"
    expect_once out "    [X] C API (hvd/hvd.h)"
    expect_once out "    [X] UCX"
    expect_once out "    [ ] NCCL"
    HVD_LIBRARY=/nonexistent/libhvd.so.1 run -cb
    expect_rc 1
    expect_match err "^  /nonexistent/libhvd.so.1: "
}

"case_$CASE" || fail "case failed"
echo "PASS [$CASE]"
