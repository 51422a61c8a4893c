#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# check_corpus.sh MAKE_CORPUS CORPUS_DIR: the committed seeds are what fuzz_make_corpus writes
# from the library's encoders now, so that a protocol change cannot leave seeds the parsers
# refuse at once (the fuzzer would then rarely get past a handshake or a version check). The
# unique ids hold random bytes and are left out; inputs kept from past failures (regress_*)
# are the committed corpus's own.
set -u
make_corpus=$1 corpus=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$make_corpus" "$out" || { echo "FAIL: $make_corpus $out failed"; exit 1; }
stale=0
for f in $(cd "$out" && find . -type f ! -path './unique_id/*' | sort); do
    if ! cmp -s "$out/$f" "$corpus/$f"; then
        echo "stale or missing seed: $corpus/${f#./}"
        stale=1
    fi
done
if [ "$stale" -ne 0 ]; then
    echo "FAIL: rewrite the seeds with: fuzz_make_corpus $corpus (then commit them)"
    exit 1
fi
echo "ok: the seeds match the encoders"
