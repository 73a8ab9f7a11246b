#!/bin/bash
# Usage: examples_infer.sh PARALLAXC SRCDIR
#
# Every example model compiled with `parallaxc compile --infer --batch 8` gives
# PyTorch's loss on its first batch (reference.json, written by the export
# script from PyTorch itself) at the exported weights, within 1e-5 relative.
# The program runs on the whole data/ folder (k batches of 8), so this also
# checks the multi-batch path: batch i's loss must equal the loss of samples
# [8i, 8i+8) - checked for the second batch against the NumPy evaluator.
# Prints one line per example and "N passed, M failed"; non-zero on failure.
. "$(dirname "$0")/lib.sh" "$@"
passed=0
failed=0
for m in mlp cnn lstm_lm transformer_lm recommender; do
    dir=$src/examples/$m
    if ! "$parallaxc" compile --infer "$dir/model.onnx" --batch 8 -o "$tmp/$m" 2>"$tmp/$m.err"; then
        echo "FAIL $m: compile: $(head -c 600 "$tmp/$m.err")"
        failed=$((failed + 1))
        continue
    fi
    if ! "$tmp/$m" --data "$dir/data" --out "$tmp/$m.out" 2>"$tmp/$m.err"; then
        echo "FAIL $m: run: $(head -c 600 "$tmp/$m.err")"
        failed=$((failed + 1))
        continue
    fi
    # Second batch: samples 8..15 through the NumPy evaluator on the original model.
    if ! msg=$("$py" - "$dir" "$tmp/$m.out/loss.npy" "$src/tests/tools/onnx_ref_eval.py" <<'PY' 2>&1
import json, os, subprocess, sys
import numpy as np
d, losses_path, evaluator = sys.argv[1:4]
ref = json.load(open(os.path.join(d, "reference.json")))
losses = np.load(losses_path)
want = ref["losses"]["8"]
if abs(float(losses[0]) - want) > 1e-5 * abs(want):
    sys.exit("first batch loss %.8g, PyTorch %.8g" % (losses[0], want))
out = subprocess.run([sys.executable, evaluator, os.path.join(d, "model.onnx"), os.path.join(d, "data"),
                      "--offset", "8", "--batch", "8"],
                     capture_output=True, text=True, check=True).stdout.split()[-1]
if abs(float(losses[1]) - float(out)) > 1e-5 * abs(float(out)):
    sys.exit("second batch loss %.8g, NumPy evaluator %s" % (losses[1], out))
print("loss %.7f (PyTorch %.7f), %d batches" % (losses[0], want, len(losses)))
PY
    ); then
        echo "FAIL $m: $msg"
        failed=$((failed + 1))
    else
        echo "ok   $m: $msg"
        passed=$((passed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
