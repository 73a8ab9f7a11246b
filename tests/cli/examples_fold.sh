#!/bin/bash
# Usage: examples_fold.sh PARALLAXC SRCDIR
#
# For every example model: fold it at --batch 8 with
#   parallaxc inspect MODEL --batch 8 --stage folded --format onnx -o FOLDED
# and check the folded ONNX model:
#   1. it passes tests/tools/onnx_check.py (or onnx.checker when that is absent);
#   2. every value (graph inputs, outputs and every node output, via value_info)
#      has a fully static shape, the inputs have batch 8, the loss is a scalar;
#   3. no shape arithmetic is left: no Shape/Size/ConstantOfShape/Range node, and
#      no node whose inputs are all constants (initializers or Constant outputs)
#      of integer/bool type, nor any node fed only by Constant nodes;
#   4. every initializer of the original model is still an initializer (they
#      are the trainable weights: folding must never compute through them);
#   5. tests/tools/onnx_ref_eval.py (an independent NumPy evaluator) gives the
#      same loss on the folded model as PyTorch did (reference.json, rel 1e-5).
# The evaluator is first run on the original model, which checks the evaluator
# and the data themselves. Prints one line per example, then "N passed, M failed";
# exits non-zero on any failure.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PARALLAXC SRCDIR" >&2
    exit 2
fi
parallaxc=$1
src=$2
py=/usr/bin/python3 # Debian's interpreter: it has onnx and numpy
models="mlp cnn lstm_lm transformer_lm recommender"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Structural checks on a folded model (2-4 above). Prints problems, exits 1 on any.
cat >"$tmp/check_folded.py" <<'EOF'
import sys

import numpy as np

for alias, typ in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, alias, typ)
import onnx  # noqa: E402
from onnx import TensorProto  # noqa: E402

folded_path, original_path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
folded = onnx.load(folded_path).graph
original = onnx.load(original_path).graph
problems = []
INTEGRAL = {TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
            TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64,
            TensorProto.BOOL}


def static_dims(vi):
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return dims


# 2. static shapes everywhere
typed = {}
for vi in list(folded.input) + list(folded.output) + list(folded.value_info):
    dims = static_dims(vi)
    if dims is None:
        problems.append("value %r has no fully static shape" % vi.name)
    typed[vi.name] = dims
inits = {init.name: init for init in folded.initializer}
for node in folded.node:
    for name in node.output:
        if name and name not in typed:
            problems.append("node %r (%s) output %r has no value_info"
                            % (node.name, node.op_type, name))
for vi in folded.input:
    dims = typed.get(vi.name)
    if vi.name not in inits and dims is not None and (not dims or dims[0] != batch):
        problems.append("input %r has shape %s, expected batch %d first" % (vi.name, dims, batch))
losses = [vi for vi in folded.output if vi.name == "loss"]
if not losses:
    problems.append("no output named 'loss'")
elif typed.get("loss") not in ([], None):
    problems.append("loss has shape %s, expected a scalar" % typed["loss"])

# 3. nothing foldable left
const_type = {name: init.data_type for name, init in inits.items()}
from_constant_node = set()
for node in folded.node:
    if node.op_type == "Constant":
        value = [a.t.data_type for a in node.attribute if a.name == "value"]
        for name in node.output:
            const_type[name] = value[0] if value else TensorProto.UNDEFINED
            from_constant_node.add(name)
for node in folded.node:
    label = "node %r (%s)" % (node.name, node.op_type)
    if node.op_type in ("Shape", "Size", "ConstantOfShape", "Range"):
        problems.append("%s: shape arithmetic left after folding" % label)
        continue
    if node.op_type == "Constant":
        continue
    ins = [name for name in node.input if name]
    if not ins or not all(name in const_type for name in ins):
        continue
    if all(name in from_constant_node for name in ins) or \
            all(const_type[name] in INTEGRAL for name in ins):
        problems.append("%s: all inputs constant (%s), should have been folded"
                        % (label, ", ".join(ins)))

# 4. trainable weights kept
for init in original.initializer:
    if init.name not in inits:
        problems.append("original initializer %r is gone from the folded model" % init.name)

for p in problems[:20]:
    print(p)
if len(problems) > 20:
    print("... and %d more" % (len(problems) - 20))
sys.exit(1 if problems else 0)
EOF

# 1. ONNX validity: the shared checker when it exists, else onnx.checker.
onnx_check() {
    if [ -f "$src/tests/tools/onnx_check.py" ]; then
        "$py" "$src/tests/tools/onnx_check.py" "$1"
    else
        "$py" -c '
import sys
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if a not in np.__dict__:
        setattr(np, a, t)
import onnx
onnx.checker.check_model(onnx.load(sys.argv[1]))
' "$1"
    fi
}

passed=0
failed=0
for m in $models; do
    dir="$src/examples/$m"
    folded="$tmp/$m.folded.onnx"
    log="$tmp/$m.log"
    ref="$dir/reference.json"
    why=""
    # -u: the loss (stdout) must precede the evaluator's stderr note in $log.
    if ! "$py" -u "$src/tests/tools/onnx_ref_eval.py" "$dir/model.onnx" "$dir/data" --batch 8 \
        --reference "$ref" >"$log" 2>&1; then
        why="evaluator disagrees with PyTorch on the ORIGINAL model"
    elif ! "$parallaxc" inspect "$dir/model.onnx" --batch 8 --stage folded --format onnx \
        -o "$folded" >"$log" 2>&1; then
        why="parallaxc inspect --stage folded failed"
    elif [ ! -s "$folded" ]; then
        why="parallaxc inspect wrote no $folded"
    elif ! onnx_check "$folded" >"$log" 2>&1; then
        why="folded model is not valid ONNX"
    elif ! "$py" "$tmp/check_folded.py" "$folded" "$dir/model.onnx" 8 >"$log" 2>&1; then
        why="folded model is not fully static/folded"
    elif ! "$py" -u "$src/tests/tools/onnx_ref_eval.py" "$folded" "$dir/data" --batch 8 \
        --reference "$ref" >"$log" 2>&1; then
        why="folded model's loss differs from PyTorch's"
    fi
    if [ -z "$why" ]; then
        echo "PASS $m: folded, static, loss $(head -n 1 "$log")"
        passed=$((passed + 1))
    else
        echo "FAIL $m: $why"
        sed 's/^/    /' "$log" | head -n 25
        failed=$((failed + 1))
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
