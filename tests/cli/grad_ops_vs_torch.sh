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
/usr/bin/python3 - "$parallaxc" "$src" <<'PY'
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, sys.argv[2] + "/tests/tools")
from torch_vs_program import compare  # noqa: E402

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
rng = np.random.default_rng(0)
X = rng.standard_normal((STEPS * BATCH, 6)).astype(np.float32)
Y = rng.standard_normal((STEPS * BATCH,)).astype(np.float32)
compare("grad_ops_vs_torch", m, {"x": X, "y": Y}, sys.argv[1], STEPS, BATCH, LR, 14, WANT,
        {"training": torch.onnx.TrainingMode.TRAINING, "do_constant_folding": False})
PY
