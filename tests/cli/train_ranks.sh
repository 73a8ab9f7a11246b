#!/bin/bash
# Usage: train_ranks.sh PARALLAXC SRCDIR
#
# Synchronous data parallelism (design.md §4): N ranks at per-rank batch b
# train like one rank at batch N*b, for every example, every --comm mode and
# every optimizer, under mpirun -np 1..4 (oversubscribed). Each case compiles
# the model twice (batch N*b and b), runs 12 steps alone and under mpirun,
# and compares per-step loss (relative 1e-5) and the saved weights (error
# <= 1% of the update) with tests/tools/train_reference.py compare --ref-run.
# AdamW and RMSprop with --no-decay, and --accumulate 2 on both sides, too.
# Also: virtual nodes with local aggregation on and off, partition counts that
# do not divide the rows, and a data set whose indices repeat and all fall on
# one shard. Prints a table; exits non-zero on any failure.
set -u
set -f # --no-decay patterns in the flags are words, not file names
parallaxc=$1
src=$2
py=/usr/bin/python3
ref=$src/tests/tools/train_reference.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
steps=12
failed=0
passed=0
fail() {
    echo "FAIL $*"
    failed=$((failed + 1))
}

# build NAME MODEL BATCH FLAGS...: compiles $tmp/NAME.prog.
build() {
    local name=$1 model=$2 b=$3
    shift 3
    "$parallaxc" compile "$model" -o "$tmp/$name.prog" --batch "$b" "$@" >"$tmp/$name.log" 2>&1 ||
        { fail "$name: compile: $(head -c 600 "$tmp/$name.log")"; return 1; }
}

# run NAME RANKS DATA RUNTIME_FLAGS...: $tmp/NAME-RANKS.csv / .onnx
run() {
    local name=$1 ranks=$2 data=$3
    shift 3
    local launch=()
    [ "$ranks" -gt 1 ] && launch=(mpirun --allow-run-as-root --oversubscribe -np "$ranks")
    timeout 180 "${launch[@]}" "$tmp/$name.prog" --data "$data" --steps $steps --log-every 0 \
        --losses "$tmp/$name-$ranks.csv" --save "$tmp/$name-$ranks.onnx" "$@" >"$tmp/$name.run" 2>&1 ||
        { fail "$name on $ranks rank(s): $(tail -c 600 "$tmp/$name.run")"; return 1; }
}

# check LABEL MODEL ONE TWO: compares run TWO against run ONE.
check() {
    local label=$1 model=$2 one=$3 two=$4 out
    if out=$("$py" "$ref" compare --ref-run "$tmp/$one.csv" "$tmp/$one.onnx" "$tmp/$two.csv" \
        "$tmp/$two.onnx" "$model" --loss-rtol 1e-5 --label "$label" 2>"$tmp/cmp"); then
        printf 'PASS %-52s %s\n' "$label" "$out"
        passed=$((passed + 1))
    else
        fail "$label: $(cat "$tmp/cmp")"
    fi
}

# case LABEL EXAMPLE RANKS B DATA "COMPILE FLAGS" [RUNTIME FLAGS...]: the runtime
# flags go to the N-rank run; those in the array `both` to both runs.
both=()
case_() {
    local label=$1 ex=$2 n=$3 b=$4 data=$5 cflags=$6
    shift 6
    local model=$src/examples/$ex/model.onnx id
    id=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    # shellcheck disable=SC2086 # flags are words
    build "$id-one" "$model" $((n * b)) $cflags || return
    # shellcheck disable=SC2086
    build "$id-n" "$model" "$b" $cflags || return
    run "$id-one" 1 "$data" "${both[@]}" || return
    run "$id-n" "$n" "$data" "${both[@]}" "$@" || return
    check "$label" "$model" "$id-one-1" "$id-n-$n"
}

ex=$src/examples
# Every example and --comm mode, 2 ranks, SGD.
for e in mlp cnn lstm_lm transformer_lm recommender lm1b dlrm; do
    for comm in hybrid allreduce ps; do
        case_ "$e $comm np2" "$e" 2 2 "$ex/$e/data" "--comm $comm --optimizer sgd --lr 0.05"
    done
done
# Every optimizer with 3 and 4 ranks on the models with embedding tables.
case_ "recommender momentum hybrid np3" recommender 3 2 "$ex/recommender/data" \
    "--optimizer momentum --lr 0.05 --nesterov"
case_ "recommender adam ps np4" recommender 4 2 "$ex/recommender/data" \
    "--comm ps --optimizer adam --lr 0.01 --weight-decay 0.01"
case_ "recommender adagrad allreduce np3" recommender 3 2 "$ex/recommender/data" \
    "--comm allreduce --optimizer adagrad --lr 0.05"
case_ "recommender adamw ps np3, no-decay" recommender 3 2 "$ex/recommender/data" \
    "--comm ps --optimizer adamw --lr 0.01 --no-decay *.bias,user.weight" --ranks-per-node 1
case_ "recommender rmsprop hybrid np2, no-decay" recommender 2 2 "$ex/recommender/data" \
    "--optimizer rmsprop --lr 0.005 --weight-decay 0.01 --no-decay mlp.4.*"
both=(--accumulate 2)
case_ "recommender adam hybrid np3, --accumulate 2" recommender 3 2 "$ex/recommender/data" \
    "--optimizer adam --lr 0.01" --ranks-per-node 1
both=()
case_ "lstm_lm adam hybrid np3" lstm_lm 3 1 "$ex/lstm_lm/data" "--optimizer adam --lr 0.01"
case_ "lm1b adam hybrid np4, 4 shards" lm1b 4 1 "$ex/lm1b/data" "--optimizer adam --lr 0.01" --ranks-per-node 1
case_ "transformer_lm momentum hybrid np4" transformer_lm 4 1 "$ex/transformer_lm/data" \
    "--optimizer momentum --lr 0.02"
# Virtual nodes of 2 ranks: shards on ranks 0 and 2, local aggregation on/off.
case_ "recommender adam 2 nodes x 2, local agg" recommender 4 2 "$ex/recommender/data" \
    "--optimizer adam --lr 0.01" --ranks-per-node 2
case_ "recommender adam 2 nodes x 2, no local agg" recommender 4 2 "$ex/recommender/data" \
    "--optimizer adam --lr 0.01" --ranks-per-node 2 --no-local-aggregation
# 3 shards (one rank per node) and 7 partitions: rows (5000, 10000, 100) not divisible.
case_ "recommender 3 shards, 7 partitions" recommender 3 2 "$ex/recommender/data" \
    "--optimizer adagrad --lr 0.05 --partitions 7" --ranks-per-node 1
# Indices that repeat within a batch and all fall on the first shard.
mkdir -p "$tmp/skewed"
"$py" - "$ex/recommender/data" "$tmp/skewed" <<'PY' || fail "could not write skewed data"
import os, shutil, sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
for f in os.listdir(src):
    shutil.copy(os.path.join(src, f), dst)
for name in ("user", "item", "history"):
    p = os.path.join(dst, name + ".npy")
    a = np.load(p)
    np.save(p, (a % 5).astype(a.dtype))  # 5 distinct rows: duplicates, all in partition 0
PY
case_ "recommender skewed indices, 4 shards" recommender 4 2 "$tmp/skewed" \
    "--optimizer adam --lr 0.01 --partitions 4" --ranks-per-node 1

echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
