#!/usr/bin/env bash
# Runs the ONNX checker on models written by the ONNX exporter: every ONNX
# backend test model that imports, plus the unit-test graphs (every dtype and
# attribute kind, external data). The exports come from the Criterion test
# test_onnx_export run with PX_EXPORT_DIR set (no CLI needed).
#
# Usage: bash roundtrip_checker.sh <path-to-parallaxc> <source-dir>
# The build folder is the parent of parallaxc's folder.
#
# A checker failure fails this script unless either
#  - the model is listed in tests/tools/checker_allowlist.txt ("suite/test")
#    AND its original also fails the checker (verified here), or
#  - the original has sequence/optional/map typed graph inputs or outputs,
#    which the IR cannot represent (px_value holds tensor types only), and the
#    failure is exactly the resulting missing type (verified here).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 <path-to-parallaxc> <source-dir>" >&2
    exit 2
fi
build=$(dirname "$(dirname "$1")")
src=$2
test_bin=$build/tests/test_onnx_export
testdata=/usr/share/libonnx-testdata/data
allowlist=$src/tests/tools/checker_allowlist.txt
check=(/usr/bin/python3 "$src/tests/tools/onnx_check.py")

[ -x "$test_bin" ] || { echo "error: $test_bin is not built" >&2; exit 1; }
"${check[@]}" --quiet "$src/tests/tools/onnx_check.py" >/dev/null 2>&1 && {
    echo "error: onnx_check.py accepted a Python file as a model: checker broken" >&2
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/out"

if ! PX_EXPORT_DIR=$tmp/out "$test_bin" --jobs=1 >"$tmp/export.log" 2>&1; then
    tail -n 40 "$tmp/export.log"
    echo "error: $test_bin failed, so the exports are incomplete" >&2
    exit 1
fi
grep -h "round-tripped" "$tmp/export.log" || true

shopt -s nullglob
models=("$tmp"/out/*.onnx)
if [ ${#models[@]} -lt 500 ]; then
    echo "error: only ${#models[@]} exported models in $tmp/out (expected the backend test set)" >&2
    exit 1
fi

set +e
"${check[@]}" --quiet "${models[@]}" >"$tmp/check.txt" 2>"$tmp/check.err"
rc=$?
set -e
if [ $rc -gt 1 ] || ! grep -q "^checked ${#models[@]} models" "$tmp/check.err"; then
    cat "$tmp/check.err" >&2
    echo "error: onnx_check.py did not run (exit $rc)" >&2
    exit 1
fi

allowed() { [ -f "$allowlist" ] && grep -v '^#' "$allowlist" | grep -qxF "$1"; }

failed=0 allowlisted=0 limitation=0
while IFS= read -r line; do
    file=${line#FAIL }
    file=${file%%: *}
    reason=${line#FAIL "$file": }
    name=$(basename "$file" .onnx)
    suite=${name%%__*}
    test=${name#*__}
    orig=$testdata/$suite/$test/model.onnx
    if [ ! -f "$orig" ]; then
        echo "FAIL $name (no original to compare with): $reason"
        failed=$((failed + 1))
    elif allowed "$suite/$test"; then
        if "${check[@]}" --quiet "$orig" >/dev/null 2>&1; then
            echo "FAIL $suite/$test is allowlisted but its original passes the checker: $reason"
            failed=$((failed + 1))
        else
            allowlisted=$((allowlisted + 1))
        fi
    elif [ "$reason" = "ValidationError: Field 'type' of 'value_info' is required but missing." ] &&
        "${check[@]}" --non-tensor-io "$orig" >/dev/null 2>&1; then
        limitation=$((limitation + 1))
        echo "note: $suite/$test: non-tensor graph I/O is not representable in the IR"
    else
        echo "FAIL $suite/$test: $reason"
        failed=$((failed + 1))
    fi
done < <(grep '^FAIL ' "$tmp/check.txt" || true)

echo "checked ${#models[@]} exported models: $failed failed, $allowlisted allowlisted" \
    "(original fails too), $limitation with non-tensor graph I/O"
[ $failed -eq 0 ]
