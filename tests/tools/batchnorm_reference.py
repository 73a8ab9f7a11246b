#!/usr/bin/python3
"""batchnorm_reference.py OUTDIR

Exports a small MLP with BatchNorm1d and Dropout(0) in PyTorch's training mode
(TrainingMode.TRAINING: BatchNormalization with training_mode=1 and running
statistics outputs) to OUTDIR/model.onnx, writes OUTDIR/data/{x,y}.npy, and
trains it with PyTorch SGD (lr 0.1) for 6 steps at batch 4 in the design.md §3
data order, writing OUTDIR/reference.npz: per-step losses and every parameter
and buffer (running_mean, running_var) after training, under their ONNX names."""
import os
import sys

import numpy as np

for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, _a):
        setattr(np, _a, _t)
import torch
import torch.nn as nn

out = sys.argv[1]
os.makedirs(os.path.join(out, "data"), exist_ok=True)
torch.manual_seed(0)
torch.set_num_threads(1)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x, y):
        h = torch.relu(self.bn(self.fc1(x)))
        return nn.functional.cross_entropy(self.fc2(h), y)


m = M()
m.train()
x = torch.randn(16, 6)
y = torch.randint(0, 3, (16,))
np.save(os.path.join(out, "data", "x.npy"), x.numpy())
np.save(os.path.join(out, "data", "y.npy"), y.numpy())
torch.onnx.export(m, (x[:4], y[:4]), os.path.join(out, "model.onnx"), input_names=["x", "y"],
                  output_names=["loss"], opset_version=17,
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
m.train()  # export may switch modes
opt = torch.optim.SGD(m.parameters(), lr=0.1)
losses = []
for s in range(6):
    start = (s * 4) % 16
    loss = m(x[start:start + 4], y[start:start + 4])
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
state = {k: v.detach().numpy().copy() for k, v in m.state_dict().items() if v.dtype == torch.float32}
np.savez(os.path.join(out, "reference.npz"), losses=np.array(losses), **state)
