#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# expect_mapped_on.sh NP -- command...
# Runs the command (with HVD_LOG_LEVEL=debug set by the caller); passes when it succeeds and
# every one of the NP ranks logged that the mapped path (hvd_mem_alloc) is on. Skips (77) when
# the ranks logged that they cannot read each other's memory: this host forbids it (Yama
# ptrace_scope, a seccomp profile), and the mapped path needs the same rights.
np=$1
shift 2
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
if [ "$code" -ne 0 ]; then
  echo "expect_mapped_on: exit code $code" >&2
  exit 1
fi
if printf '%s\n' "$out" | grep -q "cannot read each other's memory"; then
  echo "expect_mapped_on: this host forbids reading another rank's memory: skipped" >&2
  exit 77
fi
on=$(printf '%s\n' "$out" | grep -c "mapped buffers (hvd_mem_alloc) on")
if [ "$on" -ne "$np" ]; then
  echo "expect_mapped_on: the mapped path is on for $on of $np ranks" >&2
  exit 1
fi
echo "expect_mapped_on: ok ($on ranks)"
