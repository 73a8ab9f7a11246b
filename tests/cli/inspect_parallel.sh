#!/bin/bash
# Usage: inspect_parallel.sh PARALLAXC SRCDIR
# `inspect --stage trained|parallel` on every example and --comm mode: the
# JSON document is checked by tests/tools/check_parallel.py (communication
# placement, one update per variable, buckets) and the text listing names the
# ai.parallax nodes. Exits non-zero on any failure or when no example exists.
. "$(dirname "$0")/lib.sh" "$@"
n=0
for model in "$src"/examples/*/model.onnx; do
    [ -f "$model" ] || continue
    name=$(basename "$(dirname "$model")")
    n=$((n + 1))
    if "$parallaxc" inspect "$model" --batch 4 --stage trained --graph >"$tmp/t.txt" 2>"$tmp/err" &&
        grep -q 'ai.parallax.\(Update\|RowUpdate\)' "$tmp/t.txt" &&
        ! grep -q 'AllReduce\|PSPull' "$tmp/t.txt"; then
        passed=$((passed + 1))
        echo "PASS $name trained: $(grep -c 'ai.parallax.\(Update\|RowUpdate\)' "$tmp/t.txt") update nodes"
    else
        failed=$((failed + 1))
        echo "FAIL $name trained"
        head -n 5 "$tmp/err"
    fi
    for comm in hybrid allreduce ps auto; do
        if "$parallaxc" inspect "$model" --batch 4 --ranks 2 --stage parallel --comm "$comm" \
            --format json -o "$tmp/p.json" 2>"$tmp/err" &&
            "$py" "$src/tests/tools/check_parallel.py" "$tmp/p.json" "$comm" >"$tmp/log" 2>&1; then
            passed=$((passed + 1))
            echo "PASS $name parallel --comm $comm: $(tail -n 1 "$tmp/log")"
        else
            failed=$((failed + 1))
            echo "FAIL $name parallel --comm $comm"
            head -n 10 "$tmp/err" "$tmp/log"
        fi
    done
done
[ "$n" -gt 0 ] || { echo "FAIL no examples found under $src/examples"; failed=$((failed + 1)); }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
