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
/usr/bin/python3 - "$parallaxc" "$src" <<'PY'
import sys

import numpy as np
import torch

sys.path.insert(0, sys.argv[2] + "/tests/tools")
from torch_vs_program import compare  # noqa: E402

EQ, STEPS, BATCH, LR = "bij,jk->bki", 5, 2, 0.1


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 5))

    def forward(self, x):
        return torch.einsum(EQ, x, self.w).pow(2).mean()


torch.manual_seed(0)
m = M()
X = np.random.default_rng(0).standard_normal((STEPS * BATCH, 3, 4)).astype(np.float32)
compare("einsum_vs_torch", m, {"x": X}, sys.argv[1], STEPS, BATCH, LR, 13, {"Einsum"},
        check_weights=False)
PY
