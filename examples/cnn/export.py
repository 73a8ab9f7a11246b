#!/usr/bin/python3
"""Small CNN classifier on 28x28 images; the exported graph computes the cross-entropy loss.

Conv 1->8 3x3, ReLU, MaxPool 2, Conv 8->16 3x3, ReLU, MaxPool 2, flatten, Linear -> 10.
Inputs: x float32 [batch, 1, 28, 28], y int64 [batch]. Output: loss (scalar float32).
Data: 128 images of a bright bar at one of 10 positions/orientations plus noise,
labelled by which bar, so training can actually lower the loss.
"""

import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_common import export_example  # noqa: E402

SAMPLES = 128


class CnnLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2),  # 28 -> 26 -> 13
            nn.Conv2d(8, 16, 3), nn.ReLU(), nn.MaxPool2d(2),  # 13 -> 11 -> 5
        )
        self.classifier = nn.Linear(16 * 5 * 5, 10)

    def forward(self, x, y):
        logits = self.classifier(torch.flatten(self.features(x), 1))
        return nn.functional.cross_entropy(logits, y)


def make_data():
    rng = np.random.RandomState(2)
    y = rng.randint(0, 10, size=SAMPLES).astype(np.int64)
    x = 0.2 * rng.rand(SAMPLES, 1, 28, 28).astype(np.float32)
    for i, label in enumerate(y):
        pos = 3 + 4 * (label % 5)
        if label < 5:
            x[i, 0, pos:pos + 2, 2:26] += 1.0  # horizontal bar
        else:
            x[i, 0, 2:26, pos:pos + 2] += 1.0  # vertical bar
    return x.astype(np.float32), y


def main():
    torch.manual_seed(0)
    x, y = make_data()
    export_example(os.path.dirname(os.path.abspath(__file__)), CnnLoss(), [("x", x), ("y", y)])


if __name__ == "__main__":
    main()
