#!/bin/bash
# Usage: train_trace.sh PARALLAXC SRCDIR
#
# --trace FILE.json of a 2-rank run opens in Perfetto: tests/tools/check_trace.py
# checks that it is valid JSON with one track per rank (pid = rank, named),
# spans properly nested on every thread, and the spans of every part of a
# step on every rank. The recommender in hybrid mode has all of them: data
# loading, the step, the optimizer (dense replicas), PS pull and push (the
# embedding tables), AllReduce start and wait, clipping and validation. In ps
# mode there is no AllReduce; that run's trace is checked too. A trace to an
# unwritable place fails before training (exit 1, naming --trace).
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failed=0
data=$src/examples/recommender/data
common=("data loading" "step (forward + backward)" "PS pull" "PS push" "gradient clipping + updates" "validation")
for comm in hybrid ps; do
    if ! "$parallaxc" compile "$src/examples/recommender/model.onnx" -o "$tmp/$comm.prog" --batch 8 \
        --comm "$comm" --optimizer adam --lr 0.01 >"$tmp/$comm.log" 2>&1; then
        fail "$comm: compile: $(cat "$tmp/$comm.log")"
        continue
    fi
    if ! timeout 120 mpirun --allow-run-as-root -np 2 "$tmp/$comm.prog" --data "$data" --steps 12 \
        --eval-data "$data" --eval-every 6 --clip-grad-norm 0.5 --trace "$tmp/$comm.json" \
        --log-every 0 >"$tmp/$comm.log" 2>&1; then
        fail "$comm: run: $(tail -c 800 "$tmp/$comm.log")"
        continue
    fi
    spans=("${common[@]}")
    [ "$comm" = hybrid ] && spans+=("optimizer" "AllReduce start" "AllReduce wait")
    if out=$("$py" "$src/tests/tools/check_trace.py" "$tmp/$comm.json" 2 "${spans[@]}" 2>&1); then
        echo "$comm: $out"
    else
        fail "$comm: $out"
    fi
done

# A trace that cannot be written is refused before training.
"$tmp/hybrid.prog" --data "$data" --steps 2 --trace "$tmp/no/such/dir/t.json" >"$tmp/bad.log" 2>&1
rc=$?
if ! { [ "$rc" -eq 1 ] && grep -q -- "--trace" "$tmp/bad.log"; }; then
    fail "unwritable --trace: exit $rc: $(cat "$tmp/bad.log")"
fi

if [ "$failed" -ne 0 ]; then
    echo "$failed failure(s)"
    exit 1
fi
echo "all passed"
