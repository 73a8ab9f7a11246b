#!/bin/bash
# Usage: grad_ops_vs_torch.sh PARALLAXC SRCDIR
#
# A PyTorch model built from the ops whose gradient rules were missing
# (Split, Elu, Celu, Selu, PRelu, Atan, Asin, HardSwish, HardSigmoid,
# Tile, Pad, CumSum, Trilu, ReduceMax, ReduceLogSumExp, ReduceL2 and
# ReduceMin) trains like PyTorch: exported in training mode
# without constant folding, 5 SGD steps of the compiled program give every
# step's loss within 1e-5 relative of torch.optim.SGD on the same batches from
# the same weights, and the trained weights (--save) within 1e-5.
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
import torch.nn.functional as F  # noqa: E402
from onnx import numpy_helper  # noqa: E402

STEPS, BATCH, LR = 5, 4, 0.02
WANT = {"Split", "Elu", "Celu", "Selu", "PRelu", "Atan", "Asin", "HardSwish", "HardSigmoid",
        "Tile", "Pad", "CumSum", "Trilu", "ReduceMax", "ReduceLogSumExp", "ReduceL2", "ReduceMin"}


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 12)
        self.prelu = torch.nn.PReLU(4, init=0.2)

    def forward(self, x, y):
        h1, h2, h3 = torch.split(self.lin(x), [4, 4, 4], dim=1)
        a = self.prelu(F.elu(h1, alpha=0.8) + F.celu(h2, alpha=1.2) + F.selu(h3))
        c = (torch.atan(a) + torch.asin(0.5 * torch.tanh(a)) + F.hardswish(a)
             + F.hardsigmoid(a) + F.softsign(a))
        e = 0.1 * torch.cumsum(F.pad(c.repeat(1, 2), (1, 2)), dim=1)  # [B, 11]
        t = torch.tril(e.unsqueeze(2) * e.unsqueeze(1), diagonal=-1)  # [B, 11, 11]
        score = (torch.amax(t, dim=(1, 2)) + torch.logsumexp(e, dim=1)
                 + 0.1 * torch.norm(e, p=2, dim=1) - 0.1 * torch.amin(e, dim=1)
                 + 0.01 * e.pow(2).sum(dim=1))
        return (score - y).pow(2).mean()


torch.manual_seed(0)
m = M()
ref_model = copy.deepcopy(m)
rng = np.random.default_rng(0)
X = rng.standard_normal((STEPS * BATCH, 6)).astype(np.float32)
Y = rng.standard_normal((STEPS * BATCH,)).astype(np.float32)
torch.onnx.export(m, (torch.tensor(X[:BATCH]), torch.tensor(Y[:BATCH])), "m.onnx",
                  opset_version=14, input_names=["x", "y"], output_names=["loss"],
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
ops = {n.op_type for n in onnx.load("m.onnx").graph.node}
missing = WANT - ops
if missing:
    sys.exit("grad_ops_vs_torch: the export lacks %s (it has %s)" % (sorted(missing), sorted(ops)))
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
werr = max(float(np.max(np.abs(trained[k].reshape(p.shape) - p.detach().numpy())))
           for k, p in ref_model.named_parameters())
print("grad_ops_vs_torch: losses ours", ours, "torch", ref,
      "max relative error %.3g, max weight error %.3g" % (rel, werr))
if not rel <= 1e-5 or not werr <= 1e-5:
    sys.exit("grad_ops_vs_torch: the compiled program's losses or weights differ from PyTorch's")
PY
