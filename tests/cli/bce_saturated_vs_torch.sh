#!/bin/bash
# Usage: bce_saturated_vs_torch.sh PARALLAXC SRCDIR
#
# binary_cross_entropy of a saturated sigmoid trains like PyTorch.
# Exported through python/parallax's symbolic (clamped logs), the loss
# differentiated op by op gave 0 * (1 / 0) = NaN where sigmoid(z) rounds to
# 0 or 1, and -1 instead of PyTorch's ~0 where it is below 1e-12; PyTorch's
# fused backward divides by max(x (1 - x), 1e-12). Logits of +-30 and -100
# (and ordinary ones), labels both ways, sigmoid read directly by the loss
# and through a squeeze; both export forms; 4 SGD steps: losses and trained
# weights within 1e-5 of torch.optim.SGD's, every one finite.
. "$(dirname "$0")/lib.sh" "$@"
set -e
export OMP_NUM_THREADS=1
for fold in 0 1; do
    mkdir -p "$tmp/f$fold"
    cd "$tmp/f$fold"
    check "saturated sigmoid, constant folding $fold" "$py" - "$parallaxc" "$src" "$fold" <<'PY'
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, sys.argv[2] + "/tests/tools")
sys.path.insert(0, sys.argv[2] + "/python")
from torch_vs_program import compare  # noqa: E402
from parallax import register_loss_symbolics  # noqa: E402

register_loss_symbolics()
STEPS, BATCH, LR = 4, 4, 0.05


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([[10.0, 0.5, 0.0], [0.0, 0.5, 10.0]]))
            self.lin.bias.zero_()

    def forward(self, x, y):
        z = self.lin(x)
        direct = F.binary_cross_entropy(torch.sigmoid(z[:, 1:2]), y.unsqueeze(1))
        squeezed = F.binary_cross_entropy(torch.sigmoid(z[:, :1]).squeeze(1), y)
        return direct + squeezed


torch.manual_seed(0)
# logits 10 * x0 and 10 * x2: +30 (sigmoid 1.0), -100 (a denormal),
# -30 (below 1e-12), 0.5 (ordinary), each with label 1 and label 0
cols = np.array([3.0, -10.0, -3.0, 0.05])
x = np.zeros((STEPS * BATCH, 3), np.float32)
x[:, 0] = np.tile(cols, STEPS)
x[:, 2] = np.tile(cols[::-1], STEPS)
x[:, 1] = np.linspace(-1, 1, STEPS * BATCH)
y = np.tile([0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0], STEPS // 2).astype(np.float32)
kw = {"training": torch.onnx.TrainingMode.TRAINING,
      "do_constant_folding": sys.argv[3] == "1"}
compare("bce_saturated", M(), {"x": x, "y": y}, sys.argv[1], STEPS, BATCH, LR, 14,
        {"Sigmoid", "Log", "Max"}, kw)
ours = np.loadtxt("ours.csv", delimiter=",", skiprows=1, ndmin=2)[:, 1]
if not np.all(np.isfinite(ours)):
    sys.exit("a loss is not finite: %s" % ours)
PY
done
echo "bce_saturated_vs_torch: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq 2 ]
