#!/bin/bash
# Usage: bench/pipeline_bubble.sh PARALLAXC [STAGES] [MICRO_BATCHES] [WIDTH] [STEPS]
#
# The idle fraction of each pipeline stage against 1F1B's bubble
# (S-1)/(M+S-1) (docs/parallelism.md), on an MLP of 2*S layers of
# WIDTH x WIDTH between a 2 x WIDTH input layer and a WIDTH x 10 head, so
# that every stage gets two equal layers and the same training FLOPs: the
# first stage's input layer is tiny, but its first WIDTH x WIDTH layer
# computes an input gradient, as every other stage's layers do (on an MLP
# whose first layer is a stage's full share, that stage's backward lacks
# one product and it idles for the others). The last stage also runs the
# head and the loss (1% more at WIDTH 1024). Compiled with --pp S
# --micro-batches M and run on S ranks (1 thread each) for STEPS steps.
#
# It prints three things:
#   - the cut, as inspect --stage parallel shows it;
#   - the replayed idle: the compiled order of the step's calls replayed
#     with each matrix product taking its FLOPs and each receive waiting for
#     its send (tests/tools/pp_schedule.py): the schedule's own bubble, free
#     of timing noise;
#   - the measured idle, from the run's --trace: for each rank, over the
#     steps after the first 2 (warm-up), the time it waited on other stages
#     in a step (its pipeline receives, the loss broadcast from the last
#     stage, and the loss mean over ranks that ends each step, where a stage
#     that is done waits for those still draining), over its mean step (the
#     time from one step's start to the next). The AllReduce of a stage's
#     gradients, its updates and its data loading are its own work, not idle;
#   - who waited for whom (tests/tools/pp_trace_waits.py, from the same
#     trace, the ranks laid on the host's clock): each stage's receive waits
#     split at the moment the matching send was posted (before: the sender
#     was still computing, a slower stage or the schedule; after: the
#     transfer itself), the longest post-to-completion delay, and each
#     stage's own work per micro-batch, the pace the others wait for.
# Needs S free cores: on fewer, ranks share cores and the waits measure the
# sharing, not the schedule.
set -euo pipefail
parallaxc=$1
S=${2:-4}
M=${3:-16}
W=${4:-512}
steps=${5:-30}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
widths=2
for _ in $(seq $((2 * S + 1))); do widths=$widths,$W; done
/usr/bin/python3 "$src/tests/tools/deep_mlp.py" "$tmp/mlp.onnx" "$widths,10"
batch=$((8 * M))
mkdir "$tmp/data"
/usr/bin/python3 - "$tmp/data" 2 $((4 * batch)) <<'PY'
import sys
import numpy as np
out, w, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.RandomState(0)
np.save(out + "/x.npy", rng.rand(n, w).astype(np.float32))
np.save(out + "/y.npy", rng.randint(0, 10, size=n).astype(np.int64))
PY
flags=(--batch $batch --pp "$S" --micro-batches "$M" --optimizer momentum --lr 0.01)
"$parallaxc" inspect "$tmp/mlp.onnx" "${flags[@]}" --stage parallel --graph >"$tmp/graph.txt" 2>/dev/null
echo "--pp $S --micro-batches $M: 2x$W, $((2 * S)) layers of ${W}x${W}, ${W}x10," \
    "$S ranks x 1 thread on $(getconf _NPROCESSORS_ONLN) cores"
grep -E '^  stage [0-9]+: ' "$tmp/graph.txt" | sed 's/; sends on.*//'
echo "replayed (the compiled order, each matrix product its FLOPs, no timing):"
/usr/bin/python3 "$src/tests/tools/pp_schedule.py" "$tmp/graph.txt" "$S" "$M" | grep idle
"$parallaxc" compile "$tmp/mlp.onnx" -o "$tmp/train" "${flags[@]}" >"$tmp/compile.log" 2>&1 ||
    { cat "$tmp/compile.log" >&2; exit 1; }
mpirun --oversubscribe -np "$S" "$tmp/train" --data "$tmp/data" --steps "$steps" --log-every 0 \
    --trace "$tmp/trace.json" >/dev/null
echo "measured (--trace, steps 3..$steps):"
/usr/bin/python3 - "$tmp/trace.json" "$S" "$M" <<'PY'
import collections, json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
S, M = int(sys.argv[2]), int(sys.argv[3])
bubble = (S - 1) / (M + S - 1)
waits = ("pipeline receive", "pipeline broadcast", "loss mean over ranks")
for r in range(S):
    mine = [e for e in ev if e["pid"] == r and e["tid"] == 0 and e["args"].get("step", 0) > 2]
    starts = sorted(e["ts"] for e in mine if e["name"] == "data loading")
    step = (starts[-1] - starts[0]) / (len(starts) - 1)
    per = collections.Counter()  # the steps from the first counted start to the last
    for e in mine:
        if not starts[0] <= e["ts"] < starts[-1]:
            continue
        if e["name"] in waits:
            per[e["name"]] += e["dur"] / (len(starts) - 1)
    idle = sum(per.values()) / step
    print("stage %d: idle %.3f of its %.4g ms step (%+.1f points against the bubble %.3f): "
          "receives %.3g ms, broadcast %.3g ms, step-end loss mean %.3g ms" %
          (r, idle, step / 1e3, 100 * (idle - bubble), bubble, per[waits[0]] / 1e3,
           per[waits[1]] / 1e3, per[waits[2]] / 1e3))
PY
echo "who waited for whom (the receives split at the matching send's post):"
/usr/bin/python3 "$src/tests/tools/pp_trace_waits.py" "$tmp/trace.json" "$M"
