#!/bin/bash
# Usage: python_helper.sh PARALLAXC SRCDIR
#
# The parallax Python package (python/parallax): export, load_state_dict and
# read_run against PyTorch and the compiled program
# (tests/tools/python_helper_test.py), and `pip install ./python` into a
# virtual environment that sees Debian's torch, offline (a copy of the
# package, so that the build leaves nothing in the source tree).
. "$(dirname "$0")/lib.sh" "$@"
mkdir -p "$tmp/work"
if PYTHONPATH="$src/python" "$py" -W ignore "$src/tests/tools/python_helper_test.py" \
        "$parallaxc" "$tmp/work" >"$tmp/out" 2>&1; then
    grep '^ok' "$tmp/out"
    pass "python helper: $(grep -c '^ok' "$tmp/out") checks"
else
    cat "$tmp/out"
    fail "python helper"
fi
cp -r "$src/python" "$tmp/pkg"
rm -rf "$tmp/pkg/build" "$tmp/pkg"/*.egg-info
check "python3 -m venv --system-site-packages" "$py" -m venv --system-site-packages "$tmp/venv"
check "pip install ./python (offline)" "$tmp/venv/bin/pip" install --no-index "$tmp/pkg"
version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$src/python/parallax/__init__.py")
check "the installed package imports, version $version" \
    bash -c "cd '$tmp' && '$tmp/venv/bin/python' -c 'import parallax, sys; \
sys.exit(0 if parallax.__version__ == \"$version\" and \"venv\" in parallax.__file__ else 1)'"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
