#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""binding_coverage.py --root SRC --include-dir BUILD_INCLUDE [--cc CC] [--binding NAME ...]

Every binding covers every function: parses include/hvd/hvd.h and fails, naming what is
missing, when an exported hvd_* function, a status, dtype, reduce op, field_mask bit or config
key is not reachable from a binding (Python ctypes, pybind11, Java, Julia), when a constant a
binding declares has another value than the C compiler gives it, or when a struct a binding
declares has another size or field offset than the C compiler's.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

# ------------------------------------------------------------------ the header


def parse_header(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    functions = sorted(set(re.findall(r"HVD_API\s[^;{]*?\b(hvd_\w+)\s*\(", text)))
    groups = {"status": [], "dtype": [], "op": [], "field bit": [], "config key": []}
    for body, tname in re.findall(r"(?:typedef\s+)?enum\s*\w*\s*\{([^}]*)\}\s*(\w*)\s*;", text):
        names = re.findall(r"\b(HVD_\w+)\s*=", body)
        for n in names:
            if "_FIELD_" in n:
                groups["field bit"].append(n)
            elif tname == "hvd_status_t":
                groups["status"].append(n)
            elif tname == "hvd_dtype_t":
                groups["dtype"].append(n)
            elif tname == "hvd_reduce_op_t":
                groups["op"].append(n)
            elif tname == "hvd_config_key_t":
                groups["config key"].append(n)
    structs = {}
    for body, name in re.findall(r"typedef\s+struct\s*\w*\s*\{([^}]*)\}\s*(\w+)\s*;", text):
        fields = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            decl = re.sub(r"\[[^\]]*\]", "", decl)
            head, _, rest = decl.partition(",")
            fields.append(re.findall(r"(\w+)\s*$", head)[0])
            fields += [f.strip() for f in rest.split(",") if f.strip()]
        structs[name] = fields
    return functions, groups, structs


def c_facts(header_dir, include_dir, cc, groups, structs):
    """Values of the constants and struct layouts as the C compiler sees them."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "hvd/hvd.h"', "int main(void) {"]
    for names in groups.values():
        for n in names:
            lines.append('printf("const %s %%lld\\n", (long long)(%s));' % (n, n))
    for s, fields in structs.items():
        lines.append('printf("size %s %%zu\\n", sizeof(%s));' % (s, s))
        for f in fields:
            lines.append('printf("offset %s %s %%zu\\n", offsetof(%s, %s));' % (s, f, s, f))
    lines += ["return 0;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "facts.c")
        exe = os.path.join(tmp, "facts")
        open(src, "w").write("\n".join(lines) + "\n")
        subprocess.run([cc, "-std=c99", "-I", header_dir, "-I", include_dir, src, "-o", exe], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    consts, sizes, offsets = {}, {}, {}
    for line in out.splitlines():
        p = line.split()
        if p[0] == "const":
            consts[p[1]] = int(p[2])
        elif p[0] == "size":
            sizes[p[1]] = int(p[2])
        else:
            offsets[(p[1], p[2])] = int(p[3])
    return consts, sizes, offsets


# ------------------------------------------------------------------ reading bindings


def evaluate(expr):
    """The value of a simple integer expression in Java, Julia or Python source."""
    e = re.split(r"#|//", expr)[0]
    e = re.sub(r"\b(Int32|UInt32|Int64|UInt64|Cint)\(", "(", e.strip())
    e = re.sub(r"(\d)[lL]\b", r"\1", e)
    if not re.fullmatch(r"[\d\s()<>|+\-x]*", e):
        raise ValueError("cannot evaluate %r" % expr)
    return eval(e, {"__builtins__": {}})


def read(root, path):
    return open(os.path.join(root, path)).read()


def assignments(text, pattern=r"^\s*(?:(?:public|static|final|private|const)\s+)*(?:\w+\s+)?(\w+)\s*=\s*([^;\n]+)"):
    out = {}
    for name, expr in re.findall(pattern, text, flags=re.M):
        try:
            out[name] = evaluate(expr)
        except (ValueError, SyntaxError):
            pass
    # Python's "A, B, C = range(n)"
    for names, n in re.findall(r"^([A-Z_0-9, ]+)=\s*range\((\d+)\)", text, flags=re.M):
        for i, name in enumerate(x.strip() for x in names.split(",")):
            out[name] = i
    return out


def enum_constants(text):
    """Java enum constants with their code as first argument: NAME(code, ...)."""
    return {n: int(v) for n, v in re.findall(r"^\s*([A-Z][A-Z0-9_]*)\((-?\d+)", text, flags=re.M)}


# C types' sizes (64-bit Linux) by the spelling each binding uses.
SIZES = {
    "UInt64": 8, "Int64": 8, "Float64": 8, "UInt32": 4, "Int32": 4, "Cint": 4, "UInt8": 1, "c_uint8": 1, "c_char": 1,
    "c_uint64": 8, "c_int64": 8, "c_double": 8, "c_int32": 4, "c_void_p": 8, "c_char_p": 8,
}


def layout(fields, known):
    """C layout of (name, type) fields: returns (size, {name: offset})."""
    off, align_max, offsets = 0, 1, {}
    for name, typ in fields:
        size, align = type_size(typ, known)
        off = (off + align - 1) // align * align
        offsets[name] = off
        off += size
        align_max = max(align_max, align)
    return (off + align_max - 1) // align_max * align_max, offsets


def type_size(typ, known):
    typ = typ.strip()
    if typ in SIZES:
        return SIZES[typ], SIZES[typ]
    if typ.startswith(("Ptr{", "POINTER(", "Cstring")):
        return 8, 8
    m = re.fullmatch(r"NTuple\{(\d+),\s*(\w+)\}", typ) or re.fullmatch(r"(\w+)\s*\*\s*(\w+)", typ)
    if m:
        a, b = m.groups()
        count, elem = (int(a), b) if a.isdigit() else (None, a)
        if count is None:
            count = int(b) if b.isdigit() else evaluate_name(b)
        esize, ealign = type_size(elem, known)
        return esize * count, ealign
    if typ in known:
        return known[typ]
    raise ValueError("unknown type %s" % typ)


def evaluate_name(name):
    return {"UNIQUE_ID_BYTES": 128}[name]


def camel(c_struct):
    """hvd_op_params_t -> OpParams"""
    return "".join(w.capitalize() for w in c_struct[len("hvd_"):-len("_t")].split("_"))


def upper(c_struct):
    """hvd_op_params_t -> OP_PARAMS"""
    return c_struct[len("hvd_"):-len("_t")].upper()


class Binding:
    def __init__(self, name):
        self.name = name
        self.functions = set()
        self.constants = {}  # C name -> value
        self.structs = {}  # C struct -> (size, {field: offset})


def c_identifiers(text):
    names = set(re.findall(r"\b(hvd_\w+)\b", text))
    if "hvd_init" in names:
        names.add("hvd_init_versioned")  # the header's static inline wrapper calls it
    return names


def python_constants(root, c_names):
    pkg = "bindings/python/hvd"
    found = {}
    for f in sorted(os.listdir(os.path.join(root, pkg))):
        if f.endswith(".py"):
            found.update(assignments(read(root, os.path.join(pkg, f))))
    out = {}
    for c in c_names:
        stem = c[len("HVD_"):]
        for cand in (stem, "_" + stem, stem[len("OP_"):].capitalize() if c.startswith("HVD_OP_") else None,
                     stem[len("DTYPE_"):] if c.startswith("HVD_DTYPE_") else None):
            if cand and cand in found:
                out[c] = found[cand]
                break
    return out


def python_ctypes(root, c_names, c_structs):
    b = Binding("Python ctypes (bindings/python/hvd/_ctypes_backend.py)")
    text = read(root, "bindings/python/hvd/_ctypes_backend.py")
    b.functions = set(re.findall(r'"(hvd_\w+)"', text))
    b.constants = python_constants(root, c_names)
    known = {}
    classes = dict(re.findall(r"class (_\w+)\(ctypes\.Structure\):\s*_fields_\s*=\s*\[(.*?)\]\n", text, flags=re.S))
    for c in c_structs:
        cls = "_" + camel(c)
        if cls not in classes:
            continue
        fields = [(n, t.replace("ctypes.", "")) for n, t in
                  re.findall(r'\("(\w+)",\s*([\w.]+(?:\([^)]*\))?(?:\s*\*\s*\w+)?)\)', classes[cls])]
        fields = [(n, known_alias(t, classes)) for n, t in fields]
        b.structs[c] = layout(fields, known)
        known[cls] = (b.structs[c][0], 8 if b.structs[c][0] % 8 == 0 and c != "hvd_unique_id_t" else 1)
    return b


def known_alias(t, classes):
    t = t.strip()
    return "c_uint8 * " + t.split("*")[1].strip() if t.startswith("c_char *") else t


def python_pybind(root, c_names):
    b = Binding("Python pybind11 (bindings/python/*.cc)")
    for f in sorted(os.listdir(os.path.join(root, "bindings/python"))):
        if f.endswith(".cc"):
            b.functions |= c_identifiers(read(root, os.path.join("bindings/python", f)))
    # compiled against hvd.h: the header's constants are its own; the ones Python users see
    # are the hvd package's, shared with the ctypes backend.
    b.constants = python_constants(root, c_names)
    return b


def java(root, c_names, c_structs):
    b = Binding("Java (bindings/java)")
    base = "bindings/java/src/main/java/org/libhvd/"
    b.functions = set(re.findall(r"\b(hvd_\w+)\s*\(", read(root, base + "NativeApi.java")))
    per_file = {"HVD_DTYPE_": enum_constants(read(root, base + "DType.java")),
                "HVD_OP_": enum_constants(read(root, base + "ReduceOp.java")),
                "HVD_CONFIG_": enum_constants(read(root, base + "ConfigKey.java"))}
    plain = {}
    for f in ("Status.java", "Layout.java", "Features.java"):
        plain.update(assignments(read(root, base + f)))
    for c in c_names:
        for prefix, table in per_file.items():
            if c.startswith(prefix) and "_FIELD_" not in c and c[len(prefix):] in table:
                b.constants[c] = table[c[len(prefix):]]
        if c not in b.constants and c[len("HVD_"):] in plain:
            b.constants[c] = plain[c[len("HVD_"):]]
    for c, fields in c_structs.items():
        u = upper(c)
        if "SIZEOF_" + u in plain:
            b.structs[c] = (plain["SIZEOF_" + u], {f: plain.get(u + "_" + f.upper()) for f in fields})
    return b


def julia(root, c_names, c_structs):
    b = Binding("Julia (bindings/julia/Hvd.jl)")
    src = "bindings/julia/Hvd.jl/src"
    text = "".join(read(root, os.path.join(src, f)) for f in sorted(os.listdir(os.path.join(root, src))))
    b.functions = set(re.findall(r":(hvd_\w+)\b", text))
    consts = {}
    for name, expr in re.findall(r"^const\s+(HVD_\w+)\s*=\s*(.+)$", text, flags=re.M):
        consts[name] = evaluate(expr)
    b.constants = {c: consts[c] for c in c_names if c in consts}
    known = {}
    for name, body in re.findall(r"^struct\s+(\w+)\s*\n(.*?)^end", text, flags=re.M | re.S):
        fields = re.findall(r"^\s*(\w+)::(.+?)\s*$", body, flags=re.M)
        c = next((c for c in c_structs if "Hvd" + camel(c) == name), None)
        size, offsets = layout(fields, known)
        known[name] = (size, max(type_size(t, known)[1] for _, t in fields))
        if c:
            b.structs[c] = (size, offsets)
    return b


# ------------------------------------------------------------------ the check


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--include-dir", required=True, help="the build's include dir (hvd_version.h)")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--binding", action="append", choices=["ctypes", "pybind11", "java", "julia"])
    a = ap.parse_args()
    header = os.path.join(a.root, "include/hvd/hvd.h")
    functions, groups, structs = parse_header(header)
    consts, sizes, offsets = c_facts(os.path.join(a.root, "include"), a.include_dir, a.cc, groups, structs)
    c_names = [n for names in groups.values() for n in names]
    makers = {"ctypes": lambda: python_ctypes(a.root, c_names, structs),
              "pybind11": lambda: python_pybind(a.root, c_names),
              "java": lambda: java(a.root, c_names, structs),
              "julia": lambda: julia(a.root, c_names, structs)}
    problems = 0
    for key in a.binding or list(makers):
        b = makers[key]()
        missing = [f for f in functions if f not in b.functions]
        errors = ["function %s is not reachable" % f for f in missing]
        for group, names in groups.items():
            for n in names:
                if n not in b.constants:
                    errors.append("%s %s is not declared" % (group, n))
                elif b.constants[n] != consts[n]:
                    errors.append("%s %s is %d, C says %d" % (group, n, b.constants[n], consts[n]))
        for s, (size, offs) in sorted(b.structs.items()):
            if size != sizes[s]:
                errors.append("struct %s has size %s, C says %d" % (s, size, sizes[s]))
            for f in structs[s]:
                if offs.get(f) != offsets[(s, f)]:
                    errors.append("struct %s field %s is at offset %s, C says %d" % (s, f, offs.get(f), offsets[(s, f)]))
        print("%s: %d functions, %d constants, %d structs checked: %s" % (
            b.name, len(functions), len(c_names), len(b.structs), "ok" if not errors else "%d problem(s)" % len(errors)))
        for e in errors:
            print("  %s: %s" % (key, e))
        problems += len(errors)
    if problems:
        print("binding_coverage: %d problem(s); every binding must reach every function and constant of hvd.h" % problems,
              file=sys.stderr)
        sys.stdout.flush()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
