#!/bin/bash
# Usage: train_pp_memory.sh PARALLAXC SRCDIR
#
# --pp gives each stage's ranks only the variables of that stage, with
# their optimizer state (docs/parallelism.md, "What each rank stores"). A
# transformer LM (bench/large_lm.py --large: 4 layers, d_model 1024,
# feed-forward 4096, 8 heads, vocabulary 512, weights in external data)
# trains with --pp 2 on 2 ranks, Adam:
#   - inspect predicts each rank at well under the whole model's dense
#     weights plus their Adam state (each stage holds about half);
#   - the breakdown the program reports (--stats) is inspect's;
#   - each rank's peak RSS (--stats: getrusage) is within 15% of the memory
#     `inspect --ranks 2 --pp 2 --stage parallel` predicts for it.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MALLOC_ARENA_MAX=2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
flags=(--batch 2 --pp 2 --micro-batches 2 --comm allreduce --optimizer adam --lr 0.0001)
check_memory=("$py" "$src/tests/tools/check_memory.py")

step "export the model" "$py" "$src/bench/large_lm.py" transformer "$tmp/big" --embed 1024 \
    --hidden 4096 --layers 4 --heads 8 --vocab 512 --seq 8 --samples 16 --large
step "compile --pp 2" "$parallaxc" compile "$tmp/big/model.onnx" -o "$tmp/pp2" "${flags[@]}"
step "inspect --pp 2" bash -c '"$0" inspect "$1" --ranks 2 --stage parallel --format json \
    "${@:3}" >"$2"' "$parallaxc" "$tmp/big/model.onnx" "$tmp/pp2.json" "${flags[@]}"
check "inspect: each rank holds well under the whole model's weights and Adam state" "$py" - \
    "$tmp/pp2.json" <<'PY'
import json, sys
from math import prod
plan = json.load(open(sys.argv[1]))
whole = 3 * sum(4 * prod(v["shape"]) for v in plan["variables"] if v["class"] != "frozen")
held = [r["dense_replicas"] for r in plan["predicted_memory_per_rank"]]
print("weights + Adam state %.1f MiB; rank 0 %.1f MiB, rank 1 %.1f MiB"
      % (whole / 2**20, held[0] / 2**20, held[1] / 2**20))
assert abs(sum(held) - whole) <= 0.01 * whole, (held, whole)
assert max(held) < 0.65 * whole, (held, whole)
PY
step "--pp 2 on 2 ranks" timeout 300 mpirun --oversubscribe -np 2 "$tmp/pp2" \
    --data "$tmp/big/data" --steps 3 --log-every 0 --stats "$tmp/pp2.stats"
check "--pp 2: each rank's memory breakdown as inspect predicts" "${check_memory[@]}" compare \
    "$tmp/pp2.json" "$tmp/pp2.stats"
check "--pp 2: each rank's peak RSS within 15% of inspect's prediction" "${check_memory[@]}" \
    within "$tmp/pp2.json" "$tmp/pp2.stats" 15
sed 's/^/     /' "$tmp/log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
