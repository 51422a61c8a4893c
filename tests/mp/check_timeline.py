# SPDX-License-Identifier: Apache-2.0
"""check_timeline.py FILE NAME... : FILE is valid JSON (a Chrome trace array), every span
begun on a row ends on it, and each NAME has a row with NEGOTIATE_<OP> and <OP> spans."""
import json
import sys

path, names = sys.argv[1], sys.argv[2:]
with open(path) as f:
    events = json.load(f)
assert isinstance(events, list) and events, "not a non-empty JSON array"
rows = {}
for e in events:
    if e.get("ph") == "M" and e.get("name") == "thread_name":
        rows[e["args"]["name"]] = e["tid"]
open_spans, seen = {}, {}
for e in events:
    ph, tid = e.get("ph"), e.get("tid")
    if ph == "B":
        open_spans.setdefault(tid, []).append(e["name"])
        seen.setdefault(tid, set()).add(e["name"])
    elif ph == "E":
        assert open_spans.get(tid), "an end without a begin on row %s" % tid
        open_spans[tid].pop()
for tid, stack in open_spans.items():
    assert not stack, "row %s left spans open: %s" % (tid, stack)
for name in names:
    op = name.split(".")[0].upper()
    assert name in rows, "no row for %s (rows: %s)" % (name, sorted(rows))
    spans = seen.get(rows[name], set())
    for want in ("QUEUE", "NEGOTIATE_" + op, op):
        assert want in spans, "%s has no %s span (has %s)" % (name, want, sorted(spans))
print("timeline ok: %d events, %d rows" % (len(events), len(rows)))
