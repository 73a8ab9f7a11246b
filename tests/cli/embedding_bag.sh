#!/bin/bash
# Usage: embedding_bag.sh PARALLAXC SRCDIR
#
# nn.EmbeddingBag as PyTorch 1.13 exports it (a Loop over the bags, opset 17,
# training=TrainingMode.TRAINING), with constant folding on and off (off,
# the Loop's conditions are Casts of int64 constants): for modes sum / mean /
# max, with offsets (including an empty bag), include_last_offset,
# per_sample_weights, fixed 2-D bags with a symbolic batch, and padding_idx
# (modes sum and mean, through python/parallax's symbolic: torch refuses
# it), `parallaxc compile --infer` must give PyTorch's own output (max
# error 1e-6) and `inspect` must classify the table sparse, as it must the
# three tables of examples/dlrm.
# A Loop with a constant trip count is unrolled (checked against NumPy).
# Control flow it cannot compile is refused naming the node, exit status 1:
# an If on a run-time condition, and a Loop on a run-time trip count that is
# not an EmbeddingBag.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 PARALLAXC SRCDIR" >&2
    exit 2
fi
parallaxc=$1
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
    echo "FAIL $1"
    failed=$((failed + 1))
}

# Export the cases: TMP/<case>/model.onnx, data/*.npy, expected.npy.
if ! "$py" - "$tmp" "$2" <<'PY' >"$tmp/export.log" 2>&1; then
import os, sys, warnings
sys.path.insert(0, os.path.join(sys.argv[2], "python"))
import parallax
parallax.register_loss_symbolics()  # nn.EmbeddingBag(padding_idx=...)
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if a not in np.__dict__:
        setattr(np, a, t)
import onnx
from onnx import TensorProto, helper
import torch
warnings.filterwarnings("ignore")
torch.manual_seed(0)
out = sys.argv[1]

class Bag(torch.nn.Module):
    def __init__(self, mode, **kw):
        super().__init__()
        self.e = torch.nn.EmbeddingBag(20, 5, mode=mode, **kw)
    def forward(self, *args):
        if len(args) == 1:
            return self.e(args[0])
        if len(args) == 2:
            return self.e(args[0], args[1])
        return self.e(args[0], args[1], per_sample_weights=args[2])

def case(name, mode, inputs, dynamic=None, **kw):
    for fold in (True, False):
        d = os.path.join(out, name + ("_folded" if fold else "_unfolded"))
        os.makedirs(os.path.join(d, "data"))
        torch.manual_seed(0)
        m = Bag(mode, **kw)
        names = [n for n, _ in inputs]
        tensors = tuple(torch.from_numpy(a) for _, a in inputs)
        torch.onnx.export(m, tensors, os.path.join(d, "model.onnx"), opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, input_names=names,
                          output_names=["y"], dynamic_axes=dynamic, do_constant_folding=fold)
        for n, a in inputs:
            np.save(os.path.join(d, "data", n + ".npy"), a)
        with torch.no_grad():
            np.save(os.path.join(d, "expected.npy"), m(*tensors).numpy())

rng = np.random.RandomState(1)
x = rng.randint(0, 20, 9).astype(np.int64)
x[[2, 5]] = 0  # the padding id of the padding_idx cases
off = np.array([0, 3, 3, 7], np.int64)  # bag 1 is empty
w = rng.rand(9).astype(np.float32)
x2 = rng.randint(0, 20, (4, 3)).astype(np.int64)
x2[1, 1] = 0
x2[2, :] = 0  # all padding
for mode in ("sum", "mean", "max"):
    case("offsets_" + mode, mode, [("x", x), ("off", off)])
case("weights_sum", "sum", [("x", x), ("off", off), ("w", w)])
case("last_offset_mean", "mean", [("x", x), ("off", np.append(off, 9))],
     include_last_offset=True)
case("fixed_mean", "mean", [("x", x2)], dynamic={"x": {0: "batch"}})
case("fixed_max", "max", [("x", x2)], dynamic={"x": {0: "batch"}})
case("padding_sum", "sum", [("x", x), ("off", off)], padding_idx=0)
case("padding_mean", "mean", [("x", x), ("off", off)], padding_idx=0)
case("fixed_padding_mean", "mean", [("x", x2)], dynamic={"x": {0: "batch"}}, padding_idx=0)

# An If on a run-time condition, and a Loop that is not an EmbeddingBag.
f = helper.make_tensor_value_info
then_g = helper.make_graph([helper.make_node("Identity", ["a"], ["t"])], "then", [],
                           [f("t", TensorProto.FLOAT, [2])])
else_g = helper.make_graph([helper.make_node("Neg", ["a"], ["e"])], "else", [],
                           [f("e", TensorProto.FLOAT, [2])])
g = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="runtime_if",
                                        then_branch=then_g, else_branch=else_g)], "g",
                      [f("c", TensorProto.BOOL, []), f("a", TensorProto.FLOAT, [2])],
                      [f("y", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "runtime_if.onnx"))
body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                          helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"])], "body",
                         [f("i", TensorProto.INT64, []), f("cond_in", TensorProto.BOOL, []),
                          f("acc_in", TensorProto.FLOAT, [2])],
                         [f("cond_out", TensorProto.BOOL, []), f("acc_out", TensorProto.FLOAT, [2])])
g = helper.make_graph([helper.make_node("Loop", ["n", "", "a"], ["y"], name="doubling_loop",
                                        body=body)], "g",
                      [f("n", TensorProto.INT64, []), f("a", TensorProto.FLOAT, [2])],
                      [f("y", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "other_loop.onnx"))
# The same body with a constant trip count and a scan output: it unrolls.
body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                          helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"]),
                          helper.make_node("Identity", ["acc_out"], ["scan"])], "body",
                         [f("i", TensorProto.INT64, []), f("cond_in", TensorProto.BOOL, []),
                          f("acc_in", TensorProto.FLOAT, [2])],
                         [f("cond_out", TensorProto.BOOL, []), f("acc_out", TensorProto.FLOAT, [2]),
                          f("scan", TensorProto.FLOAT, [2])])
three = helper.make_tensor("three", TensorProto.INT64, [], [3])
g = helper.make_graph([helper.make_node("Constant", [], ["n"], value=three),
                       helper.make_node("Loop", ["n", "", "a"], ["y", "s"], name="const_loop",
                                        body=body)], "g",
                      [f("a", TensorProto.FLOAT, [2])],
                      [f("y", TensorProto.FLOAT, [2]), f("s", TensorProto.FLOAT, [3, 2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "const_loop.onnx"))
os.makedirs(os.path.join(out, "const_loop_data"))
np.save(os.path.join(out, "const_loop_data", "a.npy"), np.array([1.5, -2.0], np.float32))
PY
    echo "FAIL export: $(tail -c 1500 "$tmp/export.log")"
    exit 1
fi

for d in "$tmp"/*_folded "$tmp"/*_unfolded; do
    c=$(basename "$d")
    flags=()
    case $c in fixed_*) flags=(--batch 4) ;; esac
    if ! "$parallaxc" compile --infer "$d/model.onnx" -o "$d/prog" "${flags[@]}" >"$d/log" 2>&1; then
        fail "$c: compile: $(head -c 800 "$d/log")"
        continue
    fi
    if ! "$d/prog" --data "$d/data" --out "$d/out" >"$d/log" 2>&1; then
        fail "$c: run: $(tail -c 800 "$d/log")"
        continue
    fi
    if ! msg=$("$py" -c '
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
if got.shape != want.shape:
    sys.exit("shape %s, PyTorch %s" % (got.shape, want.shape))
err = float(np.abs(got - want).max())
print("max error %.2e" % err)
sys.exit(0 if err <= 1e-6 else 1)
' "$d/out/y.npy" "$d/expected.npy" 2>&1); then
        fail "$c: output differs from PyTorch: $msg"
        continue
    fi
    if ! "$parallaxc" inspect "$d/model.onnx" "${flags[@]}" --format json 2>"$d/log" |
        "$py" -c '
import json, sys
v = {x["name"]: x["class"] for x in json.load(sys.stdin)["variables"]}
sys.exit(0 if v == {"e.weight": "sparse"} else "variables: %s" % v)'; then
        fail "$c: the table is not sparse"
        continue
    fi
    echo "ok   $c ($msg)"
done

# examples/dlrm (three EmbeddingBag tables, exported with training=TRAINING):
# the tables are sparse, every other variable dense
if "$parallaxc" inspect "$2/examples/dlrm/model.onnx" --batch 4 --stage parallel --format json \
    2>"$tmp/dlrm.log" | "$py" -c '
import json, sys
v = {x["name"]: (x["class"], x["sync"]) for x in json.load(sys.stdin)["variables"]}
sparse = sorted(n for n, (c, s) in v.items() if c == "sparse" and s == "ps")
want = ["tables.0.weight", "tables.1.weight", "tables.2.weight"]
sys.exit(0 if sparse == want and len(v) == 11 else "variables: %s" % v)' >"$tmp/dlrm.err" 2>&1; then
    echo "ok   dlrm: 3 sparse EmbeddingBag tables on the parameter servers, 8 dense"
else
    fail "dlrm classes: $(cat "$tmp/dlrm.err" "$tmp/dlrm.log" | head -c 800)"
fi

# a Loop with a constant trip count unrolls: y = 8a, s = [2a, 4a, 8a]
if "$parallaxc" compile --infer "$tmp/const_loop.onnx" -o "$tmp/const_loop" >"$tmp/cl.log" 2>&1 &&
    "$tmp/const_loop" --data "$tmp/const_loop_data" --out "$tmp/cl_out" >"$tmp/cl.log" 2>&1 &&
    "$py" -c '
import sys
import numpy as np
d = sys.argv[1]
y, s = np.load(d + "/y.npy"), np.load(d + "/s.npy")
a = np.array([1.5, -2.0], np.float32)
sys.exit(0 if np.array_equal(y, 8 * a) and np.array_equal(s, np.stack([2 * a, 4 * a, 8 * a]))
         else "y %s s %s" % (y, s))' "$tmp/cl_out" >>"$tmp/cl.log" 2>&1; then
    echo "ok   constant-trip Loop unrolled (carried value and scan output)"
else
    fail "constant-trip Loop: $(tail -c 800 "$tmp/cl.log")"
fi

# refused: exit 1, the node named, no crash
for c in runtime_if:runtime_if other_loop:doubling_loop; do
    model=${c%%:*} node=${c#*:}
    "$parallaxc" compile "$tmp/$model.onnx" -o "$tmp/$model.prog" >"$tmp/$model.log" 2>&1
    rc=$?
    if [ $rc -ne 1 ] || ! grep -q "'$node'" "$tmp/$model.log"; then
        fail "$model: want exit 1 and a message naming '$node', got $rc: $(head -c 600 "$tmp/$model.log")"
        continue
    fi
    echo "ok   $model refused: $(grep -m1 error "$tmp/$model.log" | head -c 160)"
done

if [ "$failed" -ne 0 ]; then
    echo "$failed failure(s)"
    exit 1
fi
echo "all embedding bag cases passed"
