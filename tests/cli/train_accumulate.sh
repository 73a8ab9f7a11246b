#!/bin/bash
# Usage: train_accumulate.sh PARALLAXC SRCDIR
#
# --accumulate K: a step of K micro-batches per rank trains like one step
# with a K times larger batch. Each case runs 20 steps of a program compiled
# at batch b with --accumulate K and of one compiled at K*b (times the
# ranks), and compares them with tests/tools/train_reference.py compare:
# every step's loss within 1e-6 relative, every weight within 1% of its
# update.
#   - --accumulate 4 at batch 8 against batch 32: the MLP (momentum) and the
#     recommender (Adam; its embedding tables on the parameter-server shard);
#   - a classifier with Dropout: the micro-batches draw the masks of the
#     whole batch;
#   - 2 ranks, --accumulate 3, --clip-grad-norm and --shuffle, in every
#     --comm mode, against 1 rank at 6 times the batch;
#   - LM1B on 3 ranks, 3 shards, automatic partitions (re-partitioned between
#     updates), against 1 rank;
# and a run resumed from a checkpoint gives the uninterrupted run's losses
# and model byte for byte; --accumulate 0 is refused naming the flag.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ref=$src/tests/tools/train_reference.py
steps=20

# case LABEL MODEL DATA RANKS B K "COMPILE FLAGS" [RUN FLAGS...]
case_() {
    local label=$1 model=$2 data=$3 n=$4 b=$5 k=$6 cflags=$7
    shift 7
    local id
    id=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    # shellcheck disable=SC2086 # flags are words
    "$parallaxc" compile "$model" -o "$tmp/$id.small" --batch "$b" $cflags >"$tmp/$id.log" 2>&1 &&
        "$parallaxc" compile "$model" -o "$tmp/$id.big" --batch $((n * b * k)) $cflags \
            >>"$tmp/$id.log" 2>&1 || { fail "$label: compile: $(head -c 600 "$tmp/$id.log")"; return; }
    local launch=()
    [ "$n" -gt 1 ] && launch=(mpirun --allow-run-as-root --oversubscribe -np "$n")
    timeout 300 "${launch[@]}" "$tmp/$id.small" --data "$data" --steps $steps --log-every 0 \
        --accumulate "$k" --losses "$tmp/$id.acc.csv" --save "$tmp/$id.acc.onnx" "$@" \
        >"$tmp/$id.run" 2>&1 &&
        timeout 300 "$tmp/$id.big" --data "$data" --steps $steps --log-every 0 \
            --losses "$tmp/$id.big.csv" --save "$tmp/$id.big.onnx" "$@" \
            >>"$tmp/$id.run" 2>&1 || { fail "$label: run: $(tail -c 600 "$tmp/$id.run")"; return; }
    check "$label" "$py" "$ref" compare --ref-run "$tmp/$id.big.csv" "$tmp/$id.big.onnx" \
        "$tmp/$id.acc.csv" "$tmp/$id.acc.onnx" "$model" --loss-rtol 1e-6 --label "$label"
}

ex=$src/examples
case_ "mlp momentum, --accumulate 4 at 8 = batch 32" "$ex/mlp/model.onnx" "$ex/mlp/data" 1 8 4 \
    "--optimizer momentum --lr 0.05"
case_ "recommender adam, --accumulate 4 at 8 = batch 32" "$ex/recommender/model.onnx" \
    "$ex/recommender/data" 1 8 4 "--optimizer adam --lr 0.01"
"$py" "$src/tests/tools/eval_mode_reference.py" make "$tmp/drop" --no-batchnorm >"$tmp/drop.log" 2>&1 ||
    fail "dropout model: $(tail -c 400 "$tmp/drop.log")"
case_ "dropout masks, --accumulate 4 at 8 = batch 32" "$tmp/drop/model.onnx" "$tmp/drop/train" 1 8 4 \
    "--optimizer sgd --lr 0.1 --loss loss"
for comm in hybrid allreduce ps; do
    case_ "recommender $comm, 2 ranks x 4 x 3 = batch 24, clipped" "$ex/recommender/model.onnx" \
        "$ex/recommender/data" 2 4 3 "--optimizer momentum --lr 0.05 --comm $comm" \
        --clip-grad-norm 0.5 --shuffle 3
done
case_ "lm1b adam, 3 ranks, 3 shards, auto partitions" "$ex/lm1b/model.onnx" "$ex/lm1b/data" 3 2 2 \
    "--optimizer adam --lr 0.01" --ranks-per-node 1

# Resumed from a checkpoint written between updates: the same bytes.
p=$tmp/$(echo "mlp momentum, --accumulate 4 at 8 = batch 32" | tr -c 'a-zA-Z0-9\n' '_').small
run=("$p" --data "$ex/mlp/data" --accumulate 4 --log-every 0 --shuffle 2)
check "resume: full run" "${run[@]}" --steps 10 --losses "$tmp/full.csv" --save "$tmp/full.onnx"
check "resume: 4 steps + checkpoint" "${run[@]}" --steps 4 --losses "$tmp/part.csv" \
    --checkpoint "$tmp/ck"
check "resume: to step 10" "${run[@]}" --steps 10 --losses "$tmp/part.csv" --resume "$tmp/ck" \
    --save "$tmp/part.onnx"
check "resume: the same losses, byte for byte" cmp "$tmp/full.csv" "$tmp/part.csv"
check "resume: the same model, byte for byte" cmp "$tmp/full.onnx" "$tmp/part.onnx"

if "$p" --data "$ex/mlp/data" --steps 2 --accumulate 0 >"$tmp/bad.out" 2>&1; then
    fail "--accumulate 0 was accepted"
elif [ $? -eq 2 ] && grep -q -- "--accumulate needs a whole number of at least 1, not '0'" "$tmp/bad.out"; then
    pass "--accumulate 0 is refused, naming the flag"
else
    fail "--accumulate 0: $(cat "$tmp/bad.out")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
