#!/usr/bin/python3
"""MLP 784-128-64-10 classifier; the exported graph computes the cross-entropy loss.

Inputs: x float32 [batch, 784], y int64 [batch]. Output: loss (scalar float32).
Data: 128 samples labelled by a fixed random linear "teacher", so training can
actually lower the loss.
"""

import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_common import export_example  # noqa: E402

SAMPLES = 128


class MlpLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)
        )

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.net(x), y)


def make_data():
    rng = np.random.RandomState(1)
    x = rng.rand(SAMPLES, 784).astype(np.float32)
    teacher = rng.randn(784, 10).astype(np.float32)
    y = np.argmax(x @ teacher, axis=1).astype(np.int64)
    return x, y


def main():
    torch.manual_seed(0)
    x, y = make_data()
    export_example(os.path.dirname(os.path.abspath(__file__)), MlpLoss(), [("x", x), ("y", y)])


if __name__ == "__main__":
    main()
