#!/bin/bash
# Usage: weights.sh PARALLAXC SRCDIR
# Weights are loaded, not linked: a generated recommender with a 128 MB
# embedding table (ONNX external data) compiles to a small program that
# trains from the model's weights (first loss = NumPy's, reading only the
# touched rows); --weights reads a model --save wrote (loss = the NumPy ONNX
# evaluator's on that model, for training and inference programs); a
# different model is refused naming the first mismatch; a moved model gives
# a message naming the path and --weights.
. "$(dirname "$0")/lib.sh" "$@"
# refused LABEL "TEXT1|TEXT2..." COMMAND...: exits 1 and stderr has every TEXT.
refused() {
    local label=$1 texts=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$? ok=1 t
    [ "$rc" -eq 1 ] || ok=0
    IFS='|' read -ra want <<<"$texts"
    for t in "${want[@]}"; do grep -qF -- "$t" "$tmp/err" || ok=0; done
    if [ "$ok" = 1 ]; then
        echo "PASS $label: $(head -c 300 "$tmp/err")"
        passed=$((passed + 1))
    else
        echo "FAIL $label (status $rc): $(head -c 800 "$tmp/err")"
        failed=$((failed + 1))
    fi
}
close() { # A B: |a - b| <= 1e-5 |b|
    "$py" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); \
sys.exit(0 if abs(a - b) <= 1e-5 * abs(b) else 1)" "$1" "$2"
}
differ() { ! close "$1" "$2"; }
loss_at() { # FILE.csv STEP
    awk -F, -v s="$2" '$1 == s { print $2 }' "$1"
}
ref_loss() { # reference.json BATCH
    "$py" -c "import json, sys; print(json.load(open(sys.argv[1]))['losses'][sys.argv[2]])" "$1" "$2"
}

gen=$src/examples/big_recommender/generate.py
check "generate a 128 MB table" "$py" "$gen" "$tmp/big" --tables 2 --rows 2000000,1000 --dim 16
big=$tmp/big/model.onnx
start=$(date +%s.%N)
check "compile" "$parallaxc" compile "$big" -o "$tmp/big.prog" --batch 4 --optimizer sgd --lr 0.1
secs=$("$py" -c "import sys, time; print('%.2f' % (time.time() - float(sys.argv[1])))" "$start")
bytes=$(stat -c %s "$tmp/big.prog")
echo "compile: ${secs} s, program ${bytes} bytes, tables $(stat -c %s "$tmp/big/model.onnx.data") bytes"
check "program < 20 MB" test "$bytes" -lt 20000000
check "train 6 steps" "$tmp/big.prog" --data "$tmp/big/data" --steps 6 --log-every 0 \
    --losses "$tmp/big.csv"
check "first loss = NumPy on the touched rows" close "$(loss_at "$tmp/big.csv" 1)" \
    "$(ref_loss "$tmp/big/reference.json" 4)"

# Another model of the same graph but a different table size; another graph.
check "generate a different model" "$py" "$gen" "$tmp/other" --tables 2 --rows 2000,1000 --dim 16
refused "a model with another table shape" "table_0.weight|[2000,16]|[2000000,16]" \
    "$tmp/big.prog" --data "$tmp/big/data" --steps 1 --weights "$tmp/other/model.onnx"

rec=$src/examples/recommender
check "compile the recommender" "$parallaxc" compile "$rec/model.onnx" -o "$tmp/rec.prog" \
    --batch 4 --optimizer sgd --lr 0.5
check "train 20 steps, --save" "$tmp/rec.prog" --data "$rec/data" --steps 20 --log-every 0 \
    --save "$tmp/trained.onnx"
check "--weights trained.onnx: 1 step" "$tmp/rec.prog" --data "$rec/data" --steps 1 \
    --log-every 0 --losses "$tmp/cont.csv" --weights "$tmp/trained.onnx"
want=$("$py" "$src/tests/tools/onnx_ref_eval.py" "$tmp/trained.onnx" "$rec/data" --batch 4)
check "its loss = the ONNX evaluator's on trained.onnx" close "$(loss_at "$tmp/cont.csv" 1)" "$want"
orig=$("$py" "$src/tests/tools/onnx_ref_eval.py" "$rec/model.onnx" "$rec/data" --batch 4)
check "and not the exported weights' loss" differ "$(loss_at "$tmp/cont.csv" 1)" "$orig"
check "compile --infer" "$parallaxc" compile --infer "$rec/model.onnx" -o "$tmp/rec.infer" --batch 4
check "inference with --weights trained.onnx" "$tmp/rec.infer" --data "$rec/data" \
    --out "$tmp/outdir" --weights "$tmp/trained.onnx"
got=$("$py" -c "import numpy as np, sys; print(repr(float(np.load(sys.argv[1])[0])))" "$tmp/outdir/loss.npy")
check "inference loss = the ONNX evaluator's on trained.onnx" close "$got" "$want"

"$py" - "$rec/model.onnx" "$tmp" <<'EOF'
import sys
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    a in np.__dict__ or setattr(np, a, t)
import onnx
model, out = sys.argv[1], sys.argv[2]
m = onnx.load(model)
relu = next(n for n in m.graph.node if n.op_type == "Relu")
relu.op_type = "Sigmoid"
onnx.save(m, out + "/sigmoid.onnx")
m = onnx.load(model)
del m.graph.initializer[3]  # mlp.0.weight
onnx.save(m, out + "/missing.onnx")
EOF
refused "a model with another op" "differs from the compiled one at node #7|Sigmoid|sigmoid.onnx" \
    "$tmp/rec.prog" --data "$rec/data" --steps 1 --weights "$tmp/sigmoid.onnx"
refused "a model without an initializer" "has no initializer 'mlp.0.weight'|missing.onnx" \
    "$tmp/rec.prog" --data "$rec/data" --steps 1 --weights "$tmp/missing.onnx"
refused "a file that is not a model" "not a valid ONNX model|$tmp/rec.prog" \
    "$tmp/rec.prog" --data "$rec/data" --steps 1 --weights "$tmp/rec.prog"
refused "inference: a model with another op" "node #7|Sigmoid" \
    "$tmp/rec.infer" --data "$rec/data" --out "$tmp/out2" --weights "$tmp/sigmoid.onnx"

# The program finds its model by the absolute path recorded at compile time.
mkdir -p "$tmp/a"
cp "$rec/model.onnx" "$tmp/a/model.onnx"
check "compile from a/" "$parallaxc" compile "$tmp/a/model.onnx" -o "$tmp/moved.prog" --batch 4
(cd / && "$tmp/moved.prog" --data "$rec/data" --steps 1 --log-every 0 --losses "$tmp/m1.csv") \
    >"$tmp/log" 2>&1
check "runs from another folder" test -s "$tmp/m1.csv"
mv "$tmp/a" "$tmp/b"
refused "moved model" "cannot open the model $tmp/a/model.onnx|--weights" \
    "$tmp/moved.prog" --data "$rec/data" --steps 1 --log-every 0
check "moved model with --weights" "$tmp/moved.prog" --data "$rec/data" --steps 1 \
    --log-every 0 --losses "$tmp/m2.csv" --weights "$tmp/b/model.onnx"
check "same loss" cmp "$tmp/m1.csv" "$tmp/m2.csv"
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
