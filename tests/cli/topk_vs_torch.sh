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
/usr/bin/python3 - "$parallaxc" "$src" <<'PY'
import sys

import numpy as np
import torch

sys.path.insert(0, sys.argv[2] + "/tests/tools")
from torch_vs_program import compare  # noqa: E402

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
rng = np.random.default_rng(0)
X = rng.standard_normal((STEPS * BATCH, 8)).astype(np.float32)
Y = rng.standard_normal((STEPS * BATCH,)).astype(np.float32)
compare("topk_vs_torch", m, {"x": X, "y": Y}, sys.argv[1], STEPS, BATCH, LR, 13, {"TopK"},
        {"training": torch.onnx.TrainingMode.TRAINING, "do_constant_folding": False})
PY
