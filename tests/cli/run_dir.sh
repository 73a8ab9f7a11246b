#!/bin/bash
# Usage: run_dir.sh PARALLAXC SRCDIR
#
# --run-dir DIR (docs/training.md, "Run directory") and the progress line.
# The MLP example, 2 epochs of 16 steps with a cosine schedule and
# validation every 16 steps; tests/tools/check_run_dir.py checks the files
# against the run itself and against independent computations: the lr
# column is the cosine formula, progress.csv's smoothed loss is the debiased
# moving average of losses.csv's losses (NumPy), run.json and compile.json
# parse and hold the run's settings (64 traffic predictions, the model's
# variables as inspect lists them). Also: the progress line shows epoch and
# lr; a run resumed from step 16 into the same folder leaves losses.csv and
# eval.csv byte for byte as the uninterrupted run's; two ranks write one
# run directory (ranks 2 in run.json); a --run-dir that is a file fails
# before training, naming --run-dir.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ex=$src/examples/mlp
checker=$src/tests/tools/check_run_dir.py

"$parallaxc" compile "$ex/model.onnx" -o "$tmp/prog" --batch 8 --optimizer momentum --lr 0.05 \
    >"$tmp/compile.log" 2>&1 || { cat "$tmp/compile.log"; exit 1; }
"$parallaxc" inspect "$ex/model.onnx" --batch 8 --optimizer momentum --lr 0.05 --stage parallel \
    --format json -o "$tmp/inspect.json" >/dev/null 2>&1 || { echo "FAIL inspect"; exit 1; }

flags=(--data "$ex/data" --eval-data "$ex/data" --eval-every 16 --lr-schedule cosine:32)
check "a run writes its run directory" "$tmp/prog" "${flags[@]}" --epochs 2 --log-every 8 \
    --run-dir "$tmp/runs/a"
cp "$tmp/log" "$tmp/a.out"
check "the files hold the run (checked against NumPy)" "$py" "$checker" "$tmp/runs/a" \
    "$tmp/inspect.json" --ranks 1 --steps 32 --steps-per-epoch 16 --lr 0.05 --cosine 32 \
    --evals 16,32 --log-every 8
if grep -q "^step 8/32  loss [0-9.]*  lr 0.0[0-9]*  epoch 1/2  .* samples/s" "$tmp/a.out" &&
    grep -q "^step 24/32 .* epoch 2/2 " "$tmp/a.out"; then
    pass "the progress line: smoothed loss, lr, epoch N/M, samples/s"
else
    fail "progress line: $(head -c 600 "$tmp/a.out")"
fi

# Resumed at step 16 into the same folder: the same CSV bytes.
check "first half with a checkpoint" "$tmp/prog" "${flags[@]}" --log-every 0 --steps 16 \
    --checkpoint "$tmp/ck" --run-dir "$tmp/runs/b"
check "resumed second half" "$tmp/prog" "${flags[@]}" --epochs 2 --log-every 0 --resume "$tmp/ck" \
    --run-dir "$tmp/runs/b"
check "resumed: losses.csv as the uninterrupted run's" cmp "$tmp/runs/a/losses.csv" \
    "$tmp/runs/b/losses.csv"
check "resumed: eval.csv as the uninterrupted run's" cmp "$tmp/runs/a/eval.csv" \
    "$tmp/runs/b/eval.csv"

check "two ranks" mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/prog" --data "$ex/data" \
    --steps 12 --log-every 0 --run-dir "$tmp/runs/c"
check "two ranks: one run directory" "$py" "$checker" "$tmp/runs/c" "$tmp/inspect.json" \
    --ranks 2 --steps 12 --steps-per-epoch 8 --lr 0.05

touch "$tmp/a_file"
if "$tmp/prog" --data "$ex/data" --steps 2 --run-dir "$tmp/a_file/sub" >"$tmp/bad.out" 2>&1; then
    fail "--run-dir under a file: the run went on"
elif grep -q "error[^:]*: --run-dir $tmp/a_file/sub: .*a_file" "$tmp/bad.out" &&
    ! grep -q "^step" "$tmp/bad.out"; then
    pass "--run-dir under a file fails before training, naming --run-dir"
else
    fail "--run-dir under a file: $(cat "$tmp/bad.out")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
