#!/bin/bash
# Usage: save_infer.sh PARALLAXC SRCDIR
#
# --save-infer OUT.onnx --outputs NAME[,NAME]: a model to serve, checked with
# ONNX Runtime (onnxruntime-node from npm, which scripts/install-deps.sh
# installs; the test fails without it) against PyTorch.
#   - A classifier with BatchNorm1d and Dropout(0.4), trained 12 steps: the
#     model with --outputs logits has the input x only (no labels), passes
#     onnx.checker, and ONNX Runtime's logits on the validation set equal
#     PyTorch's model.eval() with the trained weights and running statistics
#     of --save (1e-5); --outputs logits,accuracy keeps the labels, and with
#     --save-external the weights go to OUT.onnx.data.
#   - parallaxc compile --infer of the served model gives ONNX Runtime's
#     logits (1e-5).
#   - The recommender on 2 ranks, its embedding tables on parameter-server
#     shards, served at an inner value ('/mlp/mlp.4/Gemm_output_0'):
#     ONNX Runtime's output on the served model equals parallaxc's inference
#     program built from --save's model with --outputs the same value.
#   - An unknown --outputs name fails before training, listing the model's
#     outputs and what the loss is computed from; --save-infer without
#     --outputs is refused naming both flags.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ref=$src/tests/tools/eval_mode_reference.py
ort_js=$src/tests/tools/ort_eval.js
if ! node_path=$(bash "$src/tests/tools/ort_node_path.sh" 2>"$tmp/ort.log"); then
    fail "ONNX Runtime for Node.js: $(cat "$tmp/ort.log")"
    echo "$passed passed, $failed failed"
    exit 1
fi
ort() { NODE_PATH=$node_path node "$ort_js" "$@"; }
measured() { grep -h "max" "$tmp/log" | sed 's/^/     /'; } # the last check's numbers

m=$tmp/m
"$py" "$ref" make "$m" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; exit 1; }
"$parallaxc" compile "$m/model.onnx" -o "$tmp/prog" --batch 8 --optimizer momentum --lr 0.05 \
    --loss loss >"$tmp/compile.log" 2>&1 || { cat "$tmp/compile.log"; exit 1; }
run=("$tmp/prog" --data "$m/train" --steps 12 --log-every 0 --shuffle 1)
check "train with --save-infer --outputs logits" "${run[@]}" --save "$tmp/s.onnx" \
    --save-infer "$tmp/i.onnx" --outputs logits
"$py" "$ref" ort-inputs "$m" "$tmp/x.json" && "$py" "$ref" ort-inputs "$m" "$tmp/xy.json" --labels ||
    fail "ONNX Runtime inputs"
check "ONNX Runtime runs the served model" ort "$tmp/i.onnx" "$tmp/x.json" "$tmp/i.out.json"
check "served logits = PyTorch model.eval() (ONNX Runtime)" "$py" "$ref" check-infer "$m" \
    "$tmp/s.onnx" "$tmp/i.onnx" "$tmp/i.out.json" logits
measured
check "train with --outputs logits,accuracy --save-external" "${run[@]}" --save "$tmp/s2.onnx" \
    --save-infer "$tmp/i2.onnx" --outputs logits,accuracy --save-external
check "--save-external: the weights in OUT.onnx.data" test -s "$tmp/i2.onnx.data"
check "ONNX Runtime runs it (with the labels)" ort "$tmp/i2.onnx" "$tmp/xy.json" "$tmp/i2.out.json"
check "logits and accuracy = PyTorch model.eval()" "$py" "$ref" check-infer "$m" "$tmp/s2.onnx" \
    "$tmp/i2.onnx" "$tmp/i2.out.json" logits,accuracy
measured

# parallaxc's own inference program on the served model
check "compile --infer the served model" "$parallaxc" compile --infer "$tmp/i.onnx" -o "$tmp/serve" \
    --batch 8
check "run it" "$tmp/serve" --data "$m/val" --out "$tmp/serve.out"
check "parallaxc --infer = ONNX Runtime" "$py" - "$tmp/serve.out/logits.npy" "$tmp/i.out.json" <<'PY'
import json, sys
import numpy as np
ours = np.load(sys.argv[1])
ort = json.load(open(sys.argv[2]))["logits"]
want = np.array(ort["data"], dtype=np.float64).reshape(ort["dims"])
err = float(np.max(np.abs(ours - want)))
print("max |ours - onnxruntime| %.3g over %s" % (err, ours.shape))
sys.exit(0 if ours.shape == want.shape and err <= 1e-5 * max(1.0, float(np.max(np.abs(want)))) else 1)
PY
measured

# 2 ranks, parameter-server tables, an inner value
ex=$src/examples/recommender
inner=/mlp/mlp.4/Gemm_output_0
"$parallaxc" compile "$ex/model.onnx" -o "$tmp/rec" --batch 4 --optimizer adam --lr 0.01 \
    >"$tmp/rec.log" 2>&1 || fail "recommender compile: $(tail -c 400 "$tmp/rec.log")"
check "recommender on 2 ranks with --save-infer" mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$tmp/rec" --data "$ex/data" --steps 10 --log-every 0 --save "$tmp/rec_s.onnx" \
    --save-infer "$tmp/rec_i.onnx" --outputs "$inner"
check "compile --infer of --save's model at that value" "$parallaxc" compile --infer \
    "$tmp/rec_s.onnx" -o "$tmp/rec_serve" --batch 8 --outputs "$inner"
check "run it" "$tmp/rec_serve" --data "$ex/data" --out "$tmp/rec.out"
"$py" -W ignore - "$ex/data" "$tmp/rec_in.json" "$tmp/rec_i.onnx" <<'PY' || fail "recommender inputs"
import json, os, sys
import numpy as np
for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, _a):
        setattr(np, _a, _t)
import onnx
names = [i.name for i in onnx.load(sys.argv[3]).graph.input]
feeds = {}
for n in names:
    a = np.load(os.path.join(sys.argv[1], n + ".npy"))[:64]
    feeds[n] = {"type": "int64" if a.dtype.kind in "iu" else "float32", "dims": list(a.shape),
                "data": a.ravel().tolist()}
json.dump(feeds, open(sys.argv[2], "w"))
print("served inputs: %s" % names)
PY
check "ONNX Runtime runs the recommender's served model" ort "$tmp/rec_i.onnx" "$tmp/rec_in.json" \
    "$tmp/rec_i.out.json"
check "served (ONNX Runtime) = parallaxc --infer on --save's model" "$py" - "$tmp/rec.out" \
    "$tmp/rec_i.out.json" "$inner" <<'PY'
import json, os, sys
import numpy as np
ort = json.load(open(sys.argv[2]))
name = sys.argv[3]
want = np.array(ort[name]["data"], dtype=np.float64).reshape(ort[name]["dims"])
ours = np.load(os.path.join(sys.argv[1], name.replace("/", "_").replace(":", "_") + ".npy"))[:64]
err = float(np.max(np.abs(ours - want)))
print("inputs %s; max |ours - onnxruntime| %.3g" % (ort["__inputs"], err))
sys.exit(0 if "label" not in ort["__inputs"] and err <= 1e-5 * max(1.0, float(np.max(np.abs(want)))) else 1)
PY
measured

# errors
"${run[@]}" --save-infer "$tmp/bad.onnx" --outputs logit >"$tmp/bad.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && ! grep -q "^step" "$tmp/bad.out" &&
    grep -q "\-\-outputs: the model has no value named 'logit' (the model's outputs: loss, accuracy, logits; the loss 'loss' is computed by SoftmaxCrossEntropyLoss from 'logits', 'y')" "$tmp/bad.out"; then
    pass "an unknown --outputs name: refused before training, naming the outputs and the loss's inputs"
else
    fail "unknown --outputs: exit $rc: $(cat "$tmp/bad.out")"
fi
"${run[@]}" --save-infer "$tmp/bad.onnx" >"$tmp/bad.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "\-\-save-infer needs --outputs NAME" "$tmp/bad.out"; then
    pass "--save-infer without --outputs is refused"
else
    fail "--save-infer without --outputs: exit $rc: $(cat "$tmp/bad.out")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
