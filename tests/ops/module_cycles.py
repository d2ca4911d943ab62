#!/usr/bin/env python3
"""Import cycles between the modules of a crate: prints each cycle and exits 1 if there is one.

A module's imports are the `crate::`/`super::` paths its non-test code names (`use` trees
included), resolved to the longest module they name, and the children a parent names without a prefix
(`rank::score` in summarize/mod.rs). Imports of a module's own ancestors count too:
`super::Cancel` from summarize::clean depends on summarize, so summarize must not use clean
in turn (a parent may declare and re-export its children: `mod x;` and `pub use x::Y` are
its public face, not a use). Usage:
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


def imports(root, path, mods, names):
    me = module_name(root, path)
    own = me.split("::") if me else []
    src = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
    src = "\n".join(l for l in src.split("\n") if not l.strip().startswith("//"))
    paths = re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", src)
    # A parent names its children without a prefix (`rank::score`); its `pub use child::X`
    # lines are the parent's public face, not a use of the child.
    body_src = "\n".join(l for l in src.split("\n") if not re.match(r"\s*pub(\([^)]*\))?\s+use\b", l))
    for child in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", src, re.M):
        paths += ["self::" + child + m for m in re.findall(r"(?<![\w:])" + child + r"((?:::\w+)+)", body_src)]
        paths += ["self::" + child + "::" + item for body in re.findall(r"(?<![\w:])" + child + r"::\{([^;]*?)\};", body_src, re.S)
                  for item in re.findall(r"(?:^|[,{])\s*(\w+)", body)]
    for prefix, body in re.findall(r"\b((?:crate|super|self)(?:::\w+)*)::\{([^;]*?)\};", src, re.S):
        paths += [prefix + "::" + item for item in re.findall(r"(?:^|[,{])\s*(\w+)", body)]
    out = set()
    for p in paths:
        parts = p.split("::")
        if parts[0] == "crate":
            base, parts = [], parts[1:]
        elif parts[0] == "self":
            base, parts = list(own), parts[1:]
        else:
            base = list(own)
            while parts and parts[0] == "super":
                base, parts = base[:-1], parts[1:]
        full = base + parts
        # The longest module the path names; an item of the crate root (`crate::PdfError`)
        # names the root, "".
        for k in range(len(full), -1, -1):
            name = "::".join(full[:k])
            if name in mods:
                # A name the module re-exports from a child is the child's (`super::PdfError`
                # is error::PdfError, re-exported by the crate root).
                if k < len(full) and (name, full[k]) in names and names[(name, full[k])] in mods:
                    name = names[(name, full[k])]
                if name != me:
                    out.add(name)
                break
    return me, out


def reexports(root, path):
    """What a module's `pub use child::{A, B as C}` lines name: {(module, name): child module}."""
    me = module_name(root, path)
    src = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
    out = {}
    for child, body in re.findall(r"^\s*pub(?:\([^)]*\))?\s+use\s+(?:self::)?(\w+)::(\{[^;]*?\}|\w+(?:\s+as\s+\w+)?);", src, re.M | re.S):
        for item in re.findall(r"(\w+(?:\s+as\s+\w+)?)", body.strip("{}")):
            name = item.split()[-1]
            out[(me, name)] = "::".join(filter(None, [me, child]))
    return out


def cycles(root):
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".rs")
             and "tests" not in os.path.relpath(d, root).split(os.sep) and f != "build.rs"]
    mods = {module_name(root, f) for f in files}
    names = {}
    for f in files:
        names.update(reexports(root, f))
    deps = dict(imports(root, f, mods, names) for f in files)
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
        names = [m or "(crate root)" for m in c + (c[0],)]
        print(f"import cycle in {root}: {' -> '.join(names)}", file=sys.stderr)
        fail = True
sys.exit(1 if fail else 0)
