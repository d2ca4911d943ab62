#!/usr/bin/env python3
"""Import cycles between the modules of a crate: prints each cycle and exits 1 if there is one.

A module's imports are the `crate::`/`super::` paths its non-test code names (`use` trees
included), resolved to the longest module they name; imports of a module's own ancestors
(`super::Cancel` from summarize::clean names summarize) do not count. Usage:
module_cycles.py CRATE_SOURCE_DIR...
"""
import os
import re
import sys


def module_name(root, path):
    rel = os.path.relpath(path, root)[:-3]
    if rel in ("lib", "main", "mod"):
        return ""
    if rel.endswith("/mod"):
        rel = rel[:-4]
    return rel.replace("/", "::")


def imports(root, path, mods):
    me = module_name(root, path)
    own = me.split("::") if me else []
    src = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
    src = "\n".join(l for l in src.split("\n") if not l.strip().startswith("//"))
    paths = re.findall(r"\b((?:crate|super)(?:::\w+)+)", src)
    for prefix, body in re.findall(r"\b((?:crate|super)(?:::\w+)*)::\{([^;]*?)\};", src, re.S):
        paths += [prefix + "::" + item for item in re.findall(r"(?:^|[,{])\s*(\w+)", body)]
    out = set()
    for p in paths:
        parts = p.split("::")
        if parts[0] == "crate":
            base, parts = [], parts[1:]
        else:
            base = list(own)
            while parts and parts[0] == "super":
                base, parts = base[:-1], parts[1:]
        full = base + parts
        for k in range(len(full), 0, -1):
            name = "::".join(full[:k])
            if name in mods:
                if name != me and not me.startswith(name + "::"):
                    out.add(name)
                break
    return me, out


def cycles(root):
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".rs")
             and "tests" not in os.path.relpath(d, root).split(os.sep) and f != "build.rs"]
    mods = {module_name(root, f) for f in files}
    deps = dict(imports(root, f, mods) for f in files)
    found = set()

    def walk(node, stack):
        for d in sorted(deps.get(node, ())):
            if d in stack:
                found.add(tuple(stack[stack.index(d):]))
            elif len(stack) < 12:
                walk(d, stack + [d])

    for m in sorted(deps):
        walk(m, [m])
    unique = {}
    for c in found:
        unique.setdefault(frozenset(c), c)
    return sorted(unique.values(), key=len)


fail = False
for root in sys.argv[1:]:
    for c in cycles(root):
        print(f"import cycle in {root}: {' -> '.join(c + (c[0],))}", file=sys.stderr)
        fail = True
sys.exit(1 if fail else 0)
