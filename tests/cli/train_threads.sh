#!/bin/bash
# Usage: train_threads.sh PARALLAXC SRCDIR
#
# --threads N changes how fast a rank computes, never what: the MLP, the CNN,
# the LSTM LM and the Transformer LM (Adam, so the update arithmetic is
# exercised too) trained with --threads 1, 2 and 3 write the same per-step
# losses and the same trained model (--save), byte for byte, and at 2 and 3
# threads the run really split loops over threads (--stats parallel_loops).
# A 2-rank run at 2 threads per rank equals its 1-thread run too, and
# inference programs give the same outputs at 1 and 2 threads. Bad
# --threads values exit 2 naming the flag.
. "$(dirname "$0")/lib.sh" "$@"
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failed=0
stat() { # stat FILE KEY
    "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

for model in mlp cnn lstm_lm transformer_lm; do
    prog=$tmp/$model.prog
    if ! "$parallaxc" compile "$src/examples/$model/model.onnx" -o "$prog" --batch 64 \
        --optimizer adam --lr 0.01 >"$tmp/$model.log" 2>&1; then
        fail "$model: compile: $(cat "$tmp/$model.log")"
        continue
    fi
    for t in 1 2 3; do
        if ! timeout 300 "$prog" --data "$src/examples/$model/data" --steps 12 --threads $t \
            --losses "$tmp/$model.$t.csv" --save "$tmp/$model.$t.onnx" \
            --stats "$tmp/$model.$t.json" --log-every 0 >"$tmp/$model.$t.log" 2>&1; then
            fail "$model --threads $t: $(tail -c 800 "$tmp/$model.$t.log")"
            continue
        fi
        got=$(stat "$tmp/$model.$t.json" threads_per_rank)
        [ "$got" = "$t" ] || fail "$model --threads $t: stats say $got threads"
        splits=$(stat "$tmp/$model.$t.json" parallel_loops)
        if [ "$t" = 1 ]; then
            [ "$splits" = 0 ] || fail "$model: 1 thread split $splits loops"
            continue
        fi
        [ "$splits" -gt 0 ] || fail "$model --threads $t: no loop was split over threads"
        cmp -s "$tmp/$model.1.csv" "$tmp/$model.$t.csv" ||
            fail "$model: losses differ between --threads 1 and $t: $(diff "$tmp/$model.1.csv" "$tmp/$model.$t.csv" | head -4)"
        cmp -s "$tmp/$model.1.onnx" "$tmp/$model.$t.onnx" ||
            fail "$model: trained weights differ between --threads 1 and $t"
    done
    echo "$model: --threads 1, 2, 3 identical ($(stat "$tmp/$model.2.json" parallel_loops) split loops at 2)"
done

# Two ranks, two threads each, against two ranks with one thread each.
prog=$tmp/transformer_lm.prog
if [ -x "$prog" ]; then
    for t in 1 2; do
        timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$prog" \
            --data "$src/examples/transformer_lm/data" --steps 6 --threads $t \
            --losses "$tmp/np2.$t.csv" --log-every 0 >"$tmp/np2.$t.log" 2>&1 ||
            fail "2 ranks --threads $t: $(tail -c 800 "$tmp/np2.$t.log")"
    done
    cmp -s "$tmp/np2.1.csv" "$tmp/np2.2.csv" || fail "2 ranks: losses differ between 1 and 2 threads"
fi

# Inference programs take --threads too: the same outputs at 1 and 2 threads.
for model in cnn transformer_lm; do
    if ! "$parallaxc" compile --infer "$src/examples/$model/model.onnx" -o "$tmp/$model.infer" \
        --batch 64 >"$tmp/$model.infer.log" 2>&1; then
        fail "$model --infer: compile: $(cat "$tmp/$model.infer.log")"
        continue
    fi
    for t in 1 2; do
        "$tmp/$model.infer" --data "$src/examples/$model/data" --out "$tmp/$model.out$t" \
            --threads $t >"$tmp/$model.infer.log" 2>&1 ||
            fail "$model --infer --threads $t: $(tail -c 800 "$tmp/$model.infer.log")"
    done
    diff -r "$tmp/$model.out1" "$tmp/$model.out2" >/dev/null ||
        fail "$model --infer: outputs differ between --threads 1 and 2"
done

# Bad values: status 2 and a message naming the flag.
for bad in 0 -1 x 257; do
    for prog in "$tmp/mlp.prog" "$tmp/cnn.infer"; do
        out=()
        [ "$prog" = "$tmp/cnn.infer" ] && out=(--out "$tmp/bad.out")
        "$prog" --data "$src/examples/mlp/data" "${out[@]}" --threads "$bad" >"$tmp/bad.log" 2>&1
        rc=$?
        [ $rc = 2 ] && grep -q -- "--threads" "$tmp/bad.log" ||
            fail "$(basename "$prog") --threads $bad: status $rc, $(head -c 300 "$tmp/bad.log")"
    done
done

if [ $failed -ne 0 ]; then
    echo "$failed failure(s)"
    exit 1
fi
echo "all thread-count checks passed"
