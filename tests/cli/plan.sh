#!/bin/bash
# Usage: plan.sh PARALLAXC SRCDIR
#
# `parallaxc plan` (docs/relaxed_sync.md):
# - its bytes per step are what a running job counts (--stats, 2 ranks, MLP:
#   dense, so the counts are exact) for --wire fp32, --wire bf16 and
#   --sync-every 4 (local steps move nothing, every fourth the replicas;
#   steps 5..12 are counted, so two averages, and the run ends on one);
# - its communication seconds and bytes are inspect's (the same cost
#   model, recommender at 4 ranks), and every samples/s is
#   ranks x batch / (compute + communication);
# - --data replays the rows each rank reads and pulls per step from the
#   data: exact and --staleness 2 against what a running job pulls (LM1B-
#   like, 2 ranks);
# - --data calibrates by running the compiled program here, caches the
#   result, and a second plan reads it from the cache;
# - --svg writes an SVG that parses; the text table names a recommendation;
# - bad values are refused naming the flag (exit 2).
. "$(dirname "$0")/lib.sh" "$@"
mlp=$src/examples/mlp
rec=$src/examples/recommender
export XDG_CACHE_HOME=$tmp/cache

# ---- bytes: plan against a running job
check "compile mlp" "$parallaxc" compile "$mlp/model.onnx" -o "$tmp/mlp" --batch 8
check "plan mlp, 2 hosts" "$parallaxc" plan "$mlp/model.onnx" --batch 8 --hosts 2 --link 1gbit \
    --cores 1 --step-seconds 0.01 --format json
"$parallaxc" plan "$mlp/model.onnx" --batch 8 --hosts 2 --link 1gbit --cores 1 --step-seconds 0.01 \
    --format json >"$tmp/plan.json" 2>"$tmp/err" || fail "plan json: $(cat "$tmp/err")"
for mode in "fp32" "bf16" "sync4"; do
    flags=()
    name=hybrid
    case $mode in
    bf16) flags=(--wire bf16) name="hybrid --wire bf16" ;;
    sync4) flags=(--sync-every 4) name="hybrid --sync-every 4" ;;
    esac
    if ! timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/mlp" --data "$mlp/data" \
        --steps 12 --warmup-steps 4 --log-every 0 --stats "$tmp/s.json" "${flags[@]}" >"$tmp/run" 2>&1; then
        fail "mlp $mode run: $(head -c 400 "$tmp/run")"
        continue
    fi
    check "mlp $mode: bytes as predicted" "$py" - "$tmp/plan.json" "$tmp/s.json" "$name" <<'PY'
import json, sys
plan, stats, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
pred = [s for s in plan["settings"] if s["name"] == name][0]["bytes_per_step"][-1]
for r in stats["ranks"]:
    got = sum(r["bytes_sent_per_step"].values()) + sum(r["bytes_received_per_step"].values())
    if abs(got - pred) > 1e-6 * pred:
        sys.exit("rank %d: %r bytes per step, plan %r" % (r["rank"], got, pred))
print("%s: %r bytes per step" % (name, pred))
PY
done

# ---- the cost model is inspect's
check "inspect recommender, 4 ranks" "$parallaxc" inspect "$rec/model.onnx" --batch 16 --ranks 4 \
    --format text -o "$tmp/inspect.txt"
"$parallaxc" plan "$rec/model.onnx" --batch 16 --hosts 4 --link 1gbit --cores 2 --step-seconds 0.02 \
    --format json >"$tmp/rec.json" 2>"$tmp/err" || fail "plan recommender: $(cat "$tmp/err")"
check "recommender: inspect's bytes and seconds, samples/s from them" "$py" - "$tmp/rec.json" \
    "$tmp/inspect.txt" <<'PY'
import json, re, sys
plan, text = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
by = dict(re.findall(r"(hybrid|allreduce|ps) (\d+)", text.split("predicted bytes")[1].split("\n")[0]))
secs = dict(re.findall(r"(hybrid|allreduce|ps) ([0-9.e+-]+)", text.split("communication seconds")[1].split("\n")[0]))
assert plan["hosts"] == [1, 2, 4], plan["hosts"]
for s in plan["settings"]:
    if not s["exact"]:
        continue
    m = s["comm"]
    if abs(s["bytes_per_step"][-1] - int(by[m])) > 0.5:
        sys.exit("%s: %r bytes, inspect %s" % (m, s["bytes_per_step"][-1], by[m]))
    if abs(s["comm_seconds"][-1] - float(secs[m])) > 6e-3 * float(secs[m]):  # inspect: %.3g
        sys.exit("%s: %r s, inspect %s" % (m, s["comm_seconds"][-1], secs[m]))
for s in plan["settings"]:
    for h, sps, comm in zip(plan["hosts"], s["samples_per_second"], s["comm_seconds"]):
        want = h * 16 / (0.02 + comm)
        if abs(sps - want) > 1e-6 * want:
            sys.exit("%s at %d hosts: %r samples/s, expected %r" % (s["name"], h, sps, want))
    if s["comm_seconds"][0] != 0:
        sys.exit("%s: one host communicates" % s["name"])
    if not s["exact"] and s["wire"] == "bf16":
        exact = [e for e in plan["settings"] if e["comm"] == s["comm"] and e["exact"]][0]
        if not s["bytes_per_step"][-1] < exact["bytes_per_step"][-1]:
            sys.exit("%s moves no fewer bytes than %s" % (s["name"], exact["name"]))
print("ok")
PY

# ---- rows replayed from the data, --staleness: against a running job's pulls
# (LM1B-like, 2 ranks on this one node: rank 0 holds every shard, so rank 1
# pulls every distinct row of its batch and sends 8 index bytes for each)
lm=$src/examples/lm1b
check "compile lm1b" "$parallaxc" compile "$lm/model.onnx" -o "$tmp/lm" --batch 32 --lr 0.05
"$parallaxc" plan "$lm/model.onnx" --batch 32 --lr 0.05 --hosts 2 --link 1gbit --cores 1 \
    --data "$lm/data" --staleness 2 --format json >"$tmp/lm.json" 2>"$tmp/err" ||
    fail "plan lm1b --data: $(cat "$tmp/err")"
for st in 0 2; do
    if ! timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/lm" --data "$lm/data" \
        --steps 29 --warmup-steps 5 --log-every 0 --stats "$tmp/lm$st.json" --staleness $st \
        --threads 1 >"$tmp/run" 2>&1; then
        fail "lm1b --staleness $st run: $(head -c 400 "$tmp/run")"
    fi
done
check "lm1b: rows pulled per step as replayed, exact and --staleness 2" "$py" - "$tmp/lm.json" \
    "$tmp/lm0.json" "$tmp/lm2.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
rows = plan["rows"]
assert {r["variable"] for r in rows} == {"embed.weight", "out_w.weight", "out_b.weight"}, rows
exact = sum(r["rows_per_step"][-1] for r in rows)
stale = sum(r["pulled_rows_per_step"][-1] for r in rows)
got = [json.load(open(f))["ranks"][1]["bytes_sent_per_step"]["ps_pull"] / 8 for f in sys.argv[2:]]
for name, want, g in (("exact", exact, got[0]), ("--staleness 2", stale, got[1])):
    if abs(g - want) > 0.05 * want:
        sys.exit("%s: rank 1 pulled %.1f rows a step, the plan replays %.1f" % (name, g, want))
    print("%s: %.1f rows a step pulled, %.1f replayed" % (name, g, want))
# the settings' bytes follow: staleness moves fewer, by the rows not pulled
by = {s["name"]: s["bytes_per_step"][-1] for s in plan["settings"]}
assert by["hybrid --staleness 2"] < by["hybrid"], by
assert by["ps --wire bf16 --staleness 2"] < by["ps --wire bf16"], by
assert "allreduce --staleness 2" not in by, by
PY

# ---- calibration, its cache, the text table and the chart
check "plan --data calibrates" "$parallaxc" plan "$mlp/model.onnx" --batch 8 --hosts 4 --link 100mbit \
    --cores 1 --data "$mlp/data" --svg "$tmp/chart.svg"
"$parallaxc" plan "$mlp/model.onnx" --batch 8 --hosts 4 --link 100mbit --cores 1 --data "$mlp/data" \
    >"$tmp/p1.txt" 2>&1 || fail "plan --data: $(head -c 400 "$tmp/p1.txt")"
check "the calibration is cached" grep -q "cached in $XDG_CACHE_HOME/parallax/plan-" "$tmp/p1.txt"
check "the table recommends a setting" grep -q "^recommended at 4 hosts: " "$tmp/p1.txt"
check "memory per rank" grep -q "^memory per rank at 4 hosts" "$tmp/p1.txt"
check "--svg parses as XML with a line per setting" "$py" -c '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag.endswith("svg"), root.tag
text = open(sys.argv[1]).read()
for name in ("hybrid --wire bf16", "allreduce --sync-every 4", "linear scaling"):
    assert name in text, name
' "$tmp/chart.svg"

# ---- bad values name the flag
refused() { # PATTERN ARGS...
    local pattern=$1 rc=0
    shift
    "$parallaxc" plan "$@" >"$tmp/out" 2>&1 || rc=$?
    if [ $rc -eq 2 ] && grep -q -e "$pattern" "$tmp/out"; then
        pass "refused, naming $pattern: ${*:2}"
    else
        fail "plan ${*:2}: exit $rc, $(head -c 300 "$tmp/out")"
    fi
}
m=$mlp/model.onnx
base=(--batch 8 --link 1gbit --cores 2 --step-seconds 0.01)
refused "--hosts" "$m" --batch 8 --link 1gbit --cores 2 --step-seconds 0.01
refused "--hosts" "$m" "${base[@]}" --hosts 0
refused "--link" "$m" --batch 8 --hosts 2 --cores 2 --step-seconds 0.01 --link 1gbyte
refused "--link" "$m" --batch 8 --hosts 2 --cores 2 --step-seconds 0.01 --link -5
refused "--cores" "$m" --batch 8 --hosts 2 --link 1gbit --step-seconds 0.01 --cores 0
refused "--ranks-per-host" "$m" "${base[@]}" --hosts 2 --ranks-per-host x
refused "--step-seconds" "$m" --batch 8 --link 1gbit --cores 2 --hosts 2
refused "--batch" "$m" --hosts 2 --link 1gbit --cores 2 --step-seconds 0.01
refused "--bogus" "$m" "${base[@]}" --hosts 2 --bogus
refused "--format" "$m" "${base[@]}" --hosts 2 --format yaml
refused "model comes first" --batch 8 --hosts 2
refused "--ranks" "$m" "${base[@]}" --hosts 2 --ranks 4
refused "--svg" "$m" "${base[@]}" --hosts 2 --svg "$m"
refused "--svg" "$m" "${base[@]}" --hosts 2 --svg "$tmp"

echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
