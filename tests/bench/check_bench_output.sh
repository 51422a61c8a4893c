#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs an hvd_bench command line and checks its output against the peer benchmarks' format
# (bench/peers/README.md):
#   check_bench_output.sh NSIZES -- CMD [ARGS...]
#       exit status 0; the first line a comment carrying coll= nranks= inplace=; exactly
#       NSIZES data lines "size_bytes count dtype op time_us algbw_GBps busbw_GBps" with
#       integer sizes in increasing order and positive numeric times; last line "# errors: 0".
#       Exit status 77 (a GPU peer without a GPU: skipped) is passed on.
#   check_bench_output.sh --fails RC TEXT -- CMD [ARGS...]
#       exit status RC and TEXT somewhere in stderr.
set -u
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

show() {
    echo "---- stdout"; cat "$out"; echo "---- stderr"; cat "$err"
}

if [ "$1" = "--fails" ]; then
    want_rc=$2 text=$3
    shift 4
    "$@" >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -ne "$want_rc" ] || ! grep -qF -- "$text" "$err"; then
        echo "FAIL: expected exit $want_rc and '$text' on stderr, got exit $rc"; show; exit 1
    fi
    echo "ok: exit $rc, '$text'"; exit 0
fi

nsizes=$1
shift 2
"$@" >"$out" 2>"$err"
rc=$?
if [ "$rc" -eq 77 ]; then show; exit 77; fi
if [ "$rc" -ne 0 ]; then echo "FAIL: exit status $rc"; show; exit 1; fi
awk -v want="$nsizes" '
    NR == 1 && !($0 ~ /^#/ && /coll=[a-z]+/ && /nranks=[0-9]+/ && /inplace=[01]/) {
        print "line 1 lacks coll=/nranks=/inplace=: " $0; bad = 1
    }
    /^#/ { last = $0; next }
    {
        last = $0; n++
        if (NF != 7) { print "not 7 columns: " $0; bad = 1; next }
        if ($1 !~ /^[0-9]+$/ || $2 !~ /^[0-9]+$/) { print "sizes not integers: " $0; bad = 1 }
        if ($1 + 0 <= prev) { print "sizes not increasing: " $0; bad = 1 }
        for (i = 5; i <= 7; i++)
            if ($i !~ /^[0-9]+\.[0-9]+$/) { print "column " i " not a number: " $0; bad = 1 }
        if ($5 + 0 <= 0) { print "time_us not positive: " $0; bad = 1 }
        prev = $1 + 0
    }
    END {
        if (n != want) { print "expected " want " data lines, got " n; bad = 1 }
        if (last != "# errors: 0") { print "last line is not \"# errors: 0\": " last; bad = 1 }
        exit bad
    }' "$out" || { echo "FAIL: output format"; show; exit 1; }
echo "ok: $nsizes sizes"
cat "$out"
