#!/usr/bin/python3
"""The maps of the source tree stay true:
  - every source folder (one that holds a .c, .h, .inc, .def, .py, .sh or
    .cmake file or a CMakeLists.txt; the root aside) has a README.md of at
    most 40 lines;
  - every path a folder README or docs/architecture.md names in backticks
    (a word with a / or a file extension) exists, relative to that file's
    folder or a folder above it;
  - no document under docs/ names a path of the communication runtime
    (runtime/comm/X, or comm/X) that does not exist: its files moved into
    layer folders.

usage: check_maps.py SOURCE_DIR [--min-folders N]
(fails when fewer than N source folders are found, 20 by default: a run
that checked nothing)
Prints each problem and exits 1 when there is one, 0 with a summary
otherwise."""
import os
import re
import subprocess
import sys

MAX_LINES = 40
SOURCE_EXT = (".c", ".h", ".inc", ".def", ".py", ".sh", ".cmake")
# A backticked word that names a file or folder: no spaces, no glob or
# placeholder characters, and a / or a known extension.
PATH_WORD = re.compile(r"`([A-Za-z0-9_.][A-Za-z0-9_./-]*)`")
FILE_EXT = re.compile(r"\.(c|h|inc|def|py|sh|cmake|txt|md|dot|svg|png|json|onnx)$")


def tracked_files(root):
    """The repository's files: git's list in a checkout, else a walk that
    skips build folders and hidden ones."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                             check=True).stdout
        files = [f for f in out.splitlines() if os.path.exists(os.path.join(root, f))]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
        rel = os.path.relpath(dirpath, root)
        files += [os.path.normpath(os.path.join(rel, f)) for f in filenames]
    return files


def source_folders(files):
    folders = set()
    for f in files:
        d, name = os.path.split(f)
        if d and not d.startswith(".") and (name.endswith(SOURCE_EXT) or name == "CMakeLists.txt"):
            folders.add(d)
    return sorted(folders)


def named_paths(text):
    for m in PATH_WORD.finditer(text):
        word = m.group(1)
        if "/" in word or FILE_EXT.search(word):
            yield word


def missing_paths(root, doc):
    """The backticked paths of doc (relative to root) that exist neither
    under doc's folder nor under any folder above it (a sibling layer
    `transport/`, the root's `docs/`)."""
    bases, d = [], os.path.dirname(doc)
    while d:
        bases.append(d)
        d = os.path.dirname(d)
    bases.append("")
    with open(os.path.join(root, doc), encoding="utf-8") as f:
        text = f.read()
    return [p for p in sorted(set(named_paths(text)))
            if not any(os.path.exists(os.path.join(root, b, p)) for b in bases)]


def main():
    args = sys.argv[1:]
    min_folders = 20
    if len(args) == 3 and args[1] == "--min-folders" and args[2].isdigit():
        min_folders = int(args[2])
        args = args[:1]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = args[0]
    files = tracked_files(root)
    problems = []
    folders = source_folders(files)
    for d in folders:
        readme = os.path.join(d, "README.md")
        path = os.path.join(root, readme)
        if not os.path.isfile(path):
            problems.append("%s/: a source folder without a README.md (what it does, its public "
                            "headers, what it may include, where to start reading)" % d)
            continue
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            problems.append("%s: %d lines, at most %d" % (readme, n, MAX_LINES))
        problems += ["%s: names `%s`, which does not exist" % (readme, p)
                     for p in missing_paths(root, readme)]
    arch = os.path.join("docs", "architecture.md")
    if not os.path.isfile(os.path.join(root, arch)):
        problems.append("%s is missing" % arch)
    else:
        problems += ["%s: names `%s`, which does not exist" % (arch, p)
                     for p in missing_paths(root, arch)]
    for f in files:
        if f.startswith("docs/") and f.endswith(".md") and f != arch:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                text = fh.read()
            # runtime/comm/X or, in the runtime's own documents, comm/X
            for p in sorted(set(re.findall(r"(?<![\w/])(?:runtime/)?comm/[\w./]*\w", text))):
                full = p if p.startswith("runtime/") else "runtime/" + p
                if not os.path.exists(os.path.join(root, full)):
                    problems.append("%s: names %s, which does not exist (the communication "
                                    "runtime's files moved: docs/architecture.md)" % (f, p))
    for p in problems:
        print("check_maps: " + p)
    if problems:
        print("check_maps: %d problems" % len(problems))
        return 1
    if len(folders) < min_folders:
        print("check_maps: only %d source folders found under %s" % (len(folders), root))
        return 1
    print("check_maps: %d source folders, each with a README.md of at most %d lines; the "
          "paths they and docs/architecture.md name exist" % (len(folders), MAX_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
