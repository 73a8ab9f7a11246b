#!/bin/bash
# Usage: bench/loss_denominator_overlap.sh PARALLAXC [RANKS] [STEPS]
#
# How much of the loss denominator's average over the ranks (a loss with
# ignore_index or class weights, reduction mean: docs/training.md "Losses
# that skip rows") the forward pass hides. The padded language model of
# tests/tools/padded_lm.py (cross-entropy with ignore_index) at batch 4 a
# rank, RANKS ranks (1 thread each), --trace. The average starts at the
# step's start and runs on the communication thread; the loss waits for it
# ("loss denominator wait", main thread). Its peer, in the same run: the
# same program with PX_COMM_NO_THREAD=1, where the average runs inside that
# wait, as the blocking collective before the loss did. Prints, per rank
# and step, the mean wait and the mean time of the average itself.
# Needs RANKS free cores: on fewer, ranks share cores and the waits measure
# the sharing.
set -euo pipefail
parallaxc=$1
ranks=${2:-2}
steps=${3:-200}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
/usr/bin/python3 "$src/tests/tools/padded_lm.py" "$tmp/lm" "$src" sce >/dev/null
"$parallaxc" compile "$tmp/lm/model.onnx" -o "$tmp/prog" --batch 4 --optimizer momentum --lr 0.2 \
    >/dev/null
for mode in thread no_thread; do
    env=()
    [ "$mode" = no_thread ] && env=(-x PX_COMM_NO_THREAD=1)
    mpirun --oversubscribe -np "$ranks" "${env[@]}" "$tmp/prog" --data "$tmp/lm/data" \
        --steps "$steps" --log-every 0 --trace "$tmp/$mode.json" >/dev/null
done
/usr/bin/python3 - "$tmp" "$ranks" "$steps" <<'PY'
import json, sys
tmp, ranks, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def spans(mode, name):
    ev = json.load(open("%s/%s.json" % (tmp, mode)))["traceEvents"]
    return sum(e["dur"] for e in ev if e.get("ph") == "X" and e.get("name") == name)
print("loss denominator, %d ranks, %d steps, 1 thread a rank (microseconds per rank and step):"
      % (ranks, steps))
res = {}
for mode in ("thread", "no_thread"):
    wait = spans(mode, "loss denominator wait") / ranks / steps
    run = spans(mode, "loss denominator over ranks") / ranks / steps
    res[mode] = wait
    print("  %-40s wait %8.2f   the average itself %8.2f" % (
        {"thread": "started at the step's start (default)",
         "no_thread": "run inside the wait (PX_COMM_NO_THREAD)"}[mode], wait, run))
if res["no_thread"] > 0:
    print("wait with the start early / wait with the average inside it: %.3f"
          % (res["thread"] / res["no_thread"]))
PY
