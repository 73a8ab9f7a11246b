#!/bin/bash
# Usage: bench/pipeline_bubble.sh PARALLAXC [STAGES] [MICRO_BATCHES] [WIDTH] [STEPS]
#
# The idle fraction of each pipeline stage against 1F1B's bubble
# (S-1)/(M+S-1) (docs/parallelism.md): an MLP of 2*S equal layers
# (WIDTH x WIDTH, so the stages are balanced) compiled with --pp S
# --micro-batches M, run on S ranks (1 thread each) with --stats. A
# stage's idle time is what its rank waited on others in a step
# (pipeline receives, the loss broadcast and the AllReduce wait at the
# step's end: comm_seconds_per_step x (1 - comm_hidden_fraction)) over
# the step's seconds. Needs S free cores: on fewer, ranks share cores and
# the waits measure the sharing, not the schedule.
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
widths=$W
for _ in $(seq $((2 * S))); do widths=$widths,$W; done
/usr/bin/python3 "$src/tests/tools/deep_mlp.py" "$tmp/mlp.onnx" "${widths%,*},10"
batch=$((8 * M))
mkdir "$tmp/data"
/usr/bin/python3 - "$tmp/data" "$W" $((4 * batch)) <<'PY'
import sys
import numpy as np
out, w, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.RandomState(0)
np.save(out + "/x.npy", rng.rand(n, w).astype(np.float32))
np.save(out + "/y.npy", rng.randint(0, 10, size=n).astype(np.int64))
PY
"$parallaxc" compile "$tmp/mlp.onnx" -o "$tmp/train" --batch $batch --pp "$S" --micro-batches "$M" \
    --optimizer momentum --lr 0.01 >/dev/null
mpirun --oversubscribe -np "$S" "$tmp/train" --data "$tmp/data" --steps "$steps" --log-every 0 \
    --stats "$tmp/stats.json" >/dev/null
/usr/bin/python3 - "$tmp/stats.json" "$S" "$M" "$W" "$(getconf _NPROCESSORS_ONLN)" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
S, M, W, cores = (int(a) for a in sys.argv[2:])
step = st["counted_seconds"] / st["counted_steps"]
bubble = (S - 1) / (M + S - 1)
print("--pp %d --micro-batches %d, %d layers of %dx%d, %d ranks x 1 thread on %d cores" %
      (S, M, 2 * S, W, W, S, cores))
print("step %.4g s; 1F1B bubble (S-1)/(M+S-1) = %.3f" % (step, bubble))
for r in st["ranks"]:
    hidden = r["comm_hidden_fraction"] or 0
    idle = r["comm_seconds_per_step"] * (1 - hidden) / step
    print("stage %d: idle %.3f of the step (%+.1f points against the bubble)" %
          (r["rank"], idle, 100 * (idle - bubble)))
PY
