#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""compare_peers.py [-o OUT.md] RESULTS_DIR [RESULTS_DIR...] - libhvd against its peers.

Reads the run_all.sh result directories that scripts/bench.sh produces (manifest.tsv and one
output file per case and repetition, in the format of bench/peers/bench_common.h), takes the
median over repetitions of every (case, size) and prints, per collective and rank count, libhvd's
busbw beside the best standard Open MPI configuration (run_all.sh's THP and out-of-place
diagnostic variants are left out of "best"), Gloo, torch.distributed and the one-process
memcpy rate, the ratios, and the targets with PASS / MISS; then the Python path (hvd.torch,
bench/python_allreduce_perf.py) against the C path, Horovod and torch.distributed. Labels ending in ".more"
are extra repetitions of the case without the suffix and are pooled with it. Only the
standard library is used.
"""
import argparse
import csv
import os
import re
import statistics
import sys

KIB, MIB = 1 << 10, 1 << 20
FAMILIES = ("hvd", "mpi", "gloo", "torch")


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", KIB)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def fmt(v, nd=2):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    if 0 < abs(v) < 0.1:
        return f"{v:.2g}"
    return f"{v:.{nd}f}"


def parse(path):
    """bench_common.h format -> (meta, {size: (time_us, algbw, busbw)})."""
    meta, rows = {}, {}
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith("#"):
                    for k, v in re.findall(r"(\w+)=(\S+)", line):
                        meta.setdefault(k, v)
                    continue
                f = line.split()
                if len(f) == 7:
                    try:
                        rows[int(f[0])] = (float(f[4]), float(f[5]), float(f[6]))
                    except ValueError:
                        pass
    except OSError:
        pass
    return meta, rows


class Case:
    def __init__(self, label, kind):
        self.label, self.kind, self.meta, self.runs = label, kind, {}, []

    @property
    def family(self):
        return self.label.split("_", 1)[0]

    def key(self):
        """(collective, ranks, many) this case measures."""
        m = self.meta
        return (m.get("coll"), m.get("nranks"), m.get("many", "1"))

    def med(self, size, col):
        vals = [rows[size][col] for rows in self.runs if size in rows]
        return statistics.median(vals) if vals else None

    def sizes(self):
        return sorted({s for rows in self.runs for s in rows})


def load(dirs):
    cases = {}
    for d in dirs:
        with open(os.path.join(d, "manifest.tsv")) as fh:
            for m in csv.DictReader(fh, delimiter="\t"):
                if m["kind"] not in ("coll", "memcpy") or m["rc"] != "0":
                    continue
                label = m["label"][:-5] if m["label"].endswith(".more") else m["label"]
                c = cases.setdefault(label, Case(label, m["kind"]))
                meta, rows = parse(os.path.join(d, m["file"]))
                for k, v in meta.items():
                    c.meta.setdefault(k, v)
                if rows:
                    c.runs.append(rows)
    return cases


def standard(c):
    """Not one of run_all.sh's diagnostic variants (THP-backed malloc, out of place): the
    configurations a user runs."""
    return "_thp" not in c.label and "_oop" not in c.label


def best(cases, family, key, size, col=2, lowest=False):
    """(value, label) of the family's best standard case for key at size: max busbw or min
    time."""
    found = [(c.med(size, col), c.label) for c in cases.values()
             if c.family == family and c.key() == key and standard(c)
             and c.med(size, col) is not None]
    if not found:
        return None, None
    return (min if lowest else max)(found)


def ratio(a, b):
    return a / b if a is not None and b else None


def table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def busbw_table(cases, hvd, memcpy):
    """Per size: libhvd against the best case of every peer family (busbw, GB/s)."""
    key = hvd.key()
    rows = []
    for s in hvd.sizes():
        h = hvd.med(s, 2)
        r = [human(s), fmt(h, 3)]
        for fam in FAMILIES[1:]:
            v, lab = best(cases, fam, key, s)
            r += [f"{fmt(v, 3)}" + (f" ({lab})" if lab and fam == "mpi" else ""), fmt(ratio(h, v))]
        mc = memcpy.med(s, 1) if memcpy else None
        r += [fmt(mc, 3), fmt(ratio(h, mc))]
        rows.append(r)
    hdr = ["size", f"{hvd.label} (n={len(hvd.runs)})", "best MPI", "hvd/MPI", "Gloo", "hvd/Gloo",
           "torch", "hvd/torch", "memcpy_p1", "hvd/memcpy"]
    return table(hdr, rows)


class Targets:
    def __init__(self):
        self.rows = []

    def add(self, what, value, goal, ok):
        status = "-" if ok is None else ("PASS" if ok else "MISS")
        self.rows.append([what, value, goal, status])


def range_ratios(cases, hvd, fam, lo, hi, col=2):
    """[(size, hvd/peer)] over the sizes lo..hi both measured."""
    out = []
    for s in hvd.sizes():
        if lo <= s <= hi:
            v, _ = best(cases, fam, hvd.key(), s, col)
            r = ratio(hvd.med(s, col), v)
            if r is not None:
                out.append((s, r))
    return out


def check_range(t, cases, hvd, fam, lo, hi, goal, what):
    rs = range_ratios(cases, hvd, fam, lo, hi)
    if not rs:
        t.add(what, "not measured", f">= {goal}x", None)
        return
    worst = min(rs, key=lambda x: x[1])
    t.add(what, ", ".join(f"{human(s)} {r:.2f}x" for s, r in rs), f">= {goal}x (worst "
          f"{human(worst[0])})", worst[1] >= goal)


def targets(cases, np_, prefix):
    """The targets for libhvd's cases named <prefix>_..._np<np_>."""
    t = Targets()
    hvd = cases.get(f"{prefix}_np{np_}")
    if not hvd:
        return t
    memcpy = cases.get("memcpy_p1")
    lat = hvd.med(8, 0)
    gl, _ = best(cases, "gloo", hvd.key(), 8, 0, lowest=True)
    mp, _ = best(cases, "mpi", hvd.key(), 8, 0, lowest=True)
    t.add("8 B allreduce time", f"{fmt(lat)} us (MPI {fmt(mp)}, Gloo {fmt(gl)})", "<= 15 us",
          None if lat is None else lat <= 15)
    t.add("8 B allreduce vs Gloo", f"{fmt(ratio(gl, lat))}x faster", ">= 10x",
          None if ratio(gl, lat) is None else ratio(gl, lat) >= 10)
    check_range(t, cases, hvd, "mpi", 32 * KIB, 256 * KIB, 0.5, "32 KiB-256 KiB busbw vs best MPI")
    check_range(t, cases, hvd, "mpi", 512 * KIB, 8 * MIB, 0.9, "512 KiB-8 MiB busbw vs best MPI")
    check_range(t, cases, hvd, "mpi", 32 * MIB, 1 << 40, 3.0, ">= 32 MiB busbw vs best MPI")
    check_range(t, cases, hvd, "gloo", 32 * MIB, 1 << 40, 2.5, ">= 32 MiB busbw vs Gloo")
    if memcpy:
        rs = [(s, ratio(hvd.med(s, 2), memcpy.med(s, 1))) for s in hvd.sizes() if s >= 32 * MIB]
        rs = [(s, r) for s, r in rs if r is not None]
        if rs:
            w = min(r for _, r in rs)
            t.add(">= 32 MiB busbw vs memcpy_p1", ", ".join(f"{human(s)} {r:.2f}" for s, r in rs),
                  ">= 0.5", w >= 0.5)
    for coll in ("allgather", "broadcast", "alltoall", "reducescatter"):
        other = cases.get(f"{prefix}_{coll}_np{np_}")
        if other:
            check_range(t, cases, other, "mpi", MIB, 1 << 40, 1.0, f"{coll} >= 1 MiB vs best MPI")
    many = cases.get(f"{prefix}_many256_np{np_}")
    if many:
        n = int(many.meta["many"])
        step = many.med(many.sizes()[0], 0) if many.sizes() else None
        per = many.sizes()[0] // n if many.sizes() else 0
        mp, lab = best(cases, "mpi", ("allreduce", str(np_), "1"), per, 0, lowest=True)
        r = ratio(mp * n if mp else None, step)
        t.add(f"fusion: {n} x {human(per)} step", f"{fmt(step)} us vs {n} x {fmt(mp)} us ({lab}): "
              f"{fmt(r)}x", ">= 3x", None if r is None else r >= 3)
        grouped = cases.get(f"{prefix}_grouped256_np{np_}")
        if grouped and grouped.sizes():
            g = grouped.med(grouped.sizes()[0], 0)
            t.add(f"the same step as one grouped allreduce", f"{fmt(g)} us: "
                  f"{fmt(ratio(mp * n if mp else None, g))}x", "(reference)", None)
    thp, mthp = cases.get(f"{prefix}_thp_np{np_}"), cases.get(f"mpi_ob1_default_thp_np{np_}")
    if thp and mthp:
        rs = [(s, ratio(thp.med(s, 2), mthp.med(s, 2))) for s in thp.sizes() if s >= 32 * MIB]
        rs = [(s, r) for s, r in rs if r is not None]
        if rs:
            t.add("THP buffers, >= 32 MiB: vs MPI with THP",
                  ", ".join(f"{human(s)} {r:.2f}x" for s, r in rs), "(reference)", None)
    return t


def python_section(cases, np_):
    """hvd.torch per call and per 256-tensor step against libhvd's C path (hvdrun, unbound, as
    the Python cases run), Horovod's own Python path and torch.distributed (Gloo)."""
    py = cases.get(f"hvdpy_np{np_}")
    if not py or not py.runs:
        return []
    c, hrv = cases.get(f"hvd_np{np_}"), cases.get(f"horovod_np{np_}")
    rows = []
    for s in py.sizes():
        p = py.med(s, 0)
        cv = c.med(s, 0) if c else None
        hv = hrv.med(s, 0) if hrv else None
        tv, _ = best(cases, "torch", py.key(), s, 0, lowest=True)
        rows.append([human(s), fmt(p), fmt(cv), fmt(p - cv if cv is not None else None),
                     fmt(hv), fmt(ratio(hv, p)), fmt(tv), fmt(ratio(tv, p))])
    out = [f"## Python (hvd.torch allreduce_), {np_} ranks: time per call, us\n",
           table(["size", "hvd.torch", "C (hvd_np)", "Python cost", "Horovod",
                  "Horovod/hvd", "torch gloo", "torch/hvd"], rows) + "\n"]
    t = Targets()
    p8, c8 = py.med(8, 0), c.med(8, 0) if c else None
    if p8 is not None and c8 is not None:
        t.add("8 B: Python cost over C", f"{fmt(p8 - c8)} us ({fmt(p8)} vs {fmt(c8)})",
              "<= 3 us", p8 - c8 <= 3)
    h8 = hrv.med(8, 0) if hrv else None
    t.add("8 B: vs Horovod", f"{fmt(ratio(h8, p8))}x faster" if h8 else "not measured",
          "(reference)", None)
    pstep, cstep = cases.get(f"hvdpy_many256_np{np_}"), cases.get(f"hvd_many256_np{np_}")
    if pstep and pstep.sizes():
        n = int(pstep.meta.get("many", "1"))
        ps = pstep.med(pstep.sizes()[0], 0)
        cs = cstep.med(cstep.sizes()[0], 0) if cstep and cstep.sizes() else None
        if cs:
            t.add(f"{n} x {human(pstep.sizes()[0] // n)} step vs the C step",
                  f"{fmt(ps)} vs {fmt(cs)} us: {fmt(ratio(ps, cs))}x", "<= 3x", ps <= 3 * cs)
            t.add("  Python cost per op", f"{fmt((ps - cs) / n)} us", "<= 1.5 us",
                  (ps - cs) / n <= 1.5)
        hstep = cases.get(f"horovod_many256_np{np_}")
        if hstep and hstep.sizes():
            hs = hstep.med(hstep.sizes()[0], 0)
            t.add("  the step vs Horovod's", f"{fmt(hs)} us: {fmt(ratio(hs, ps))}x faster",
                  "(reference)", None)
    out += [f"## Python targets, {np_} ranks\n", table(["target", "measured", "goal", ""], t.rows)
            + "\n"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out")
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    cases = load(args.dirs)
    memcpy = cases.get("memcpy_p1")
    out = ["# libhvd against its peers (median over repetitions; GB/s = 1e9 B/s)\n"]
    hvds = [c for c in cases.values() if c.family == "hvd" and c.runs and
            c.meta.get("many", "1") == "1" and "oop" not in c.label]
    for h in sorted(hvds, key=lambda c: (c.meta.get("nranks", ""), c.label)):
        coll, np_, _ = h.key()
        out.append(f"## {coll}, {np_} ranks: busbw\n")
        out.append(busbw_table(cases, h, memcpy) + "\n")
    for np_ in sorted({c.meta.get("nranks") for c in hvds}):
        for prefix, how in (("hvd", "hvdrun, no binding"),
                            ("hvd_bind", "--bind: one CPU per rank, as Open MPI"),
                            ("hvd_bind_mem", "--bind, tensors from hvd_mem_alloc (-R 1)"),
                            ("hvd_mem", "hvdrun, tensors from hvd_mem_alloc (-R 1)")):
            t = targets(cases, np_, prefix)
            if t.rows:
                out.append(f"## Targets, {np_} ranks, {how} ({prefix}_*)\n")
                out.append(table(["target", "measured", "goal", ""], t.rows) + "\n")
        out += python_section(cases, np_)
    text = "\n".join(out)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
