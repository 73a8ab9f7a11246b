#!/bin/bash
# Usage: export_checks.sh PARALLAXC SRCDIR
#
# `parallaxc compile` (training) warns on stderr about exports that would
# train a different model than the PyTorch module, naming the nodes and the
# fix (training=TrainingMode.TRAINING, do_constant_folding=False):
#   - tied: PyTorch's default export of two LayerNorms merges their equal
#     initializers into one plus Identity nodes;
#   - eval-mode BatchNorm (an inference-mode node after a Linear, folded
#     into the Conv before it)
#     and Dropout switched off;
#   - an all-zero (padding_idx) row of an embedding table.
# Each has a negative control: the same model exported the right way (and
# the dlrm example) compiles without warnings.
# And the stable rewrite: BCEWithLogitsLoss exported as Log(Sigmoid(x)) on
# logits of magnitude ~1e3 gives PyTorch's finite loss (inference, rel 1e-5)
# and trains 3 SGD steps with PyTorch's losses (rel 1e-4) instead of NaN.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
failed=0

if ! "$py" - "$tmp" >"$tmp/export.log" 2>&1 <<'PY'; then
import json, os, sys, warnings
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if a not in np.__dict__:
        setattr(np, a, t)
import onnx
from onnx import TensorProto, helper, numpy_helper
import torch
from torch import nn
warnings.filterwarnings("ignore")
out = sys.argv[1]
T = torch.onnx.TrainingMode


def export(m, args, name, names, training, fold):
    torch.onnx.export(m, args, os.path.join(out, name + ".onnx"), opset_version=17,
                      training=training, do_constant_folding=fold, input_names=names,
                      output_names=["loss"])


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.fc = nn.LayerNorm(4), nn.LayerNorm(4), nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(self.b(torch.relu(self.a(x)))).mean()


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))).mean()


class LinearBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn = nn.Linear(4, 3), nn.BatchNorm1d(3)

    def forward(self, x):
        return torch.relu(self.bn(self.fc(x))).mean()


class Padded(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4, padding_idx=3)

    def forward(self, ids):
        return self.emb(ids).pow(2).mean()


class BCE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x, y):
        return nn.functional.binary_cross_entropy_with_logits(self.fc(x).squeeze(1), y)


torch.manual_seed(0)
x4, img, ids = torch.rand(2, 4), torch.rand(2, 1, 5, 5), torch.tensor([1, 3])
export(Norms(), (x4,), "tied", ["x"], T.EVAL, True)
export(Norms(), (x4,), "untied", ["x"], T.TRAINING, False)
export(ConvBN().eval(), (img,), "bn_folded", ["x"], T.EVAL, True)
export(LinearBN().eval(), (x4,), "bn_eval", ["x"], T.EVAL, False)
export(ConvBN(), (img,), "bn_train", ["x"], T.TRAINING, False)
export(Padded(), (ids,), "padded", ["ids"], T.TRAINING, False)
# Dropout switched off (training_mode absent), as an eval-mode model keeps it
f = helper.make_tensor_value_info
w = helper.make_tensor("w", TensorProto.FLOAT, [4], [0.5, -1.0, 2.0, 1.5])
g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["h"]),
                       helper.make_node("Dropout", ["h"], ["d"], name="the_dropout"),
                       helper.make_node("ReduceMean", ["d"], ["loss"], keepdims=0)], "g",
                      [f("x", TensorProto.FLOAT, [2, 4])], [f("loss", TensorProto.FLOAT, [])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "dropout_off.onnx"))

# BCE with logits of magnitude ~1e3: PyTorch's loss is finite
torch.manual_seed(0)
bce = BCE()
with torch.no_grad():
    bce.fc.weight.mul_(300)
torch.onnx.export(bce, (torch.rand(2, 3), torch.rand(2)), os.path.join(out, "bce.onnx"),
                  opset_version=17, training=T.TRAINING, do_constant_folding=False,
                  input_names=["x", "y"], output_names=["loss"],
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
rng = np.random.RandomState(0)
x = (rng.randn(16, 3) * 3).astype(np.float32)
y = (rng.rand(16) < 0.5).astype(np.float32)
os.makedirs(os.path.join(out, "bce_data"))
np.save(os.path.join(out, "bce_data", "x.npy"), x)
np.save(os.path.join(out, "bce_data", "y.npy"), y)
opt = torch.optim.SGD(bce.parameters(), lr=0.01)
losses = []
for s in range(3):
    loss = bce(torch.from_numpy(x[8 * (s % 2):8 * (s % 2) + 8]),
               torch.from_numpy(y[8 * (s % 2):8 * (s % 2) + 8]))
    losses.append(float(loss))
    opt.zero_grad()
    loss.backward()
    opt.step()
json.dump(losses, open(os.path.join(out, "bce_losses.json"), "w"))
logits = torch.from_numpy(x[:8]) @ torch.from_numpy(
    numpy_helper.to_array([i for i in onnx.load(os.path.join(out, "bce.onnx")).graph.initializer
                                if i.name == "fc.weight"][0])).t()
assert float(logits.abs().max()) > 200, "logits not large enough to overflow sigmoid"
PY
    echo "FAIL export: $(tail -c 1500 "$tmp/export.log")"
    exit 1
fi

# warns MODEL BATCH PATTERN...: compile for training; every pattern must be
# on stderr (grep -E); no pattern: no warning at all.
warns() {
    local model=$1 batch=$2
    shift 2
    local flags=()
    [ "$batch" != - ] && flags=(--batch "$batch")
    if ! "$parallaxc" compile "$model" -o "$tmp/prog" "${flags[@]}" 2>"$tmp/err" >/dev/null; then
        fail "$(basename "$model"): compile failed: $(head -c 600 "$tmp/err")"
        return
    fi
    if [ $# -eq 0 ]; then
        if grep -q "warning" "$tmp/err"; then
            fail "$(basename "$model"): unexpected warning: $(head -c 600 "$tmp/err")"
        else
            echo "ok   $(basename "$model"): no warning"
        fi
        return
    fi
    for pat in "$@"; do
        if ! grep -qE -- "$pat" "$tmp/err"; then
            fail "$(basename "$model"): no warning matching '$pat' in: $(head -c 800 "$tmp/err")"
            return
        fi
    done
    echo "ok   $(basename "$model"): $(head -c 150 "$tmp/err")..."
}

fix="training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False"
warns "$tmp/tied.onnx" - "^warning: .*read an initializer through Identity: '[^']+' = node '[^']+'\('b\.(weight|bias)'\)|^warning: .*through Identity: .*\('a\.(weight|bias)'\)" "tied parameter" "$fix"
warns "$tmp/untied.onnx" -
warns "$tmp/bn_folded.onnx" - "Conv node .*'/conv/Conv'.*onnx::Conv_.*folds BatchNorm" "$fix"
warns "$tmp/bn_eval.onnx" - "BatchNormalization node .*'/bn/BatchNormalization'.* eval mode" "$fix"
warns "$tmp/bn_train.onnx" -
warns "$tmp/dropout_off.onnx" - "Dropout node .*'the_dropout'.* eval mode" "$fix"
warns "$tmp/padded.onnx" - "row 3 of embedding table 'emb.weight' is all zeros" "padding_idx"
warns "$src/examples/dlrm/model.onnx" 4

# examples/export_for_parallax.py: its exports pass its own checks and the
# compiler's; its checks flag the bad exports above.
if msg=$("$py" - "$tmp" "$src/examples" "$parallaxc" 2>&1 <<'PY'
import os, sys, warnings
warnings.filterwarnings("ignore")
tmp, examples, parallaxc = sys.argv[1:4]
sys.path.insert(0, examples)
from export_for_parallax import check_onnx, export_for_parallax
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.LayerNorm(4), nn.BatchNorm1d(4),
                      nn.Dropout(0.2), nn.Linear(4, 1))
class Loss(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = model
    def forward(self, x, y):
        z = self.m(x).squeeze(1)
        return ((z - y) ** 2).mean(), z
x, y = torch.rand(4, 4), torch.rand(4)
got = export_for_parallax(Loss(), (x, y), os.path.join(tmp, "helper.onnx"), ["x", "y"],
                          ["loss", "z"], parallaxc=parallaxc)
if got:
    sys.exit("helper export has problems: %s" % got)
for bad, word in (("tied", "Identity"), ("bn_folded", "folded"), ("bn_eval", "eval mode"),
                  ("dropout_off", "switched off"), ("padded", "row 3")):
    if not any(word in p for p in check_onnx(os.path.join(tmp, bad + ".onnx"))):
        sys.exit("check_onnx missed %s" % bad)
print("helper export clean, its checks flag the 5 bad exports")
PY
); then
    echo "ok   export_for_parallax.py: $msg"
else
    fail "export_for_parallax.py: $msg"
fi

# Log(Sigmoid(x)) made stable: inference loss and 3 training steps.
d=$tmp/bce_data
if "$parallaxc" compile --infer "$tmp/bce.onnx" --batch 8 -o "$tmp/bce_infer" >"$tmp/log" 2>&1 &&
    "$parallaxc" compile "$tmp/bce.onnx" --batch 8 --optimizer sgd --lr 0.01 -o "$tmp/bce_train" \
        >"$tmp/log" 2>&1 &&
    "$tmp/bce_infer" --data "$d" --out "$tmp/bce_out" >"$tmp/log" 2>&1 &&
    "$tmp/bce_train" --data "$d" --steps 3 --losses "$tmp/bce.csv" >"$tmp/log" 2>&1; then
    if msg=$("$py" -c '
import json, sys
import numpy as np
want = json.load(open(sys.argv[1]))
first = np.load(sys.argv[2])
got = [float(l.split(",")[1]) for l in open(sys.argv[3]).read().split()[1:]]
if not all(np.isfinite(first)) or abs(first[0] - want[0]) > 1e-5 * abs(want[0]):
    sys.exit("inference loss %s, PyTorch %r" % (first, want[0]))
err = max(abs(a - b) / abs(b) for a, b in zip(got, want))
print("losses %s, PyTorch %s, max rel err %.1e" % (got, want, err))
sys.exit(0 if len(got) == 3 and err <= 1e-4 else 1)
' "$tmp/bce_losses.json" "$tmp/bce_out/loss.npy" "$tmp/bce.csv" 2>&1); then
        echo "ok   BCE with logits ~1e3: $msg"
    else
        fail "BCE with large logits: $msg"
    fi
else
    fail "BCE with large logits: $(tail -c 800 "$tmp/log")"
fi

if [ "$failed" -ne 0 ]; then
    echo "$failed failure(s)"
    exit 1
fi
echo "all export checks passed"
