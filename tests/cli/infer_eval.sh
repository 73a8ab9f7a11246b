#!/bin/bash
# Usage: infer_eval.sh PARALLAXC SRCDIR
#
# Inference programs run in eval mode. A CNN with BatchNorm and Dropout,
# exported with training=TrainingMode.TRAINING and outputs (loss, logits), is
# trained 12 SGD steps by our training program (--save trained.onnx: weights
# and BatchNorm running statistics), then compiled with
#   parallaxc compile --infer trained.onnx --outputs logits --batch 8
# and run on 20 samples of x only (no labels, a partial last batch of 4).
# Its logits must equal PyTorch's model.eval() logits with the trained
# weights loaded (max error 1e-4), one row per sample, and must differ from
# the train-mode (batch statistics, dropout) output, so the check can fail.
# Also: --outputs naming no value, and a partial batch with a non per-sample
# output, are refused with exit status 1 and a message.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 PARALLAXC SRCDIR" >&2
    exit 2
fi
parallaxc=$1
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
failed=0
fail() {
    echo "FAIL $1"
    failed=$((failed + 1))
}

cat >"$tmp/model.py" <<'PY'
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if a not in np.__dict__:
        setattr(np, a, t)
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(4 * 4 * 4, 5)

    def logits(self, x):
        h = torch.relu(self.bn(self.conv(x)))
        h = nn.functional.max_pool2d(h, 2).flatten(1)
        return self.fc(self.drop(h))

    def forward(self, x, y):
        z = self.logits(x)
        return nn.functional.cross_entropy(z, y), z
PY

if ! "$py" - "$tmp" >"$tmp/export.log" 2>&1 <<'PY'; then
import os, sys, warnings
sys.path.insert(0, sys.argv[1])
warnings.filterwarnings("ignore")
from model import Net, np, torch
out = sys.argv[1]
torch.manual_seed(0)
m = Net()
rng = np.random.RandomState(3)
x = (rng.randn(64, 1, 8, 8) * 2 + 0.5).astype(np.float32)
y = rng.randint(0, 5, 64).astype(np.int64)
for d in ("data", "infer_data"):
    os.makedirs(os.path.join(out, d))
np.save(os.path.join(out, "data", "x.npy"), x)
np.save(os.path.join(out, "data", "y.npy"), y)
np.save(os.path.join(out, "infer_data", "x.npy"), x[:20])
torch.onnx.export(m, (torch.from_numpy(x[:2]), torch.from_numpy(y[:2])),
                  os.path.join(out, "model.onnx"), opset_version=17,
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                  input_names=["x", "y"], output_names=["loss", "logits"],
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}, "logits": {0: "batch"}})
PY
    echo "FAIL export: $(tail -c 1500 "$tmp/export.log")"
    exit 1
fi

# model.eval() with the trained weights against our logits
cat >"$tmp/check.py" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
from model import Net, np, torch
import onnx
from onnx import numpy_helper
d = sys.argv[1]
m = Net()
state = m.state_dict()
inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(os.path.join(d, "trained.onnx")).graph.initializer}
for name in state:
    if name.endswith("num_batches_tracked"):
        continue
    state[name] = torch.from_numpy(inits[name].copy())
m.load_state_dict(state)
x = torch.from_numpy(np.load(os.path.join(d, "infer_data", "x.npy")))
got = np.load(os.path.join(d, "out", "logits.npy"))
if got.shape != (20, 5):
    sys.exit("logits.npy has shape %s, want (20, 5)" % (got.shape,))
if np.abs(inits["bn.running_mean"]).max() == 0:
    sys.exit("the running mean was not trained")
m.eval()
with torch.no_grad():
    want = m.logits(x).numpy()
m.train()
torch.manual_seed(1)
with torch.no_grad():
    train_mode = m.logits(x[:8]).numpy()
err = float(np.abs(got - want).max())
if float(np.abs(train_mode - want[:8]).max()) < 1e-2:
    sys.exit("train and eval mode agree: the check could not fail")
print("max |ours - model.eval()| = %.2e over 20 samples" % err)
sys.exit(0 if err <= 1e-4 else 1)
PY

run() { # LABEL CMD...: runs, fails the test with the output on a non-zero exit
    local label=$1
    shift
    if ! "$@" >"$tmp/log" 2>&1; then
        fail "$label: $(tail -c 1000 "$tmp/log")"
        return 1
    fi
}

if run "compile training" "$parallaxc" compile "$tmp/model.onnx" -o "$tmp/train" --batch 8 \
    --loss loss --optimizer sgd --lr 0.1 &&
    run "train" "$tmp/train" --data "$tmp/data" --steps 12 --save "$tmp/trained.onnx" &&
    run "compile --infer" "$parallaxc" compile --infer "$tmp/trained.onnx" --outputs logits \
        --batch 8 -o "$tmp/infer" &&
    run "infer" "$tmp/infer" --data "$tmp/infer_data" --out "$tmp/out"; then
    if msg=$("$py" "$tmp/check.py" "$tmp" 2>&1); then
        echo "ok   eval-mode logits: $msg"
    else
        fail "logits differ from model.eval(): $msg"
    fi
fi

# --outputs naming nothing in the model
"$parallaxc" compile --infer "$tmp/model.onnx" --outputs nope --batch 8 -o "$tmp/bad" >"$tmp/log" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "no value named 'nope'" "$tmp/log"; then
    echo "ok   --outputs nope refused"
else
    fail "--outputs nope: exit $rc: $(head -c 400 "$tmp/log")"
fi
# a partial last batch with the (scalar) loss among the outputs
"$py" -c 'import numpy as np, sys; np.save(sys.argv[1] + "/y.npy", np.load(sys.argv[2])[:20])' \
    "$tmp/infer_data" "$tmp/data/y.npy"
if run "compile --infer (all outputs)" "$parallaxc" compile --infer "$tmp/model.onnx" --batch 8 \
    -o "$tmp/all"; then
    "$tmp/all" --data "$tmp/infer_data" --out "$tmp/out_all" >"$tmp/log" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q "output 'loss'.*not one row per sample" "$tmp/log"; then
        echo "ok   partial batch with a scalar output refused"
    else
        fail "partial batch with the loss: exit $rc: $(head -c 400 "$tmp/log")"
    fi
fi

if [ "$failed" -ne 0 ]; then
    echo "$failed failure(s)"
    exit 1
fi
echo "all inference eval-mode checks passed"
