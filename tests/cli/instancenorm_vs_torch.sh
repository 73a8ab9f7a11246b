#!/bin/bash
# Usage: instancenorm_vs_torch.sh PARALLAXC SRCDIR
#
# InstanceNormalization against two independent references:
#  - ONNX's backend test data (test_instancenorm_example, _epsilon): the
#    compiled inference programs reproduce the reference outputs;
#  - PyTorch: a model with nn.InstanceNorm2d and nn.InstanceNorm1d (affine,
#    one with a non-default epsilon) between trained layers, exported in
#    training mode, trains like torch.optim.SGD on the same batches from the
#    same weights: every step's loss (the forward) and the trained weights
#    (the gradients of X, scale and B) within 1e-5.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1
cd "$tmp"

"$py" "$src/tests/conformance/run.py" "$parallaxc" --jobs 1 --only test_instancenorm_ \
    --report conformance.tsv >conformance.log 2>&1
n_pass=$(grep -c $'\tpass\t' conformance.tsv 2>/dev/null)
if [ "${n_pass:-0}" -eq 2 ] && [ "$(wc -l <conformance.tsv)" -eq 2 ]; then
    pass "ONNX backend tests test_instancenorm_example and _epsilon"
else
    fail "ONNX backend tests: want 2 of 2 passed: $(head -c 800 conformance.log)"
fi

check "trains like PyTorch" "$py" - "$parallaxc" "$src" <<'PY'
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, sys.argv[2] + "/tests/tools")
from torch_vs_program import compare  # noqa: E402

STEPS, BATCH, LR = 5, 4, 0.05


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3)
        self.norm2d = torch.nn.InstanceNorm2d(4, affine=True)
        self.norm1d = torch.nn.InstanceNorm1d(4, affine=True, eps=1e-3)
        self.out = torch.nn.Linear(64, 1)
        with torch.no_grad():  # away from the initial ones and zeros
            for norm in (self.norm2d, self.norm1d):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x, y):
        h = F.relu(self.norm2d(self.conv(x)))  # [B, 4, 4, 4]
        h = self.norm1d(h.reshape(h.shape[0], 4, 16))  # [B, 4, 16]
        return (self.out(h.reshape(h.shape[0], 64)).squeeze(1) - y).pow(2).mean()


torch.manual_seed(0)
m = M()
rng = np.random.default_rng(0)
X = rng.standard_normal((STEPS * BATCH, 2, 6, 6)).astype(np.float32)
Y = rng.standard_normal((STEPS * BATCH,)).astype(np.float32)
compare("instancenorm_vs_torch", m, {"x": X, "y": Y}, sys.argv[1], STEPS, BATCH, LR, 14,
        {"InstanceNormalization"},
        {"training": torch.onnx.TrainingMode.TRAINING, "do_constant_folding": False})
PY
grep "max relative error" "$tmp/log" || cat "$tmp/log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq 2 ]
