#!/bin/bash
# Usage: train_batchnorm.sh PARALLAXC SRCDIR
# BatchNormalization in training mode (a PyTorch TrainingMode.TRAINING export):
# 6 SGD steps follow PyTorch's losses (relative 1e-4), trained weights, and
# running statistics updated as PyTorch's module updates them (read back from
# --save). Exits non-zero on a mismatch.
. "$(dirname "$0")/lib.sh" "$@"
"$py" "$src/tests/tools/batchnorm_reference.py" "$tmp" >"$tmp/ref.log" 2>&1 ||
    { echo "FAIL reference: $(tail -n 5 "$tmp/ref.log")"; exit 1; }
"$parallaxc" compile "$tmp/model.onnx" -o "$tmp/prog" --batch 4 --optimizer sgd --lr 0.1 ||
    { echo "FAIL compile"; exit 1; }
"$tmp/prog" --data "$tmp/data" --steps 6 --log-every 0 --losses "$tmp/l.csv" \
    --save "$tmp/out.onnx" || { echo "FAIL run"; exit 1; }
"$py" - "$tmp" <<'PY'
import sys
import numpy as np
for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, _a):
        setattr(np, _a, _t)
import onnx
from onnx import numpy_helper
d = sys.argv[1]
ref = np.load(d + "/reference.npz")
ours = np.loadtxt(d + "/l.csv", delimiter=",", skiprows=1)[:, 1]
bad = 0
err = np.max(np.abs(ours - ref["losses"]) / np.abs(ref["losses"]))
print("loss max relative error %.3g" % err)
if err > 1e-4:
    print("FAIL losses: ours %s, PyTorch %s" % (ours, ref["losses"]))
    bad += 1
init = {t.name: numpy_helper.to_array(t) for t in onnx.load(d + "/out.onnx").graph.initializer}
for name in ref.files:
    if name == "losses":
        continue
    if name not in init:
        print("FAIL %s missing from the saved model" % name)
        bad += 1
        continue
    e = np.max(np.abs(init[name] - ref[name]))
    print("%-20s max abs error %.3g" % (name, e))
    if e > 1e-5 * max(1.0, np.max(np.abs(ref[name]))):
        print("FAIL %s: ours %s, PyTorch %s" % (name, init[name], ref[name]))
        bad += 1
sys.exit(1 if bad else 0)
PY
