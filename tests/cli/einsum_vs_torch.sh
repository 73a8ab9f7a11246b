#!/bin/bash
# Usage: einsum_vs_torch.sh PARALLAXC SRCDIR
#
# A PyTorch model using torch.einsum (exported as ONNX Einsum, which the
# compiler rewrites into Transpose/Reshape/Mul/ReduceSum) trains like PyTorch:
# 5 SGD steps of the compiled program, the loss of every step within 1e-5
# relative of torch.optim.SGD on the same batches from the same weights.
. "$(dirname "$0")/lib.sh" "$@"
set -e
export OMP_NUM_THREADS=1
cd "$tmp"
/usr/bin/python3 - "$parallaxc" <<'PY'
import subprocess
import sys

import numpy as np

for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _a not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _a, _t)
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402

EQ, STEPS, BATCH, LR = "bij,jk->bki", 5, 2, 0.1


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 5))

    def forward(self, x):
        return torch.einsum(EQ, x, self.w).pow(2).mean()


torch.manual_seed(0)
torch.onnx.export(M(), torch.randn(BATCH, 3, 4), "m.onnx", opset_version=13,
                  input_names=["x"], output_names=["loss"])
ops = [n.op_type for n in onnx.load("m.onnx").graph.node]
assert "Einsum" in ops, ops
w0 = [numpy_helper.to_array(t) for t in onnx.load("m.onnx").graph.initializer if list(t.dims) == [4, 5]]
assert len(w0) == 1
X = np.random.default_rng(0).standard_normal((STEPS * BATCH, 3, 4)).astype(np.float32)
subprocess.run(["mkdir", "-p", "data"], check=True)
np.save("data/x.npy", X)
subprocess.run([sys.argv[1], "compile", "m.onnx", "-o", "prog", "--optimizer", "sgd", "--lr", str(LR)],
               check=True)
subprocess.run(["./prog", "--data", "data", "--steps", str(STEPS), "--losses", "ours.csv",
                "--log-every", "0"], check=True)
ours = np.loadtxt("ours.csv", delimiter=",", skiprows=1, ndmin=2)[:, 1]
w = torch.tensor(w0[0].copy(), requires_grad=True)
opt = torch.optim.SGD([w], lr=LR)
ref = []
for s in range(STEPS):
    loss = torch.einsum(EQ, torch.tensor(X[s * BATCH:(s + 1) * BATCH]), w).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    ref.append(loss.item())
ref = np.array(ref)
rel = np.max(np.abs(ours - ref) / np.abs(ref)) if len(ours) == STEPS else np.inf
print("einsum_vs_torch: losses ours", ours, "torch", ref, "max relative error %.3g" % rel)
if not rel <= 1e-5:
    sys.exit("einsum_vs_torch: the compiled program's losses differ from PyTorch's")
PY
