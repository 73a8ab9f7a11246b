#!/usr/bin/env python3
"""Every C file of the build, checked by clang-14 with the build's own flags.

usage: clang_syntax.py BUILD_DIR [CLANG]

The project builds with gcc; users build with clang too, and clang warns
where gcc does not (unknown pragmas, signed/unsigned enum comparisons,
variables set but not used). With -Werror those warnings stop a clang build,
so each compile command of BUILD_DIR/compile_commands.json is run again with
CLANG (default clang-14) and -fsyntax-only (clang's warnings are its front
end's: no code generation needed). Files compiled with -w (generated code)
are skipped. Fails when a file fails, and when no file was checked.

Starting clang costs about as much as checking a file, and the driver
starts a front end per file, so files whose commands differ only in the
file are checked a dozen at a time by one front end (clang -cc1, as the
driver's -### shows it): each file its own translation unit, as when
compiled alone. When such a run fails, each of its files is checked alone
through the driver, to name the ones that fail."""
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import compile_db


# Files per front-end run: few enough that the runs spread over the CPUs.
FILES_PER_RUN = 12


def syntax_command(entry, clang):
    """The entry's command for clang -fsyntax-only."""
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


def run(cmd, cwd):
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except OSError as err:
        return 127, str(err)
    return r.returncode, r.stderr


def front_end_prefix(cmd, path, cwd):
    """The front-end (clang -cc1) command the driver runs for cmd, without
    its input file path, or None when the driver does not show exactly one
    such command ending in path."""
    rc, err = run(cmd + ["-###"], cwd)
    jobs = [shlex.split(line) for line in err.splitlines() if '"-cc1"' in line]
    if rc != 0 or len(jobs) != 1 or jobs[0][-1] != path:
        return None
    return jobs[0][:-1]


def check(job):
    """[(file, status, stderr)] of the job's files that fail. Files whose
    commands differ only in the file go to one front-end run, a
    translation unit each; when it fails, each is checked alone."""
    cwd, cmds = job
    if len(cmds) > 1:
        prefix = front_end_prefix(cmds[0][1], cmds[0][0], cwd)
        if prefix is not None:
            rc, _ = run(prefix + [f for f, _ in cmds], cwd)
            if rc == 0:
                return []
    failed = []
    for f, cmd in cmds:
        rc, err = run(cmd, cwd)
        if rc != 0:
            failed.append((f, rc, err))
    return failed


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build, clang = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "clang-14"
    path = os.path.join(build, "compile_commands.json")
    entries = compile_db.load(build, "clang_syntax")
    groups = {}
    for e in entries:
        cmd = syntax_command(e, clang)
        f = e["file"]
        if "-w" in cmd or not f.endswith(".c"):
            continue
        # the command without its file, or (rare) the whole command alone
        key = tuple(a for a in cmd if a != f) if cmd.count(f) == 1 else tuple(cmd)
        groups.setdefault((e["directory"], key), []).append((f, cmd))
    todo = []
    for (d, _), cmds in groups.items():
        for i in range(0, len(cmds), FILES_PER_RUN):
            todo.append((d, cmds[i:i + FILES_PER_RUN]))
    checked = sum(len(cmds) for _, cmds in todo)
    if not checked:
        sys.exit("clang_syntax: no C file to check in %s" % path)

    failed = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for failures in pool.map(check, todo):
            for f, rc, err in failures:
                failed += 1
                print("FAIL %s (status %d):\n%s" % (f, rc, err.strip()[:2000]))
    print("%d of %d files clean under %s -Wall -Wextra -Werror" %
          (checked - failed, checked, clang))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
