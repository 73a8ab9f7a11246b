#!/usr/bin/env bash
# The main demo: installs what is needed, builds, then trains the recommender
# example (three embedding tables read through Gather, a dense MLP) the
# Parallax way:
#   1. `parallaxc inspect` shows which variables are sparse and how each is
#      synchronised, with the predicted bytes per rank and step of each mode;
#   2. `parallaxc compile` builds one native training program (hybrid: dense
#      gradients through AllReduce, embedding rows through parameter servers);
#   3. `mpirun -np 2` trains it: per-step loss, throughput, and the bytes each
#      rank moved (--stats), then checks the trajectory against PyTorch
#      training the same model at the global batch.
#
# `scripts/demo.sh PARALLAXC` skips the install and the build and runs the
# demo with that compiler (the README's test does, on the build it tests).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ge 1 ]; then
  PX=$1
else
  bash scripts/install-deps.sh
  bash scripts/build.sh
  PX=${BUILD_DIR:-build}/compiler/parallaxc
fi
EX=examples/recommender
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
FLAGS=(--optimizer adam --lr 0.01)

echo "== parallaxc inspect $EX/model.onnx --batch 8 --ranks 2 --stage parallel"
$PX inspect "$EX/model.onnx" --batch 8 --ranks 2 --stage parallel "${FLAGS[@]}" --format json \
    -o "$WORK/inspect.json"
/usr/bin/python3 - "$WORK/inspect.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ops = {}
for n in doc["nodes"]:
    if n["domain"] == "ai.parallax":
        ops[n["op"]] = ops.get(n["op"], 0) + 1
print("ai.parallax nodes:", ", ".join("%s x%d" % kv for kv in sorted(ops.items())))
for v in doc["variables"]:
    print("  %-16s %-9s %8d bytes  %-6s sync=%s" % (v["name"], "x".join(map(str, v["shape"])),
                                                   v["bytes"], v["class"], v["sync"]))
print("predicted bytes per rank per step:", doc["predicted_bytes_per_step"])
PY

echo "== parallaxc compile (autodiff, Adam, communication, LLVM; batch 4 per rank)"
time $PX compile "$EX/model.onnx" -o "$WORK/train" --batch 4 "${FLAGS[@]}" --comm hybrid

echo "== mpirun -np 2: 2 ranks x 4 samples, 40 steps"
mpirun --oversubscribe -np 2 "$WORK/train" --data "$EX/data" --steps 40 --log-every 5 \
    --losses "$WORK/losses.csv" --stats "$WORK/stats.json" --save "$WORK/trained.onnx"
/usr/bin/python3 - "$WORK/stats.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("throughput: %.0f samples/s over %d steps" % (s["samples_per_second"], s["counted_steps"]))
for r in s["ranks"]:
    sent, recv = r["bytes_sent_per_step"], r["bytes_received_per_step"]
    print("rank %d bytes per step: " % r["rank"] +
          ", ".join("%s %.0f out / %.0f in" % (k, sent[k], recv[k]) for k in sent))
PY

echo "== the same 40 steps in PyTorch at the global batch 8 (lazy Adam on the tables)"
/usr/bin/python3 tests/tools/train_reference.py run "$EX" --batch 8 --steps 40 "${FLAGS[@]}" \
    --parallaxc "$PX" --out "$WORK/torch" >/dev/null
/usr/bin/python3 tests/tools/train_reference.py compare --ref "$WORK/torch" "$WORK/losses.csv" \
    "$WORK/trained.onnx" "$EX/model.onnx" --loss-rtol 1e-4 --label "2 ranks vs PyTorch" |
    awk '{printf "max relative loss error %s, max weight error %s of the update (worst: %s)\n", $1, $2, $3}'
