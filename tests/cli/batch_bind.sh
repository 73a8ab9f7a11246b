#!/bin/bash
# Usage: batch_bind.sh PARALLAXC SRCDIR
#
# The batch is bound with the input shapes and carried to the code
# generator: a training model whose inputs' leading dims are named apart
# (x: [N, 4], t: [M, 2]) trains when both are bound to the same batch, and
# --dim/--shape values that give them different leading dims are refused at
# compile time (exit 1, naming both inputs and their dims) rather than
# compiling a program that dies at start-up. The program compiled with the
# agreeing binding runs one step with the loss NumPy computes.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# loss = mean(x @ W) + mean(t * V): shape-compatible whatever N and M are.
if ! "$py" - "$tmp" >"$tmp/export.log" 2>&1 <<'PY'; then
import os, sys
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if a not in np.__dict__:
        setattr(np, a, t)
from onnx import TensorProto, helper, numpy_helper, save
out = sys.argv[1]
rng = np.random.default_rng(3)
W = rng.standard_normal((4, 2)).astype(np.float32)
V = rng.standard_normal((2,)).astype(np.float32)
nodes = [
    helper.make_node("MatMul", ["x", "W"], ["h"]),
    helper.make_node("ReduceMean", ["h"], ["a"], keepdims=0),
    helper.make_node("Mul", ["t", "V"], ["u"]),
    helper.make_node("ReduceMean", ["u"], ["b"], keepdims=0),
    helper.make_node("Add", ["a", "b"], ["loss"]),
]
g = helper.make_graph(
    nodes, "two_batches",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
     helper.make_tensor_value_info("t", TensorProto.FLOAT, ["M", 2])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(W, "W"), numpy_helper.from_array(V, "V")])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
     os.path.join(out, "two.onnx"))
os.makedirs(os.path.join(out, "data"))
x = rng.standard_normal((3, 4)).astype(np.float32)
t = rng.standard_normal((3, 2)).astype(np.float32)
np.save(os.path.join(out, "data", "x.npy"), x)
np.save(os.path.join(out, "data", "t.npy"), t)
with open(os.path.join(out, "want_loss"), "w") as f:
    f.write("%.9g\n" % ((x @ W).mean() + (t * V).mean()))
PY
    cat "$tmp/export.log"
    echo "FAIL could not write the test model"
    exit 1
fi
model=$tmp/two.onnx

# refused: compile NAME NEEDLE... ARGS after --: exit 1, stderr has every needle.
refused() {
    local name=$1
    shift
    local needles=()
    while [ "$1" != "--" ]; do
        needles+=("$1")
        shift
    done
    shift
    "$parallaxc" compile "$model" -o "$tmp/bad" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne 1 ]; then
        fail "$name: exit status $rc, expected 1"
        sed 's/^/    stderr: /' "$tmp/err" | head -n 5
        return
    fi
    for n in "${needles[@]}"; do
        if ! grep -qF -- "$n" "$tmp/err"; then
            fail "$name: stderr does not mention: $n"
            sed 's/^/    stderr: /' "$tmp/err" | head -n 5
            return
        fi
    done
    if [ -e "$tmp/bad" ]; then
        fail "$name: a program was written"
        return
    fi
    echo "PASS $name"
}
refused "--dim N and M disagree" "'x'" "'t'" "leading dims 4 and 3" -- --dim N=4 --dim M=3
refused "--shape x and t disagree" "'x'" "'t'" "leading dims 2 and 5" -- --shape x=2x4 --shape t=5x2
refused "--batch with --dim M apart" "'x'" "'t'" "leading dims 3 and 6" -- --batch 3 --dim M=6

# agreeing bindings compile; the program trains one step with NumPy's loss
for flags in "--batch 3" "--dim N=3 --dim M=3" "--shape x=3x4 --dim M=3"; do
    # shellcheck disable=SC2086
    if ! "$parallaxc" compile "$model" -o "$tmp/prog" $flags --optimizer sgd --lr 0.1 \
        >"$tmp/out" 2>"$tmp/err"; then
        fail "compile with $flags"
        sed 's/^/    stderr: /' "$tmp/err" | head -n 5
        continue
    fi
    if ! "$tmp/prog" --data "$tmp/data" --steps 1 --losses "$tmp/losses.csv" >"$tmp/run.log" 2>&1; then
        fail "run compiled with $flags"
        sed 's/^/    /' "$tmp/run.log" | head -n 5
        continue
    fi
    got=$(awk -F, 'NR == 2 { print $2 }' "$tmp/losses.csv")
    if "$py" -c "import sys; g, w = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(g - w) > 1e-5 * max(1, abs(w)))" \
        "$got" "$(cat "$tmp/want_loss")"; then
        echo "PASS compile and run with $flags (loss $got)"
    else
        fail "run with $flags: loss $got, NumPy $(cat "$tmp/want_loss")"
    fi
done

if [ $failed -ne 0 ]; then
    echo "$failed failed"
    exit 1
fi
echo "all passed"
