#!/bin/bash
# Usage: topk_vs_torch.sh PARALLAXC SRCDIR
#
# A PyTorch model using torch.topk (the mean of each row's 3 largest
# activations, fitted to a target) trains like PyTorch: 5 SGD steps of the
# compiled program, the loss of every step within 1e-5 relative of
# torch.optim.SGD on the same batches from the same weights, and the trained
# weights (--save) within 1e-5.
. "$(dirname "$0")/lib.sh" "$@"
set -e
export OMP_NUM_THREADS=1
cd "$tmp"
/usr/bin/python3 - "$parallaxc" <<'PY'
import copy
import subprocess
import sys

import numpy as np

for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _a not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _a, _t)
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402

STEPS, BATCH, LR = 5, 4, 0.1


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 6)

    def forward(self, x, y):
        top = torch.topk(self.lin(x), 3, dim=1).values
        return (top.mean(dim=1) - y).pow(2).mean()


torch.manual_seed(0)
m = M()
ref_model = copy.deepcopy(m)
rng = np.random.default_rng(0)
X = rng.standard_normal((STEPS * BATCH, 8)).astype(np.float32)
Y = rng.standard_normal((STEPS * BATCH,)).astype(np.float32)
torch.onnx.export(m, (torch.tensor(X[:BATCH]), torch.tensor(Y[:BATCH])), "m.onnx",
                  opset_version=13, input_names=["x", "y"], output_names=["loss"],
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
ops = [n.op_type for n in onnx.load("m.onnx").graph.node]
assert "TopK" in ops, ops
subprocess.run(["mkdir", "-p", "data"], check=True)
np.save("data/x.npy", X)
np.save("data/y.npy", Y)
subprocess.run([sys.argv[1], "compile", "m.onnx", "-o", "prog", "--optimizer", "sgd", "--lr", str(LR)],
               check=True)
subprocess.run(["./prog", "--data", "data", "--steps", str(STEPS), "--losses", "ours.csv",
                "--log-every", "0", "--save", "trained.onnx"], check=True)
ours = np.loadtxt("ours.csv", delimiter=",", skiprows=1, ndmin=2)[:, 1]
opt = torch.optim.SGD(ref_model.parameters(), lr=LR)
ref = []
for s in range(STEPS):
    sl = slice(s * BATCH, (s + 1) * BATCH)
    loss = ref_model(torch.tensor(X[sl]), torch.tensor(Y[sl]))
    opt.zero_grad()
    loss.backward()
    opt.step()
    ref.append(loss.item())
ref = np.array(ref)
rel = np.max(np.abs(ours - ref) / np.abs(ref)) if len(ours) == STEPS else np.inf
trained = {t.name: numpy_helper.to_array(t) for t in onnx.load("trained.onnx").graph.initializer}
werr = max(float(np.max(np.abs(trained[k] - p.detach().numpy())))
           for k, p in ref_model.named_parameters())
print("topk_vs_torch: losses ours", ours, "torch", ref,
      "max relative error %.3g, max weight error %.3g" % (rel, werr))
if not rel <= 1e-5 or not werr <= 1e-5:
    sys.exit("topk_vs_torch: the compiled program's losses or weights differ from PyTorch's")
PY
