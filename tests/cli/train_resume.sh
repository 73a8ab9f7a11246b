#!/bin/bash
# Usage: train_resume.sh PARALLAXC SRCDIR
# Compiled example programs: a run stopped at a checkpoint and resumed gives
# the uninterrupted run's losses and trained model byte for byte (recommender
# with Adam, shuffled, under 2 ranks with parameter-server shards, with AdamW
# and --no-decay, and with RMSprop on 1 rank; the LSTM LM
# with momentum on 1 rank; the LM1B example with Adam under 3 ranks, 3
# shards, its prefetches answered early), a checkpoint written by 2 ranks
# resumes on 1 rank,
# and --emit-graph writes the compiled graph (.onnx loads in onnx, .json
# passes tests/tools/check_parallel.py).
. "$(dirname "$0")/lib.sh" "$@"
set -f # --no-decay patterns in the flags are words, not file names
run() { # RANKS PROG ARGS...
    local n=$1
    shift
    if [ "$n" -gt 1 ]; then
        timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$n" "$@"
    else
        timeout 120 "$@"
    fi
}
rb=4             # per-rank batch of resume_case
resume_case() { # LABEL EXAMPLE RANKS RESUME_RANKS "COMPILE FLAGS" RUN FLAGS...
    local label=$1 ex=$2 n=$3 n2=$4 cflags=$5
    shift 5
    local d=$src/examples/$ex p=$tmp/$ex.prog
    # shellcheck disable=SC2086 # flags are words
    check "$label: compile" "$parallaxc" compile "$d/model.onnx" -o "$p" --batch "$rb" $cflags || return
    # Resuming on n2 ranks keeps the global batch: per-rank batch rb*n/n2.
    local p2=$p
    if [ "$n" != "$n2" ]; then
        p2=$tmp/$ex.resume.prog
        # shellcheck disable=SC2086
        check "$label: compile at batch $((rb * n / n2))" "$parallaxc" compile "$d/model.onnx" \
            -o "$p2" --batch $((rb * n / n2)) $cflags || return
    fi
    check "$label: 10 steps" run "$n" "$p" --data "$d/data" --steps 10 --log-every 0 \
        --losses "$tmp/full.csv" --save "$tmp/full.onnx" "$@" || return
    check "$label: 6 steps + checkpoint" run "$n" "$p" --data "$d/data" --steps 6 --log-every 0 \
        --losses "$tmp/part.csv" --checkpoint "$tmp/ckpt" "$@" || return
    check "$label: resume to 10 on $n2 rank(s)" run "$n2" "$p2" --data "$d/data" --steps 10 \
        --log-every 0 --losses "$tmp/part.csv" --resume "$tmp/ckpt" --save "$tmp/part.onnx" "$@" ||
        return
    if [ "$n" = "$n2" ]; then
        check "$label: same losses, byte for byte" cmp "$tmp/full.csv" "$tmp/part.csv"
        check "$label: same model, byte for byte" cmp "$tmp/full.onnx" "$tmp/part.onnx"
    else
        check "$label: close to the uninterrupted run" "$py" "$src/tests/tools/train_reference.py" \
            compare --ref-run "$tmp/full.csv" "$tmp/full.onnx" "$tmp/part.csv" "$tmp/part.onnx" \
            "$d/model.onnx" --loss-rtol 1e-5
    fi
}
resume_case "recommender adam 2 ranks" recommender 2 2 "--optimizer adam --lr 0.01" --shuffle 3
resume_case "lstm_lm momentum 1 rank" lstm_lm 1 1 "--optimizer momentum --lr 0.05 --nesterov"
resume_case "recommender 2 ranks then 1" recommender 2 1 "--optimizer adagrad --lr 0.05"
resume_case "recommender adamw 2 ranks, no-decay" recommender 2 2 \
    "--optimizer adamw --lr 0.01 --no-decay *.bias" --shuffle 4
resume_case "recommender rmsprop 1 rank" recommender 1 1 "--optimizer rmsprop --lr 0.005 --weight-decay 0.01"
resume_case "recommender adam 2 ranks, --accumulate 3" recommender 2 2 "--optimizer adam --lr 0.01" \
    --accumulate 3
# Its output tables' prefetched rows are answered early and fixed up after
# each update (runtime/comm/ps/prefetch_serve.c), also around the checkpoint:
# at 8 samples per rank a shard's answer is over PF_EARLY_MIN_BYTES.
rb=8
resume_case "lm1b adam 3 ranks, 3 shards" lm1b 3 3 "--optimizer adam --lr 0.01" --ranks-per-node 1 \
    --shuffle 5

model=$src/examples/recommender/model.onnx
check "--emit-graph .onnx" "$parallaxc" compile "$model" -o "$tmp/p" --batch 4 --emit-graph "$tmp/g.onnx"
check "emitted ONNX loads" "$py" -c "
import numpy as np
for a, t in (('float', float), ('int', int), ('bool', bool), ('object', object)):
    hasattr(np, a) or setattr(np, a, t)
import onnx, sys
m = onnx.load('$tmp/g.onnx')
ops = {n.op_type for n in m.graph.node if n.domain == 'ai.parallax'}
sys.exit(0 if {'PSPull', 'PSPush', 'AllReduceStart', 'AllReduceWait', 'Update'} <= ops else 1)"
check "--emit-graph .json" "$parallaxc" compile "$model" -o "$tmp/p" --batch 4 --comm allreduce \
    --emit-graph "$tmp/g.json"
check "emitted JSON: allreduce placement" "$py" "$src/tests/tools/check_parallel.py" "$tmp/g.json" allreduce
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
