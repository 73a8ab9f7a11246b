#!/bin/bash
# Usage: train_eval.sh PARALLAXC SRCDIR
#
# Validation (--eval-data, --eval-every, --eval-log) and training metrics
# against PyTorch. tests/tools/eval_reference.py exports a classifier whose
# forward returns the loss and the accuracy (compiled with --loss loss), a
# training set and a validation set of 42 samples (the last partial global
# batch is left out). Each run trains 30 steps at global batch 4, validating
# every 10; the reference trains the same module with torch.optim.SGD and
# computes the validation loss and accuracy of the same weights at the same
# steps. Checked: --losses has step,loss,accuracy of every step; --eval-log
# has step,loss,accuracy of every validation; losses within 1e-4 relative,
# accuracy exact. Runs: 1 rank, and 2 ranks at batch 2 with --comm hybrid
# and ps (pushes and AllReduce skipped during validation; the numbers are
# the same). A run without validation trains to the same losses bit for bit
# (a validation changes nothing). Bad combinations exit 2; float64 and
# Fortran-ordered data are refused with the NumPy call that fixes them.
. "$(dirname "$0")/lib.sh" "$@"
ref=$src/tests/tools/eval_reference.py
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failed=0

"$py" "$ref" make "$tmp" >"$tmp/make.log" 2>&1 || {
    cat "$tmp/make.log"
    exit 1
}
# name | per-rank batch | ranks | comm
runs=("one|4|1|hybrid" "two-hybrid|2|2|hybrid" "two-ps|2|2|ps")
for c in "${runs[@]}"; do
    IFS='|' read -r name b ranks comm <<<"$c"
    if ! "$parallaxc" compile "$tmp/model.onnx" -o "$tmp/$name.prog" --batch "$b" --comm "$comm" \
        --optimizer sgd --lr 0.3 --loss loss >"$tmp/$name.log" 2>&1; then
        fail "$name: compile: $(cat "$tmp/$name.log")"
        continue
    fi
    launch=()
    [ "$ranks" -gt 1 ] && launch=(mpirun --allow-run-as-root --oversubscribe -np "$ranks")
    if ! timeout 120 "${launch[@]}" "$tmp/$name.prog" --data "$tmp/train" --steps 30 \
        --eval-data "$tmp/val" --eval-every 10 --eval-log "$tmp/$name.eval.csv" \
        --losses "$tmp/$name.csv" --log-every 10 >"$tmp/$name.log" 2>&1; then
        fail "$name: run: $(tail -c 800 "$tmp/$name.log")"
        continue
    fi
    if ! { grep -q "accuracy" "$tmp/$name.log" && grep -q "ETA" "$tmp/$name.log" &&
        grep -q "validation after step 10:" "$tmp/$name.log" &&
        grep -q "last 2 samples do not fill" "$tmp/$name.log"; }; then
        fail "$name: the progress lines lack accuracy, ETA, validation or the note: $(cat "$tmp/$name.log")"
    fi
    if out=$("$py" "$ref" check "$tmp" --batch 4 --lr 0.3 --steps 30 --every 10 \
        "$tmp/$name.csv" "$tmp/$name.eval.csv" 2>&1); then
        echo "$name ($ranks rank(s), $comm): $out"
    else
        fail "$name: $out"
    fi
done

# Validation changes nothing: the same run without it gives the same losses.
if "$tmp/one.prog" --data "$tmp/train" --steps 30 --losses "$tmp/plain.csv" --log-every 0 \
    >"$tmp/plain.log" 2>&1; then
    cmp -s "$tmp/plain.csv" "$tmp/one.csv" || fail "validation changed the training losses"
else
    fail "plain run: $(cat "$tmp/plain.log")"
fi

for bad in "--eval-every 5" "--eval-log $tmp/x.csv" "--eval-data $tmp/nowhere"; do
    # shellcheck disable=SC2086
    "$tmp/one.prog" --data "$tmp/train" --steps 2 $bad >"$tmp/bad.log" 2>&1
    rc=$?
    if ! { [ "$rc" -ne 0 ] && grep -q -- "--eval-" "$tmp/bad.log"; }; then
        fail "'$bad': exit $rc: $(cat "$tmp/bad.log")"
    fi
done

# Data errors say how to fix the data.
mkdir -p "$tmp/f64" "$tmp/fortran"
"$py" - "$tmp" <<'PY'
import sys, numpy as np
t = sys.argv[1]
x, y = np.load(t + "/train/x.npy"), np.load(t + "/train/y.npy")
np.save(t + "/f64/x.npy", x.astype(np.float64)); np.save(t + "/f64/y.npy", y)
np.save(t + "/fortran/x.npy", np.asfortranarray(x)); np.save(t + "/fortran/y.npy", y)
PY
for c in "f64|x.astype(np.float32)" "fortran|np.ascontiguousarray(x)"; do
    IFS='|' read -r dir hint <<<"$c"
    "$tmp/one.prog" --data "$tmp/$dir" --steps 1 >"$tmp/bad.log" 2>&1
    rc=$?
    if ! { [ "$rc" -eq 1 ] && grep -qF "$hint" "$tmp/bad.log"; }; then
        fail "$dir data: exit $rc, no '$hint': $(cat "$tmp/bad.log")"
    fi
done

if [ "$failed" -ne 0 ]; then
    echo "$failed failure(s)"
    exit 1
fi
echo "all passed"
