#!/bin/bash
# GEMM's share of the training step, from a perf profile (issue #11 asks for
# >= 60% on the GEMM-heavy models).
#
# usage: bench/profile_share.sh PARALLAXC [MODEL[:STEPS] ...]
#   default models: transformer_lm_8k:120 lstm_lm_20k:50 (made by
#   bench/large_lm.py into bench/.cache when missing); an example name
#   (mlp, cnn, lm1b, ...) profiles examples/NAME.
# env: THREADS (default 1), BATCH (32), KEEP=DIR keeps perf.data there.
#
# Each model is compiled (--batch BATCH --optimizer sgd --lr 0.01), run
# under `perf record --call-graph dwarf` for STEPS steps, and the samples
# whose stack holds px_step (the step itself: start-up, data loading and
# the MPI threads are left out) are split into GEMM (a cblas_sgemm /
# cblas_dgemm frame in the stack: OpenBLAS's kernel, packing and beta
# scaling, and our row-block split in gemm_split.c) and the rest, whose top
# functions (leaf symbol under the kernel that called it) are listed.
set -euo pipefail
PARALLAXC=${1:?usage: bench/profile_share.sh PARALLAXC [MODEL[:STEPS] ...]}
shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PARALLAXC=$(cd "$(dirname "$PARALLAXC")" && pwd)/$(basename "$PARALLAXC")
MODELS=("$@")
[ ${#MODELS[@]} -eq 0 ] && MODELS=(transformer_lm_8k:120 lstm_lm_20k:50)
THREADS=${THREADS:-1}
BATCH=${BATCH:-32}
command -v perf >/dev/null || { echo "profile_share.sh: perf is not installed" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# reads `perf script` on stdin; args: model, threads, load average
cat >"$WORK/share.py" <<'PY'
import collections, re, sys
model, threads, load = sys.argv[1:4]
GEMM = re.compile(r"^(cblas_[sd]gemm|px_[sd]gemm)$")
frame = re.compile(r"\s+[0-9a-f]+\s+(.*?)(\+0x[0-9a-f]+)?\s+\(")
step = gemm = 0
rest = collections.Counter()
stack = []

def flush():
    global step, gemm
    if "px_step" not in stack:
        return
    step += 1
    if any(GEMM.match(s) for s in stack):
        gemm += 1
        return
    i = stack.index("px_step")
    caller = stack[i - 1] if i > 0 else "px_step"
    rest[stack[0] if stack[0] == caller else "%s < %s" % (stack[0], caller)] += 1

for line in sys.stdin:
    if not line.strip():
        flush()
        stack = []
    elif line[0] in "\t ":
        m = frame.match(line)
        if m:
            stack.append(m.group(1).replace(" (inlined)", ""))
flush()
if step == 0:
    sys.exit("profile_share.sh: %s: no samples inside px_step" % model)
print("%s: --threads %s, load average %s: GEMM %.1f%% of %d step samples"
      % (model, threads, load, 100.0 * gemm / step, step))
for name, n in rest.most_common(8):
    print("    %5.1f%%  %s" % (100.0 * n / step, name))
PY

for spec in "${MODELS[@]}"; do
    model=${spec%%:*}
    steps=${spec#*:}
    [ "$steps" = "$spec" ] && steps=100
    case $model in
    transformer_lm_8k | lstm_lm_20k)
        dir=$ROOT/bench/.cache/$model
        if [ ! -f "$dir/reference.json" ]; then
            kind=${model%%_lm_*}
            /usr/bin/python3 "$ROOT/bench/large_lm.py" "$kind" "$dir" >/dev/null 2>&1
        fi
        ;;
    *) dir=$ROOT/examples/$model ;;
    esac
    [ -f "$dir/model.onnx" ] || { echo "profile_share.sh: no model $dir/model.onnx" >&2; exit 2; }
    "$PARALLAXC" compile "$dir/model.onnx" -o "$WORK/$model" --batch "$BATCH" --optimizer sgd \
        --lr 0.01 >/dev/null
    perf record -q --call-graph dwarf,16384 -F 999 -o "$WORK/$model.data" \
        "$WORK/$model" --data "$dir/data" --steps "$steps" --threads "$THREADS" >/dev/null 2>&1
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$WORK/$model.data" "$KEEP/"
    perf script -i "$WORK/$model.data" 2>/dev/null |
        /usr/bin/python3 "$WORK/share.py" "$model" "$THREADS" "$(cut -d' ' -f1 /proc/loadavg)"
done
