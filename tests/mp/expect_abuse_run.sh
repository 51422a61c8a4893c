#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# expect_abuse_run.sh MAX_WARNINGS -- command...
# Runs a job whose rendezvous port is abused (abuse_rendezvous.sh); passes when it exits 0,
# the abuser reports its 1,000 connections, no descriptor ran out ("Too many open files")
# and the rendezvous server logged at most MAX_WARNINGS warning lines. The output is shown.
max_warnings=$1
shift 2
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
abused=$(printf '%s\n' "$out" | grep -c -- "abuse_rendezvous: 1000 abusive connections")
emfile=$(printf '%s\n' "$out" | grep -c -- "Too many open files")
warnings=$(printf '%s\n' "$out" | grep -c -- "WARNING\] rendezvous server")
if [ "$code" -ne 0 ]; then
  echo "expect_abuse_run: exit code $code, expected 0" >&2
  exit 1
fi
if [ "$abused" -ne 1 ]; then
  echo "expect_abuse_run: the abuser did not report its 1000 connections" >&2
  exit 1
fi
if [ "$emfile" -ne 0 ]; then
  echo "expect_abuse_run: $emfile lines say 'Too many open files'" >&2
  exit 1
fi
if [ "$warnings" -gt "$max_warnings" ]; then
  echo "expect_abuse_run: $warnings rendezvous server warnings, at most $max_warnings expected" >&2
  exit 1
fi
echo "expect_abuse_run: ok ($warnings rendezvous server warnings)"
