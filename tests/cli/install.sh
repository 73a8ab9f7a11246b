#!/bin/bash
# Usage: install.sh PARALLAXC SRCDIR
#
# `cmake --install` into a temporary prefix, then the installed parallaxc
# (found nowhere near the build tree) compiles a model and the program runs:
# parallaxc must find its runtime relative to its own location.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 PARALLAXC SRCDIR" >&2
    exit 2
fi
build=$(cd "$(dirname "$1")/.." && pwd)
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() {
    if "$@" >"$tmp/log" 2>&1; then
        passed=$((passed + 1))
        echo "ok   $*"
    else
        failed=$((failed + 1))
        echo "FAIL $*: $(head -c 600 "$tmp/log")"
    fi
}
check cmake --install "$build" --prefix "$tmp/prefix"
model=/usr/share/libonnx-testdata/data/node/test_add
check "$tmp/prefix/bin/parallaxc" compile --infer "$model/model.onnx" -o "$tmp/prog"
mkdir -p "$tmp/in"
cp "$model/test_data_set_0/input_0.pb" "$tmp/in/x.pb"
cp "$model/test_data_set_0/input_1.pb" "$tmp/in/y.pb"
check "$tmp/prog" --data "$tmp/in" --out "$tmp/out"
check test -s "$tmp/out/sum.npy"
# A copy of the installed tree elsewhere still works (no absolute paths baked in).
mv "$tmp/prefix" "$tmp/moved"
check "$tmp/moved/bin/parallaxc" compile --infer "$model/model.onnx" -o "$tmp/prog2"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
