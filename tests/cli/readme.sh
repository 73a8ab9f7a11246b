#!/bin/bash
# Usage: readme.sh PARALLAXC SRCDIR
#
# The README, as a newcomer follows it: at most 290 lines, its links (and
# those of docs/) lead to files, and every code block runs in order
# (tests/tools/readme_script.py: sh blocks as commands, python blocks as the
# files they name), in a fresh home, from a folder laid out like a checkout
# whose build is the one under test; python3 is Debian's, as on a fresh
# Debian 12. Then the quickstart's results are checked: the program trained,
# the module reloaded by name is accurate, and the served model (--save-infer)
# takes the tokens alone and its outputs, from the inference program and
# from ONNX Runtime for Node.js (tests/tools/ort_eval.js), equal the reloaded
# module's eval-mode outputs in PyTorch.
. "$(dirname "$0")/lib.sh" "$@"
build=$(cd "$(dirname "$parallaxc")/.." && pwd)
mkdir -p "$tmp/checkout" "$tmp/home" "$tmp/bin"
ln -s "$build" "$tmp/checkout/build"
ln -s "$src/python" "$tmp/checkout/python"
ln -s "$py" "$tmp/bin/python3"
if ! "$py" "$src/tests/tools/readme_script.py" "$src/README.md" >"$tmp/readme.sh" 2>"$tmp/err"; then
    fail "README code blocks: $(cat "$tmp/err")"
    echo "$passed passed, $failed failed"
    exit 1
fi
pass "README code blocks extracted ($(grep -c '^echo .== README' "$tmp/readme.sh") blocks)"
# A user's page: short, and every link inside the repository leads somewhere.
lines=$(wc -l <"$src/README.md")
if [ "$lines" -le 290 ]; then pass "README is $lines lines (<= 290)"; else fail "README is $lines lines (> 290)"; fi
missing=$(for page in "$src/README.md" "$src"/docs/*.md; do
    grep -o '](\([^)#:]*\))' "$page" | sed 's/^](//; s/)$//' | while read -r link; do
        [ -e "$(dirname "$page")/$link" ] || echo "${page#"$src"/} -> $link"
    done
done)
if [ -z "$missing" ]; then
    pass "every link of the README and docs/ leads to a file"
else
    fail "links to missing files: $missing"
fi
# The quickstart runs mpirun as root here; the README says to add
# --allow-run-as-root, which these variables stand for.
if (cd "$tmp/checkout" && env HOME="$tmp/home" PATH="$tmp/bin:$PATH" PX_SRC="$src" \
        PX_PARALLAXC="$parallaxc" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        OMPI_MCA_rmaps_base_oversubscribe=1 bash "$tmp/readme.sh") >"$tmp/out" 2>&1; then
    pass "every README command ran"
else
    fail "a README command failed; the end of its output:"
    tail -n 30 "$tmp/out"
fi
qs=$tmp/home/first-model
if node_path=$(bash "$src/tests/tools/ort_node_path.sh" 2>"$tmp/ort.log") &&
    "$py" -c 'import json, sys, numpy as np
t = np.load(sys.argv[1])
json.dump({"tokens": {"type": "int64", "dims": list(t.shape), "data": t.ravel().tolist()}},
          open(sys.argv[2], "w"))' "$qs/val/tokens.npy" "$tmp/ort_in.json" 2>>"$tmp/ort.log" &&
    NODE_PATH=$node_path node "$src/tests/tools/ort_eval.js" "$qs/served.onnx" "$tmp/ort_in.json" \
        "$tmp/ort_out.json" 2>>"$tmp/ort.log"; then
    pass "ONNX Runtime runs the quickstart's served.onnx"
else
    fail "ONNX Runtime on served.onnx: $(tail -c 600 "$tmp/ort.log")"
fi
if (cd "$qs" && PYTHONPATH="$src/python" "$py" \
        "$src/tests/tools/check_quickstart.py" --ort "$tmp/ort_out.json") >"$tmp/check" 2>&1; then
    pass "$(tail -n 1 "$tmp/check")"
else
    fail "quickstart results: $(tail -n 5 "$tmp/check")"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
