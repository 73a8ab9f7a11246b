#!/bin/bash
# Usage: input_semantics.sh PARALLAXC SRCDIR
#
# Inputs validated by their meaning (docs/faults.md, "Inputs"):
#   - nn.EmbeddingBag offsets (PyTorch's export, mode sum): a negative,
#     decreasing, past-the-end or non-zero first offset, in the first batch
#     of a file or a later one, is refused by the loader with status 1 and a
#     message naming the file, the sample and the value, before any batch
#     runs (where it used to give wrong bag sums with status 0), and an
#     output saved before stays whole; good offsets still give PyTorch's
#     bags;
#   - two outputs, or two inputs, whose names share a file once '/' and ':'
#     become '_' are refused naming both, instead of sharing one .npy file;
#   - a graph input and an initializer of the same name (its default value)
#     with different shapes: the compile is refused naming both shapes.
# Prints PASS/FAIL lines, then "N passed, M failed".
. "$(dirname "$0")/../cli/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

"$py" - "$tmp" >"$tmp/export.log" 2>&1 <<'PY' || { cat "$tmp/export.log"; exit 1; }
import os, sys, warnings
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
    def __init__(self):
        super().__init__()
        self.e = torch.nn.EmbeddingBag(20, 5, mode="sum")
    def forward(self, x, off):
        return self.e(x, off)

m = Bag()
x = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5], np.int64)
good = np.array([0, 3, 3, 7], np.int64)
torch.onnx.export(m, (torch.from_numpy(x), torch.from_numpy(good)), os.path.join(out, "bag.onnx"),
                  opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                  input_names=["x", "off"], output_names=["y"])
cases = {"good": good, "negative": np.array([0, 3, -2, 7]), "decreasing": np.array([0, 5, 3, 7]),
         "past_the_end": np.array([0, 3, 3, 12]), "first_not_zero": np.array([1, 3, 3, 7]),
         # two batches: the first good, the second's offsets decrease
         "second_batch": np.array([0, 3, 3, 7, 0, 4, 2, 9])}
for name, off in cases.items():
    d = os.path.join(out, name)
    os.makedirs(d)
    np.save(os.path.join(d, "x.npy"), np.tile(x, len(off) // len(good)))
    np.save(os.path.join(d, "off.npy"), off.astype(np.int64))
with torch.no_grad():
    np.save(os.path.join(out, "expected.npy"), m(torch.from_numpy(x), torch.from_numpy(good)).numpy())

# Names that share a file once '/' becomes '_'.
f = helper.make_tensor_value_info
g = helper.make_graph([helper.make_node("Identity", ["x"], ["a/b"]),
                       helper.make_node("Neg", ["x"], ["a_b"])], "g",
                      [f("x", TensorProto.FLOAT, [2])],
                      [f("a/b", TensorProto.FLOAT, [2]), f("a_b", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "outputs.onnx"))
g = helper.make_graph([helper.make_node("Add", ["p:q", "p_q"], ["y"])], "g",
                      [f("p:q", TensorProto.FLOAT, [2]), f("p_q", TensorProto.FLOAT, [2])],
                      [f("y", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "inputs.onnx"))
# An input whose default value (the initializer of its name) has another shape.
w = helper.make_tensor("w", TensorProto.FLOAT, [4], [1, 2, 3, 4])
g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                      [f("x", TensorProto.FLOAT, [3]), f("w", TensorProto.FLOAT, [3])],
                      [f("y", TensorProto.FLOAT, [3])], initializer=[w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "default_value.onnx"))
os.makedirs(os.path.join(out, "xdata"))
np.save(os.path.join(out, "xdata", "x.npy"), np.array([1, 2], np.float32))
PY

"$parallaxc" compile --infer "$tmp/bag.onnx" -o "$tmp/bag" >"$tmp/c.log" 2>&1 || {
    cat "$tmp/c.log"
    exit 1
}
if "$tmp/bag" --data "$tmp/good" --out "$tmp/good_out" >"$tmp/run.log" 2>&1 &&
    "$py" -c '
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if got.shape == want.shape and np.abs(got - want).max() <= 1e-6 else "got %s" % got)
' "$tmp/good_out/y.npy" "$tmp/expected.npy" >>"$tmp/run.log" 2>&1; then
    pass "good offsets: PyTorch's bags"
else
    fail "good offsets: $(head -c 400 "$tmp/run.log")"
fi
# Bad offsets are refused by the loader before any batch runs, naming the
# file, the sample and the value: --bench-steps (which runs the first batch
# before the run) prints nothing, and an output already saved stays whole.
mkdir -p "$tmp/saved"
echo "an earlier run's output" >"$tmp/saved/y.npy"
for c in "negative:sample 2 (position 2 in batch 0): offset -2: an offset may not be negative" \
    "decreasing:sample 2 (position 2 in batch 0): offset 3: offsets may not decrease" \
    "past_the_end:sample 3 (position 3 in batch 0): offset 12: an offset may not pass the count of indices" \
    "first_not_zero:sample 0 (position 0 in batch 0): offset 1: the first offset must be 0" \
    "second_batch:sample 6 (position 2 in batch 1): offset 2: offsets may not decrease"; do
    name=${c%%:*} want="input 'off' ($tmp/$name/off.npy), ${c#*:}"
    timeout -k 5 60 "$tmp/bag" --data "$tmp/$name" --out "$tmp/saved" --bench-steps 1 \
        >"$tmp/run.log" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q -F -- "$want, for the offsets of EmbeddingBag" "$tmp/run.log" &&
        ! grep -q "^bench:" "$tmp/run.log" &&
        [ "$(cat "$tmp/saved/y.npy")" = "an earlier run's output" ]; then
        pass "$name offsets: refused before any batch, $(grep -m1 -o "sample.*offset [-0-9]*: [a-z ]*" "$tmp/run.log")"
    else
        fail "$name offsets: status $rc: $(head -c 400 "$tmp/run.log")"
    fi
done

for c in outputs inputs; do
    "$parallaxc" compile --infer "$tmp/$c.onnx" -o "$tmp/$c" >"$tmp/c.log" 2>&1 || {
        fail "$c: compile: $(head -c 300 "$tmp/c.log")"
        continue
    }
    [ $c = inputs ] && cp "$tmp/xdata/x.npy" "$tmp/xdata/p_q.npy"
    timeout -k 5 60 "$tmp/$c" --data "$tmp/xdata" --out "$tmp/${c}_out" >"$tmp/run.log" 2>&1
    rc=$?
    if [ $c = outputs ]; then pat="outputs 'a/b' and 'a_b' have the same file"; else
        pat="inputs 'p:q' and 'p_q' have the same file"; fi
    if [ $rc -ne 0 ] && grep -q -F "$pat" "$tmp/run.log" && [ ! -e "$tmp/${c}_out" ]; then
        pass "$c whose names share a file: status $rc, $(grep -m1 -F "$pat" "$tmp/run.log" | head -c 160)"
    else
        fail "$c whose names share a file: status $rc: $(head -c 400 "$tmp/run.log")"
    fi
done

"$parallaxc" compile --infer "$tmp/default_value.onnx" -o "$tmp/dv" >"$tmp/c.log" 2>&1
rc=$?
pat="input 'w' (float [3]) and the initializer of the same name (float [4]) differ"
if [ $rc -eq 1 ] && grep -q -F "$pat" "$tmp/c.log" && [ ! -e "$tmp/dv" ]; then
    pass "an input and an initializer of one name with different shapes: refused, $pat"
else
    fail "input/initializer clash: status $rc: $(head -c 400 "$tmp/c.log")"
fi

echo "$passed passed, $failed failed"
[ $passed -gt 0 ] && [ $failed -eq 0 ]
