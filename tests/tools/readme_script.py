#!/usr/bin/python3
"""Turns the README's code blocks into one bash script that runs them in order.

Usage: readme_script.py README.md > script.sh

  ```sh       commands, run as written (set -euo pipefail)
  ```python   a file the reader saves: its first line must be `# NAME.py`;
              the script writes it to NAME.py in the current folder
  ```text     output shown to the reader: not run

Any other fence (or none) is an error, so that no command in the README goes
unrun. Two commands are the project's entry points and are run as they are
elsewhere; each must appear exactly once:
  bash scripts/test.sh   CI's entry point (.ci/run): the suite itself
  bash scripts/demo.sh   run here with the compiler under test
                         ($PX_SRC/scripts/demo.sh "$PX_PARALLAXC"), which
                         skips the install and the build of a tested build
"""
import re
import sys

ENTRY_POINTS = {
    "bash scripts/test.sh": None,
    "bash scripts/demo.sh": 'bash "$PX_SRC/scripts/demo.sh" "$PX_PARALLAXC"',
}


def blocks(text):
    """(line number, info string, lines) of every fenced block."""
    out, current = [], None
    for n, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^```(.*)$", line)
        if current is None and fence:
            current = (n, fence.group(1).strip(), [])
        elif current is not None and line.startswith("```"):
            if line.strip() != "```":
                sys.exit("README line %d: a fence inside a block" % n)
            out.append(current)
            current = None
        elif current is not None:
            current[2].append(line)
    if current is not None:
        sys.exit("README line %d: block never closed" % current[0])
    return out


def main():
    text = open(sys.argv[1]).read()
    script = ["set -euo pipefail"]
    seen = {k: 0 for k in ENTRY_POINTS}
    for line_no, info, lines in blocks(text):
        if info == "text":
            continue
        if info == "python":
            m = re.match(r"^# ([\w.-]+\.py)$", lines[0] if lines else "")
            if not m:
                sys.exit("README line %d: a python block must start with '# NAME.py'" % line_no)
            script.append("echo '== README line %d: writes %s'" % (line_no, m.group(1)))
            script.append("cat > %s <<'PX_README_EOF'" % m.group(1))
            script.extend(lines)
            script.append("PX_README_EOF")
            continue
        if info != "sh":
            sys.exit("README line %d: block of kind %r: use sh, python or text" % (line_no, info))
        script.append("echo '== README line %d'" % line_no)
        for line in lines:
            command = line.split("#")[0].strip()
            if command in ENTRY_POINTS:
                seen[command] += 1
                if ENTRY_POINTS[command]:
                    script.append(ENTRY_POINTS[command])
                continue
            script.append(line)
    for command, count in seen.items():
        if count != 1:
            sys.exit("README: %r appears %d times (expected once: it is an entry point)"
                     % (command, count))
    print("\n".join(script))


if __name__ == "__main__":
    main()
