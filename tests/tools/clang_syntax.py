#!/usr/bin/env python3
"""Every C file of the build, checked by clang-14 with the build's own flags.

usage: clang_syntax.py BUILD_DIR [CLANG]

The project builds with gcc; users build with clang too, and clang warns
where gcc does not (unknown pragmas, signed/unsigned enum comparisons,
variables set but not used). With -Werror those warnings stop a clang build,
so each compile command of BUILD_DIR/compile_commands.json is run again with
CLANG (default clang-14) and -fsyntax-only (clang's warnings are its front
end's: no code generation needed). Files compiled with -w (generated code)
are skipped. Fails when a file fails, and when no file was checked."""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import compile_db


def syntax_command(entry, clang):
    args = compile_db.arguments(entry)
    out = [clang]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a == "-c":
            continue
        out.append(a)
    return out + ["-fsyntax-only"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build, clang = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "clang-14"
    path = os.path.join(build, "compile_commands.json")
    entries = compile_db.load(build, "clang_syntax")
    todo = []
    for e in entries:
        cmd = syntax_command(e, clang)
        if "-w" in cmd or not e["file"].endswith(".c"):
            continue
        todo.append((e["file"], e["directory"], cmd))
    if not todo:
        sys.exit("clang_syntax: no C file to check in %s" % path)

    def check(job):
        f, d, cmd = job
        try:
            r = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
        except OSError as err:
            return f, 127, str(err)
        return f, r.returncode, r.stderr

    failed = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for f, rc, err in pool.map(check, todo):
            if rc != 0:
                failed += 1
                print("FAIL %s (status %d):\n%s" % (f, rc, err.strip()[:2000]))
    print("%d of %d files clean under %s -Wall -Wextra -Werror" %
          (len(todo) - failed, len(todo), clang))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
