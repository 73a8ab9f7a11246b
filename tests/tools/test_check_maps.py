#!/usr/bin/python3
"""The test of check_maps.py: on small trees made here (no git), it passes
a tree whose source folders all have short READMEs naming existing paths,
and fails, naming the problem, on a folder without a README, a README of
41 lines, a README or docs/architecture.md naming a missing path, and a
document naming a communication-runtime path that moved.

usage: test_check_maps.py SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_maps.py")


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def good_tree(root):
    write(root, "lib/a.c", "int a;\n")
    write(root, "lib/README.md", "# lib\n\nStart reading: `a.c`.\n")
    write(root, "lib/sub/b.h", "\n")
    write(root, "lib/sub/README.md", "# sub\n\nNext to `../a.c`; see `lib/a.c`.\n")
    write(root, "docs/architecture.md", "# A\n\n`lib/sub/b.h` and `lib/`.\n")
    write(root, "docs/other.md", "The comm runtime is elsewhere.\n")


def run(root):
    p = subprocess.run([sys.executable, CHECK, root, "--min-folders", "1"], capture_output=True,
                       text=True)
    return p.returncode, p.stdout + p.stderr


CASES = [
    ("no README", lambda r: os.remove(os.path.join(r, "lib/sub/README.md")),
     "lib/sub/: a source folder without a README.md"),
    ("41 lines", lambda r: write(r, "lib/README.md", "x\n" * 41), "41 lines, at most 40"),
    ("README names a missing file", lambda r: write(r, "lib/README.md", "`gone.c`\n"),
     "names `gone.c`, which does not exist"),
    ("architecture names a missing file",
     lambda r: write(r, "docs/architecture.md", "`lib/nope.h`\n"), "names `lib/nope.h`"),
    ("a stale runtime/comm path",
     lambda r: write(r, "docs/other.md", "see `comm/ps_pull.c`\n"), "names comm/ps_pull.c"),
]


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as root:
        good_tree(root)
        rc, out = run(root)
        if rc != 0:
            print("FAIL: the good tree was refused: " + out)
            failures += 1
    for name, damage, expect in CASES:
        with tempfile.TemporaryDirectory() as root:
            good_tree(root)
            damage(root)
            rc, out = run(root)
            if rc != 1 or expect not in out:
                print("FAIL: %s: want exit 1 and %r, got %d: %s" % (name, expect, rc, out))
                failures += 1
            else:
                print("ok: %s" % name)
    print("%d of %d cases failed" % (failures, len(CASES) + 1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
