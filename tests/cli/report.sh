#!/bin/bash
# Usage: report.sh PARALLAXC SRCDIR
#
# `parallaxc report`: the recommender example trained on 2 ranks with
# --run-dir, validation, an lr schedule and a trace; its report rendered by headless Chromium (Debian's
# chromium package, no network, a fresh profile). tests/tools/check_report.py
# checks that the page is self-contained, that every chart draws as many
# values as the run's files hold (counted independently through
# parallax.read_run), that every chart has data, and that the screenshot is
# not blank. The page and
# the screenshot are kept in BUILD/artifacts/ (report.html, report.png).
# Then the command's errors: usage, a missing or empty run directory, a
# malformed file, -o naming a directory or one of the run's files (left unchanged).
. "$(dirname "$0")/lib.sh" "$@"
build=$(cd "$(dirname "$parallaxc")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ex=$src/examples/recommender
run=$tmp/run
mkdir -p "$build/artifacts"
check "compile the recommender (adam)" \
    "$parallaxc" compile "$ex/model.onnx" -o "$tmp/train" --batch 8 --optimizer adam --lr 0.01
check "train 2 ranks x 60 steps: --run-dir, validation, a schedule, a trace" \
    mpirun -np 2 "$tmp/train" --data "$ex/data" --steps 60 --log-every 0 --eval-data "$ex/data" \
    --eval-every 20 --lr-schedule cosine:60 --lr-warmup 10 --run-dir "$run" \
    --trace "$run/trace.json"
check "parallaxc report RUN_DIR -o report.html" \
    "$parallaxc" report "$run" -o "$build/artifacts/report.html"
# Chromium as a test runs it: no sandbox (root), no GPU, nothing fetched or
# synced, a profile of its own that is removed with $tmp.
if timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$tmp/profile" --window-size=1300,2400 \
        --screenshot="$build/artifacts/report.png" "file://$build/artifacts/report.html" \
        >"$tmp/chromium.log" 2>&1 && [ -s "$build/artifacts/report.png" ]; then
    pass "headless Chromium renders it ($build/artifacts/report.png)"
else
    fail "headless Chromium: $(tail -n 5 "$tmp/chromium.log")"
fi
if PYTHONPATH="$src/python" "$py" "$src/tests/tools/check_report.py" \
        "$build/artifacts/report.html" "$run" --screenshot "$build/artifacts/report.png" --all-charts \
        >"$tmp/check" 2>&1; then
    grep '^ok' "$tmp/check"
    pass "the page against the run's files"
else
    cat "$tmp/check"
    fail "the page against the run's files"
fi

# A layout's own exchanges: the example MLP under --tp 2 --pp 2 on 4 ranks
# moves the group sums of its split layers and the activations between its
# stages besides the data-parallel bytes. compile.json predicts what --stats
# measures, the mean over the ranks exactly (inspect's prediction for the
# layout), and the report compares the two.
mlp=$src/examples/mlp
layout=(--batch 8 --tp 2 --pp 2 --micro-batches 2 --optimizer momentum --lr 0.05)
if "$parallaxc" compile "$mlp/model.onnx" -o "$tmp/layout" "${layout[@]}" >"$tmp/layout.log" 2>&1 &&
    "$parallaxc" inspect "$mlp/model.onnx" --ranks 4 --stage parallel --format json \
        "${layout[@]}" -o "$tmp/layout.json" 2>>"$tmp/layout.log" &&
    timeout 120 mpirun -np 4 "$tmp/layout" --data "$mlp/data" --steps 3 --log-every 0 \
        --run-dir "$tmp/layout.run" >>"$tmp/layout.log" 2>&1 &&
    "$parallaxc" report "$tmp/layout.run" -o "$tmp/layout.html" >>"$tmp/layout.log" 2>&1; then
    check "--tp 2 --pp 2: the bytes predicted for the layout, measured and reported" "$py" - \
        "$tmp/layout.run" "$tmp/layout.json" "$tmp/layout.html" <<'PY'
import json, os, sys
run, insp, html = sys.argv[1], json.load(open(sys.argv[2])), open(sys.argv[3]).read()
comp = json.load(open(os.path.join(run, "compile.json")))
ranks = json.load(open(os.path.join(run, "stats.json")))["ranks"]
moved = [sum(r["bytes_sent_per_step"].values()) + sum(r["bytes_received_per_step"].values())
         for r in ranks]
entry = [p for p in comp["predicted_bytes_per_step"] if p["ranks"] == 4][0]
by_stage = [s["hybrid"] for s in entry["by_stage"]]
print("per rank measured %s; predicted by stage %s, mean %d" % (moved, by_stage, entry["hybrid"]))
assert [by_stage[(r // 2) % 2] for r in range(4)] == moved, (moved, by_stage)
assert entry["hybrid"] * 4 == sum(moved), (entry, moved)
assert insp["predicted_layout_bytes_per_step"]["hybrid"] == entry["hybrid"], insp
assert [s["hybrid"] for s in insp["predicted_layout_bytes_per_step_by_stage"]] == by_stage
assert [r["other"] > 0 for r in (x["bytes_sent_per_step"] for x in ranks)] == [True] * 4
kb = "%.3g kB" % (entry["hybrid"] / 1000)
want = "predicted %s (compile.json, hybrid), measured %s." % (kb, kb)
assert want in html, (want, [l for l in html.splitlines() if "compile.json" in l])
PY
else
    fail "--tp 2 --pp 2 report: $(tail -c 600 "$tmp/layout.log")"
fi

# Errors: each names what is wrong, with parallaxc's statuses.
expect() { # LABEL STATUS TEXT COMMAND...: exits STATUS, stderr contains TEXT
    local label=$1 status=$2 text=$3
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" -eq "$status" ] && grep -qF -- "$text" "$tmp/err"; then
        pass "$label"
    else
        fail "$label: status $got, stderr: $(head -c 300 "$tmp/err")"
    fi
}
mkdir -p "$tmp/empty" "$tmp/bad" "$tmp/outdir"
echo '{"steps": 3, "ranks": [' >"$tmp/bad/stats.json"
expect "no run directory: usage" 2 "no run directory given" "$parallaxc" report
expect "an unknown option: usage" 2 "unknown option '--bogus'" "$parallaxc" report "$run" --bogus
expect "a missing run directory names it" 2 "cannot open run directory '$tmp/nope'" \
    "$parallaxc" report "$tmp/nope"
expect "a folder without run files says how to make them" 1 "--run-dir" \
    "$parallaxc" report "$tmp/empty"
expect "a malformed stats.json names the file and the place" 1 \
    "stats.json: line 2, column 1: expected a value, found the end of the file" \
    "$parallaxc" report "$tmp/bad"
expect "-o naming a directory" 1 "outdir is a folder" "$parallaxc" report "$run" -o "$tmp/outdir"
cp "$run/stats.json" "$tmp/stats.before"
expect "-o naming one of the run's files" 1 "is one of the inputs (the run's stats.json" \
    "$parallaxc" report "$run" -o "$run/stats.json"
check "the run's file is unchanged" cmp "$run/stats.json" "$tmp/stats.before"
if [ -z "$(ls -A "$tmp/outdir")" ] && ! ls "$tmp"/outdir.tmp.* >/dev/null 2>&1; then
    pass "a failed report leaves no file behind"
else
    fail "a failed report left files: $(ls -A "$tmp/outdir" "$tmp")"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
