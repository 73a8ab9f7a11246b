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
#     `inspect --ranks 2 --pp 2 --stage parallel` predicts for it, with a
#     checkpoint written at step 2 (rank 0 writes the whole model and its
#     Adam state, receiving stage 1's block by block, never a copy of it);
#   - each rank's activation arena holds its own stage's buffers only: its
#     peak RSS is below its stage's variables and state plus the arena of
#     the 1-rank program (what every rank allocated when the arena held
#     every stage's activations).
# And on an MLP whose activations outweigh its weights (widths
# 16,1024,16,1024,16,10, 128 rows a micro-batch), inspect --pp 2: stage 0
# keeps 2 micro-batches in flight and stage 1 one (1F1B), each within that
# many times the 1-rank program's arena for one micro-batch, and neither
# grows with --micro-batches beyond the step's inputs (M = 4 and 16).
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
step "--pp 2 on 2 ranks, a checkpoint at step 2" timeout 300 mpirun --oversubscribe -np 2 \
    "$tmp/pp2" --data "$tmp/big/data" --steps 3 --log-every 0 --stats "$tmp/pp2.stats" \
    --checkpoint "$tmp/pp2.ckpt" --checkpoint-every 2
check "--pp 2: each rank's memory breakdown as inspect predicts" "${check_memory[@]}" compare \
    "$tmp/pp2.json" "$tmp/pp2.stats"
check "--pp 2: each rank's peak RSS within 15% of inspect's prediction" "${check_memory[@]}" \
    within "$tmp/pp2.json" "$tmp/pp2.stats" 15
step "inspect, 1 rank" bash -c '"$0" inspect "$1" --stage parallel --format json "${@:3}" >"$2"' \
    "$parallaxc" "$tmp/big/model.onnx" "$tmp/one.json" --batch 2 --comm allreduce \
    --optimizer adam --lr 0.0001
check "--pp 2: each rank's peak RSS below its variables plus the 1-rank arena" "$py" - \
    "$tmp/pp2.json" "$tmp/one.json" "$tmp/pp2.stats" <<'PY'
import json, sys
pp, one, stats = (json.load(open(p)) for p in sys.argv[1:])
arena = one["memory"]["arena_bytes"]
for want, got in zip(pp["predicted_memory_per_rank"], stats["ranks"]):
    bound = want["dense_replicas"] + arena
    print("rank %d: peak RSS %.1f MiB, activations %.1f MiB; variables + 1-rank arena %.1f MiB"
          % (want["rank"], got["peak_rss_bytes"] / 2**20, want["activations"] / 2**20,
             bound / 2**20))
    assert want["activations"] < 0.65 * arena, (want, arena)
    assert got["peak_rss_bytes"] < bound, (got, bound)
PY
sed 's/^/     /' "$tmp/log"

step "export the wide MLP" "$py" "$src/tests/tools/deep_mlp.py" "$tmp/wide.onnx" \
    16,1024,16,1024,16,10
wide=(--optimizer momentum --lr 0.01 --stage parallel --format json)
for m in 1 4 16; do
    pp=(--pp 2 --micro-batches "$m")
    [ "$m" = 1 ] && pp=()
    step "inspect the wide MLP, ${pp[*]:-1 rank}" bash -c '"$0" inspect "$1" "${@:3}" >"$2"' \
        "$parallaxc" "$tmp/wide.onnx" "$tmp/wide$m.json" --batch $((128 * m)) --ranks 2 \
        "${wide[@]}" "${pp[@]}"
done
check "the wide MLP: each stage's arena holds its micro-batches in flight, not M" "$py" - \
    "$tmp"/wide{1,4,16}.json <<'PY'
import json, sys
one, four, sixteen = (json.load(open(p)) for p in sys.argv[1:])
a1 = one["memory"]["arena_bytes"]
inputs = 128 * (16 * 4 + 8)  # x (16 floats) and y (int64) of one micro-batch
for s in range(2):
    arena = [d["pipeline"]["stage"][s]["arena_bytes"] for d in (four, sixteen)]
    flight = [d["pipeline"]["stage"][s]["micro_batches_in_flight"] for d in (four, sixteen)]
    print("stage %d: arena %d (M=4), %d (M=16), %s in flight; 1 rank, 1 micro-batch: %d"
          % (s, arena[0], arena[1], flight, a1))
    assert flight == [2 - s, 2 - s], flight
    assert arena[1] - arena[0] <= 12 * inputs + 1024, arena
    assert arena[1] <= (2 - s) * a1 + 16 * inputs, (arena, a1)
    for d in (four, sixteen):
        assert d["predicted_memory_per_rank"][s]["activations"] == \
            d["pipeline"]["stage"][s]["arena_bytes"], d["predicted_memory_per_rank"]
assert four["pipeline"]["stage"][0]["arena_bytes"] > four["pipeline"]["stage"][1]["arena_bytes"]
PY
sed 's/^/     /' "$tmp/log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
