#!/usr/bin/env bash
# The main demo: installs what is needed, builds, then shows what Parallax
# does with the recommender example (several embedding tables, multi-id bags):
# its variables classified sparse/dense, the folded static graph, and a native
# program compiled from the ONNX file whose loss is checked against PyTorch's.
# (Training under mpirun arrives with issues #4 and #5; this demo grows with them.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
PX=build/compiler/parallaxc
MODEL=examples/recommender/model.onnx
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "== parallaxc inspect: variables of $MODEL at --batch 8"
$PX inspect "$MODEL" --batch 8 --format json -o "$WORK/inspect.json"
/usr/bin/python3 - "$WORK/inspect.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print("stage %s: %d nodes, %d values" % (doc["stage"], len(doc["nodes"]), len(doc["values"])))
for v in doc["variables"]:
    print("  %-18s %-12s %9d bytes  %s" % (v["name"], "x".join(map(str, v["shape"])), v["bytes"], v["class"]))
PY

echo "== parallaxc compile --infer --batch 8 (LLVM, linked with the runtime)"
time $PX compile --infer "$MODEL" --batch 8 -o "$WORK/recommender"
echo "== running it on examples/recommender/data (512 samples = 64 batches of 8)"
time "$WORK/recommender" --data examples/recommender/data --out "$WORK/out"
/usr/bin/python3 - "$WORK/out/loss.npy" examples/recommender/reference.json <<'PY'
import json, sys
import numpy as np
losses = np.load(sys.argv[1])
ref = json.load(open(sys.argv[2]))["losses"]["8"]
print("loss of the first batch: %.7f   PyTorch: %.7f   (%d batch losses, mean %.5f)"
      % (losses[0], ref, len(losses), losses.mean()))
if abs(losses[0] - ref) > 1e-5 * abs(ref):
    sys.exit("error: the compiled program disagrees with PyTorch")
PY
