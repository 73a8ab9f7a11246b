#!/usr/bin/python3
"""The layering check: every #include and every call between files goes
down the layers that tests/tools/layers.txt declares, and no circle of
calls joins files of the checked folders.

usage: check_layers.py SOURCE_DIR [BUILD_DIR] [--layers FILE]

Reads FILE (default SOURCE_DIR/tests/tools/layers.txt):
    layer NAME PATH... [: ALLOWED...]   a layer: files under the PATHs (a
                                        folder ending in /, or one file);
                                        it may depend on itself and on
                                        the ALLOWED layers (not onto the
                                        layers they allow: list each)
    check PATH...                       folders whose files may form no
                                        circle of calls
    circle FILE FILE...                 a circle that exists and may stay
                                        for now (an allowlist entry)
An indented line continues the one before; # starts a comment. A file
belongs to the layer whose PATH is its longest prefix; a file of a checked
folder that no layer holds is an error.

Includes: every `#include "..."` of every .c and .h file under the layers'
paths, resolved as the compiler does (the file's folder first, then the
-I folders of the build's compile commands, or when there is no build
every layer path's folder), is an edge from its file to the included one.

Uses and calls (only with BUILD_DIR): the objects named by BUILD_DIR's
compile_commands.json, read with nm and readelf: file A uses file B when
A's object refers to a symbol that B's object defines (a call, or the
address of a function or table), and calls B when A's code calls such a
function. A use is checked like an include; .c files only (a header's
uses are those of the files that include it).

Circles: the strongly connected components of the calls between files of
the `check` folders (a table of function pointers is a use, not a call:
the file filling a dispatch table and the functions it lists form no
circle). Each must be an allowlisted circle, file for file, and
each allowlisted circle must still exist (so that the list shrinks as the
circles are removed, and never goes stale).

Exit status 0 when all holds, else 1 with one line per violation."""
import os
import re
import subprocess
import sys
from collections import defaultdict

import compile_db

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


class Layers:
    def __init__(self, path):
        self.layers = {}  # name -> (paths, allowed)
        self.order = []
        self.checked = []
        self.circles = []
        errors = []
        logical = []  # (line number, text): an indented line continues the one before
        for n, raw in enumerate(open(path), 1):
            text = raw.split("#", 1)[0].rstrip()
            if not text.strip():
                continue
            if text[0].isspace() and logical:
                logical[-1] = (logical[-1][0], logical[-1][1] + " " + text.strip())
            else:
                logical.append((n, text.strip()))
        for n, line in logical:
            words = line.split()
            where = "%s:%d" % (path, n)
            if words[0] == "layer" and len(words) >= 3:
                rest = words[2:]
                paths, allowed = (rest[:rest.index(":")], rest[rest.index(":") + 1:]) \
                    if ":" in rest else (rest, [])
                if words[1] in self.layers or not paths:
                    errors.append("%s: layer %s declared twice or without a path" % (where, words[1]))
                self.layers[words[1]] = (paths, allowed)
                self.order.append(words[1])
            elif words[0] == "check" and len(words) >= 2:
                self.checked += words[1:]
            elif words[0] == "circle" and len(words) >= 3:
                self.circles.append((frozenset(words[1:]), where))
            else:
                errors.append("%s: cannot read '%s'" % (where, line))
        for name, (_, allowed) in self.layers.items():
            for a in allowed:
                if a not in self.layers:
                    errors.append("%s: layer %s allows unknown layer %s" % (path, name, a))
        if errors:
            sys.exit("\n".join(errors))
        self.prefixes = sorted(((p, name) for name in self.order for p in self.layers[name][0]),
                               key=lambda x: -len(x[0]))

    def layer_of(self, rel):
        for p, name in self.prefixes:
            if rel == p or (p.endswith("/") and rel.startswith(p)):
                return name
        return None

    def allows(self, a, b):
        return a == b or b in self.layers[a][1]

    def is_checked(self, rel):
        return any(rel.startswith(p) for p in self.checked)


def sources(root, layers):
    out = []
    for p, _ in layers.prefixes:
        full = os.path.join(root, p)
        if os.path.isfile(full):
            out.append(p)
            continue
        for d, subdirs, files in os.walk(full):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith("."))
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(set(out))


def compile_commands(build):
    """[(source, object, include dirs)] of the build, absolute paths."""
    out = []
    for e in compile_db.load(build, "check_layers"):
        args = compile_db.arguments(e)
        obj, incs = None, []
        for i, a in enumerate(args):
            if a == "-o" and i + 1 < len(args):
                obj = args[i + 1]
            elif a.startswith("-I"):
                incs.append(a[2:] if len(a) > 2 else args[i + 1])
        if obj:
            d = e["directory"]
            out.append((os.path.normpath(os.path.join(d, e["file"])),
                        os.path.normpath(os.path.join(d, obj)),
                        [os.path.normpath(os.path.join(d, x)) for x in incs]))
    if not out:
        sys.exit("check_layers: no compile command in %s" % build)
    return out


def include_edges(root, files, search_dirs):
    """{(from, to)} of the includes that resolve to a file of the tree."""
    edges = set()
    for rel in files:
        text = open(os.path.join(root, rel), errors="replace").read()
        for name in INCLUDE.findall(text):
            own = os.path.dirname(os.path.join(root, rel))
            for d in [own] + search_dirs.get(rel, search_dirs[None]):
                cand = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(cand):
                    to = os.path.relpath(cand, root)
                    if not to.startswith(".."):
                        edges.add((rel, to))
                    break
    return edges


def run_tool(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("check_layers: %s failed: %s" % (cmd[0], r.stderr.strip()[:2000]))
    return r.stdout


def nm_symbols(objs):
    """{object: (defined, used)} of the global symbols, one nm for all."""
    out = {o: (set(), set()) for o in objs}
    for line in run_tool(["nm", "-P", "-A"] + objs).splitlines():
        # "path.o: symbol type [value size]"
        head, _, rest = line.partition(": ")
        w = rest.split()
        if head not in out or len(w) < 2:
            continue
        if w[1] == "U":
            out[head][1].add(w[0])
        elif w[1] in "TDBRGSCV":  # global definitions (lowercase: local)
            out[head][0].add(w[0])
    return out


# Relocations of a call instruction (x86-64, AArch64).
CALL_RELOCS = ("R_X86_64_PLT32", "R_AARCH64_CALL26", "R_AARCH64_JUMP26")


def called_symbols(objs):
    """{object: the symbols its code calls} (not those whose address it
    takes), one readelf for all."""
    out = {o: set() for o in objs}
    obj, section = None, ""
    for line in run_tool(["readelf", "-rW"] + objs).splitlines():
        if line.startswith("File: "):
            obj = line[6:].strip()
        elif line.startswith("Relocation section"):
            section = line.split("'")[1] if "'" in line else ""
        else:
            w = line.split()
            if (obj in out and len(w) >= 5 and w[2] in CALL_RELOCS and
                    section.startswith(".rela.text")):
                out[obj].add(w[4].split("@")[0])
    return out


def symbol_edges(objects):
    """({(from, to)} uses, {(from, to)} calls): from's object refers to (or
    calls) a symbol that to's object defines."""
    for rel, obj in objects:
        if not os.path.isfile(obj):
            sys.exit("check_layers: %s is not built (%s)" % (rel, obj))
    objs = sorted({obj for _, obj in objects})
    syms, called = nm_symbols(objs), called_symbols(objs)
    definer, uses, calls = {}, defaultdict(set), defaultdict(set)
    for rel, obj in objects:
        defined, used = syms[obj]
        for s in defined:
            definer.setdefault(s, rel)
        uses[rel] |= used
        calls[rel] |= called[obj] & used

    def edges(refs):
        out = set()
        for rel, names in refs.items():
            for s in names:
                to = definer.get(s)
                if to and to != rel:
                    out.add((rel, to))
        return out

    return edges(uses), edges(calls)


def components(nodes, edges):
    """Strongly connected components of more than one node (Tarjan)."""
    succ = defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(max(10000, 4 * len(nodes)))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(argv):
    args = [a for a in argv if not a.startswith("--layers")]
    layers_file = None
    for a in argv:
        if a.startswith("--layers="):
            layers_file = a.split("=", 1)[1]
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    root = os.path.abspath(args[0])
    build = os.path.abspath(args[1]) if len(args) == 2 else None
    layers = Layers(layers_file or os.path.join(root, "tests/tools/layers.txt"))
    files = sources(root, layers)
    problems = []
    for rel in files:
        if layers.is_checked(rel) and layers.layer_of(rel) is None:
            problems.append("%s: in no layer (tests/tools/layers.txt)" % rel)

    # where quoted includes are searched: per file from its compile command
    search = {None: sorted({os.path.join(root, os.path.dirname(p.rstrip("/")) if not
                            p.endswith("/") else p) for p, _ in layers.prefixes})}
    objects = []
    if build:
        for src, obj, incs in compile_commands(build):
            rel = os.path.relpath(src, root)
            if rel in files:
                search[rel] = incs
                objects.append((rel, obj))
        if not objects:
            sys.exit("check_layers: the build %s compiles none of the layers' files" % build)
        search[None] = sorted({d for _, _, incs in compile_commands(build) for d in incs})
        # a header: the -I folders of a .c file beside it
        for rel in files:
            if rel not in search:
                beside = [f for f in files if f in search and
                          os.path.dirname(f) == os.path.dirname(rel)]
                if beside:
                    search[rel] = search[beside[0]]
    inc = include_edges(root, files, search)

    def check(edges, verb):
        for a, b in sorted(edges):
            la, lb = layers.layer_of(a), layers.layer_of(b)
            if la and lb and not layers.allows(la, lb):
                problems.append("%s (layer %s) %s %s (layer %s): not allowed by "
                                "tests/tools/layers.txt" % (a, la, verb, b, lb))

    check(inc, "includes")
    n_calls = 0
    if build:
        uses, calls = symbol_edges(objects)
        n_calls = len(uses)
        check(uses, "uses")
        inside = {f for f in files if layers.is_checked(f)}
        found = components(inside, {(a, b) for a, b in calls if a in inside and b in inside})
        allowed = {c for c, _ in layers.circles}
        for comp in found:
            if comp not in allowed:
                problems.append("circle of calls between files: %s (break it: move the shared "
                                "piece down or invert the call)" % " ".join(sorted(comp)))
        for c, where in layers.circles:
            if c not in found:
                problems.append("%s: the allowlisted circle %s no longer exists as listed: "
                                "remove it (or list the circle as it is now)" %
                                (where, " ".join(sorted(c))))
    for p in problems:
        print(p)
    print("check_layers: %d files, %d includes, %d uses between files, %d problem(s)" %
          (len(files), len(inc), n_calls, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
