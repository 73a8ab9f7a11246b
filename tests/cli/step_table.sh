#!/bin/bash
# Usage: step_table.sh PARALLAXC SRCDIR
#
# The table-driven step (runtime/px_step_table.h): graphs with very many
# kernel calls get their step as data, run by the runtime, instead of one
# emitted call per kernel. PX_STEP_TABLE_MIN_CALLS=1 forces it on these
# small examples, and each must give the numbers of the ordinary step bit
# for bit: training (losses of every step and the saved weights, one and
# two ranks, every --comm mode on the model with embedding tables, a
# pipeline of 2 stages) and
# inference (every output). The 100k-node chain that takes the table
# without forcing trains in tests/faults/linear_time.sh.
. "$(dirname "$0")/lib.sh" "$@"
ex=$src/examples

# same LABEL FILE...: PASS when every FILE of the ordinary step (.n) equals
# the table step's (.t) byte for byte.
same() {
    local label=$1 f
    shift
    for f in "$@"; do
        cmp -s "$f.n" "$f.t" || {
            fail "$label: $(basename "$f") differs between the ordinary and the table step"
            return
        }
    done
    pass "$label: identical"
}

# train LABEL EXAMPLE RANKS "COMPILE FLAGS": 4 steps each way.
train() {
    local label=$1 e=$2 ranks=$3 cflags=$4 way launch=()
    [ "$ranks" -gt 1 ] && launch=(mpirun --allow-run-as-root --oversubscribe -np "$ranks")
    for way in n t; do
        local min=1000000000
        [ $way = t ] && min=1
        # shellcheck disable=SC2086 # flags are words
        PX_STEP_TABLE_MIN_CALLS=$min "$parallaxc" compile "$ex/$e/model.onnx" -o "$tmp/p.$way" \
            --batch 2 $cflags >"$tmp/log" 2>&1 || {
            fail "$label: compile ($way): $(head -c 600 "$tmp/log")"
            return
        }
        timeout 300 "${launch[@]}" "$tmp/p.$way" --data "$ex/$e/data" --steps 4 --log-every 0 \
            --losses "$tmp/losses.$way" --save "$tmp/w.onnx" >"$tmp/log" 2>&1 || {
            fail "$label: run ($way): $(tail -c 600 "$tmp/log")"
            return
        }
        mv "$tmp/w.onnx" "$tmp/w.$way"
    done
    # the table step is what was run: its program calls the runtime's table
    nm "$tmp/p.t" | grep -q ' px_step_table_run$' && ! nm "$tmp/p.n" | grep -q ' px_step_table_run$' ||
        { fail "$label: the forced program has no table step (or the ordinary one has)"; return; }
    same "$label" "$tmp/losses" "$tmp/w"
}

for e in mlp cnn lstm_lm transformer_lm dlrm; do
    train "$e sgd np1" "$e" 1 "--lr 0.05"
done
for comm in hybrid allreduce ps; do
    train "recommender adam $comm np2" recommender 2 "--comm $comm --optimizer adam --lr 0.01"
done
# --pp: each call of a stage's node runs on that stage's ranks only
train "mlp --pp 2 np2" mlp 2 "--pp 2 --micro-batches 2 --lr 0.05"

# Inference: every output of two batches.
for e in mlp transformer_lm; do
    for way in n t; do
        min=1000000000
        [ $way = t ] && min=1
        PX_STEP_TABLE_MIN_CALLS=$min "$parallaxc" compile --infer "$ex/$e/model.onnx" --batch 8 \
            -o "$tmp/i.$way" >"$tmp/log" 2>&1 && "$tmp/i.$way" --data "$ex/$e/data" \
            --out "$tmp/out.$way" >"$tmp/log" 2>&1 || {
            fail "$e --infer ($way): $(tail -c 600 "$tmp/log")"
            continue 2
        }
    done
    if diff -r "$tmp/out.n" "$tmp/out.t" >/dev/null; then
        pass "$e --infer: identical outputs ($(ls "$tmp/out.t" | wc -l) files)"
    else
        fail "$e --infer: outputs differ between the ordinary and the table step"
    fi
done

echo "$passed passed, $failed failed"
[ $passed -gt 0 ] && [ $failed -eq 0 ]
