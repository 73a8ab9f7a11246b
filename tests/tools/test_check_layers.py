#!/usr/bin/python3
"""Tests of the layering check (tests/tools/check_layers.py): that it fails
on what it exists to catch, and passes otherwise.

usage: test_check_layers.py SOURCE_DIR

1. A small fixture of two layers (lib/low below lib/high), compiled here
   with cc into a build folder with its own compile_commands.json: clean it
   passes; it fails on an upward #include, on an upward call, on a new
   circle of calls, and on an allowlisted circle that no longer exists; an
   allowlisted circle passes, and a table of function pointers is no
   circle.
2. A copy of the real tree's sources with the real layers file: it passes
   as it is, and fails on an include added against runtime/comm's layers
   (transport including sched), naming the file.

Prints one line per case and 'N passed, N failed'; exits 1 on a failure."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_layers.py")
results = []

LAYERS = """layer low  lib/low/
layer high lib/high/ : low
check lib/
"""
BASE = {
    "lib/low/low.h": "int low_a(int x);\nint low_b(int x);\n",
    "lib/low/a.c": '#include "low.h"\nint low_a(int x) { return x + 1; }\n',
    "lib/low/b.c": '#include "low.h"\nint low_b(int x) { return 2 * x; }\n',
    "lib/high/high.h": "int high_f(int x);\n",
    "lib/high/h.c": '#include "high.h"\n#include "low.h"\n'
                    'int high_f(int x) { return low_a(low_b(x)); }\n',
}


def fixture(work, files, layers=LAYERS):
    """Writes, compiles and returns (root, build) of a fixture tree."""
    root, build = os.path.join(work, "src"), os.path.join(work, "build")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(build)
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    with open(os.path.join(root, "layers.txt"), "w") as f:
        f.write(layers)
    commands = []
    incs = ["-I" + os.path.join(root, "lib/low"), "-I" + os.path.join(root, "lib/high"),
            "-I" + os.path.join(root, "lib")]
    for rel in sorted(files):
        if not rel.endswith(".c"):
            continue
        obj = os.path.join(build, rel.replace("/", "_") + ".o")
        cmd = ["cc", "-O1", "-fno-inline"] + incs + ["-o", obj, "-c", os.path.join(root, rel)]
        subprocess.run(cmd, check=True)
        commands.append({"directory": build, "file": os.path.join(root, rel),
                         "command": " ".join(cmd)})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(commands, f)
    return root, build


def run_check(root, build=None, layers=None):
    cmd = [sys.executable, CHECK, root] + ([build] if build else [])
    cmd.append("--layers=" + (layers or os.path.join(root, "layers.txt")))
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def expect(name, rc_out, fails, needle=None):
    rc, out = rc_out
    ok = (rc != 0) == fails and (needle is None or needle in out)
    results.append(ok)
    print("%s %s%s" % ("ok  " if ok else "FAIL", name,
                       "" if ok else "\n    exit %d, output:\n%s" % (rc, out)))


def changed(**edits):
    files = dict(BASE)
    files.update(edits)
    return files


def fixture_cases(work):
    expect("clean fixture passes", run_check(*fixture(work, BASE)), fails=False)
    up_include = changed(**{"lib/low/a.c": '#include "low.h"\n#include "high/high.h"\n'
                                           'int low_a(int x) { return x + 1; }\n'})
    expect("upward #include fails", run_check(*fixture(work, up_include)), fails=True,
           needle="lib/low/a.c (layer low) includes lib/high/high.h (layer high)")
    up_call = changed(**{"lib/low/a.c": '#include "low.h"\nint high_f(int x);\n'
                                        'int low_a(int x) { return high_f(x) + 1; }\n'})
    expect("upward call fails", run_check(*fixture(work, up_call)), fails=True,
           needle="lib/low/a.c (layer low) uses lib/high/h.c (layer high)")
    circle = changed(**{
        "lib/low/a.c": '#include "low.h"\nint low_a(int x) { return x > 0 ? low_b(x - 1) : 0; }\n',
        "lib/low/b.c": '#include "low.h"\nint low_b(int x) { return x > 0 ? low_a(x - 1) : 1; }\n'})
    expect("new circle fails", run_check(*fixture(work, circle)), fails=True,
           needle="circle of calls between files: lib/low/a.c lib/low/b.c")
    allow = LAYERS + "circle lib/low/a.c lib/low/b.c\n"
    expect("allowlisted circle passes", run_check(*fixture(work, circle, allow)), fails=False)
    expect("stale allowlisted circle fails", run_check(*fixture(work, BASE, allow)), fails=True,
           needle="no longer exists")
    table = changed(**{
        "lib/low/a.c": '#include "low.h"\nint (*const low_table[])(int) = {low_b};\n'
                       'int low_a(int x) { return x + 1; }\n',
        "lib/low/b.c": '#include "low.h"\nint low_b(int x) { return low_a(x); }\n'})
    expect("a table of function pointers is no circle", run_check(*fixture(work, table)),
           fails=False)


def tree_cases(src, work):
    copy = os.path.join(work, "tree")
    for d in ("common", "ir", "passes", "compiler", "runtime"):
        shutil.copytree(os.path.join(src, d), os.path.join(copy, d))
    layers = os.path.join(src, "tests/tools/layers.txt")
    expect("the real tree's includes pass", run_check(copy, layers=layers), fails=False)
    victim = os.path.join(copy, "runtime/comm/transport/p2p.c")
    text = open(victim).read()
    with open(victim, "w") as f:
        f.write(text.replace('#include "transport.h"',
                             '#include "transport.h"\n#include "comm/sched/sched.h"', 1))
    expect("an upward include in runtime/comm fails", run_check(copy, layers=layers),
           fails=True, needle="runtime/comm/transport/p2p.c (layer transport) includes "
                              "runtime/comm/sched/sched.h (layer sched)")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        fixture_cases(os.path.join(work, "fixture"))
        tree_cases(src, work)
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
