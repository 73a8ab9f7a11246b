#!/bin/bash
# Usage: train_eval_mode.sh PARALLAXC SRCDIR
#
# Validation in eval mode, early stopping and --keep-best, on a classifier
# with BatchNorm1d and Dropout(0.4) exported in training mode
# (tests/tools/eval_mode_reference.py):
# - the default validation equals PyTorch's model.eval() loss and accuracy
#   on the trained weights and running statistics --save wrote (1e-5);
# - validating changes nothing: the same losses and saved model, byte for
#   byte, as a run without validation (running statistics not assigned),
#   in eval mode and in --eval-mode train, whose validation differs (Dropout
#   drops, BatchNorm uses the batch's statistics);
# - --eval-every-epoch validates at the end of every epoch;
# - --early-stop P stops after P validations without a better
#   --early-stop-metric (the decision is recomputed from the run's own
#   eval.csv), run.json says stopped_early, and --keep-best holds the model
#   of the best validation: byte for byte the --save of a run that stopped
#   at that step;
# - a metric that is not an output, or an output other than the loss without
#   :min or :max, is refused before training, naming the flag and the outputs.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
ref=$src/tests/tools/eval_mode_reference.py
m=$tmp/m
"$py" "$ref" make "$m" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; exit 1; }
"$parallaxc" compile "$m/model.onnx" -o "$tmp/prog" --batch 8 --optimizer sgd --lr 0.1 \
    --loss loss >"$tmp/compile.log" 2>&1 || { cat "$tmp/compile.log"; exit 1; }
run=("$tmp/prog" --data "$m/train" --steps 12 --log-every 0)
val=(--eval-data "$m/val" --eval-every 6)

check "validation in eval mode" "${run[@]}" "${val[@]}" --eval-log "$tmp/ev.csv" \
    --losses "$tmp/l_eval.csv" --save "$tmp/s_eval.onnx"
check "eval mode = PyTorch model.eval() on the saved model" "$py" "$ref" check-eval "$m" \
    "$tmp/s_eval.onnx" "$tmp/ev.csv" --batch 8
check "validation in training mode" "${run[@]}" "${val[@]}" --eval-mode train \
    --eval-log "$tmp/ev_train.csv" --losses "$tmp/l_train.csv" --save "$tmp/s_train.onnx"
check "no validation" "${run[@]}" --losses "$tmp/l_none.csv" --save "$tmp/s_none.onnx"
for mode in eval train; do
    if cmp -s "$tmp/l_$mode.csv" "$tmp/l_none.csv" && cmp -s "$tmp/s_$mode.onnx" "$tmp/s_none.onnx"; then
        pass "--eval-mode $mode: validating changes no loss and no weight (byte for byte)"
    else
        fail "--eval-mode $mode: validation changed the training"
    fi
done
if [ "$(tail -n 1 "$tmp/ev.csv")" != "$(tail -n 1 "$tmp/ev_train.csv")" ]; then
    pass "training-mode validation differs from eval mode"
else
    fail "training-mode validation equals eval mode: $(tail -n 1 "$tmp/ev.csv")"
fi

check "--eval-every-epoch" "$tmp/prog" --data "$m/train" --epochs 3 --log-every 0 \
    --eval-data "$m/val" --eval-every-epoch --eval-log "$tmp/ev_epoch.csv"
check "--eval-every-epoch: steps 8, 16, 24" test "$(cut -d, -f1 "$tmp/ev_epoch.csv" | tr '\n' ' ')" \
    = "step 8 16 24 "

# Early stopping on the accuracy (higher is better), validating every step.
check "--early-stop with --keep-best" "$tmp/prog" --data "$m/train" --steps 40 --log-every 0 \
    --eval-data "$m/val" --eval-every 1 \
    --early-stop 3 --early-stop-metric accuracy:max --keep-best "$tmp/best.onnx" \
    --run-dir "$tmp/rd" --save "$tmp/last.onnx"
best=$("$py" - "$tmp/rd" <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = [[float(v) for v in r] for r in list(csv.reader(open(d + "/eval.csv")))[1:]]
best, best_step, stale, stop = None, None, 0, None
for step, loss, acc in rows:
    if best is None or acc > best:
        best, best_step, stale = acc, int(step), 0
    else:
        stale += 1
    if stale == 3:
        stop = int(step)
        break
run = json.load(open(d + "/run.json"))
losses = list(csv.reader(open(d + "/losses.csv")))[1:]
ok = (stop is not None and stop == int(rows[-1][0]) and len(losses) == stop
      and run["status"] == "stopped_early" and run["steps_done"] == stop
      and run["validation"]["best"]["step"] == best_step
      and run["validation"]["best"]["value"] == best and run["validation"]["metric"] == "accuracy")
print(best_step if ok else "bad: stop %s, rows %d, losses %d, run %s" % (
    stop, len(rows), len(losses), run["validation"]))
PY
)
case $best in
*bad* | "") fail "--early-stop: ${best:-no result}" ;;
*)
    pass "--early-stop: stopped after 3 validations without a better accuracy (best after step $best)"
    check "keep-best run to step $best" "$tmp/prog" --data "$m/train" --steps "$best" --log-every 0 \
        --save "$tmp/best_ref.onnx"
    check "--keep-best = the model after step $best, byte for byte" cmp "$tmp/best.onnx" \
        "$tmp/best_ref.onnx"
    ;;
esac

# bad metrics: exit 2 before training, naming the flag
expect_bad() { # LABEL PATTERN ARGS...
    local label=$1 pattern=$2
    shift 2
    "${run[@]}" "$@" >"$tmp/bad.out" 2>&1
    local rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pattern" "$tmp/bad.out" && ! grep -q "^step" "$tmp/bad.out"; then
        pass "$label"
    else
        fail "$label: exit $rc: $(cat "$tmp/bad.out")"
    fi
}
expect_bad "a metric without :min or :max" \
    "early-stop-metric accuracy: 'accuracy' is not the loss: say whether lower or higher is better with :min or :max (the outputs: loss, accuracy)" \
    "${val[@]}" --early-stop 2 --early-stop-metric accuracy
expect_bad "an unknown metric" "'acc' is not a scalar float output of the model (the outputs: loss, accuracy)" \
    "${val[@]}" --early-stop 2 --early-stop-metric acc:max
expect_bad "--early-stop needs --eval-data" "--early-stop needs --eval-data" --early-stop 2
expect_bad "--eval-mode's values" "--eval-mode needs eval or train, not 'test'" "${val[@]}" \
    --eval-mode test

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
