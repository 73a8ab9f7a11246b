"""The build's compile commands (BUILD_DIR/compile_commands.json), shared by
the tools that rerun or read them (clang_syntax.py, check_layers.py)."""
import json
import os
import shlex
import sys


def load(build, tool):
    """The entries of build's compile_commands.json; ends `tool` with a
    message when it cannot be read."""
    path = os.path.join(build, "compile_commands.json")
    try:
        return json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit("%s: cannot read %s: %s" % (tool, path, e))


def arguments(entry):
    """The compiler's argument list of one entry."""
    return shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
