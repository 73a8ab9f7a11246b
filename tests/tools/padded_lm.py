#!/usr/bin/python3
"""A small language model whose targets skip rows (padding), for the exactness
of a mean over kept rows across ranks (tests/cli/train_loss_ignore.sh).

  padded_lm.py DIR SRCDIR VARIANT
copies this file to DIR/export.py (train_reference.py reads the module
there) and writes DIR/model.onnx, DIR/data, DIR/reference.json with the
examples' export (examples/export_common.py). VARIANT (also in DIR/variant):
  sce       F.cross_entropy(ignore_index=-100): SoftmaxCrossEntropyLoss
  nll       F.nll_loss(log_softmax, ignore_index=-100): NegativeLogLikelihoodLoss
  weighted  sce with class weights (a buffer, not trained)
  vocab     sce without the hidden layer: under --tp the output projection
            is split by classes (TPSoftmaxCrossEntropy, docs/parallelism.md)

Embedding(50, 16) -> Linear(16, 16) -> tanh -> Linear(16, 16 classes) (the
hidden layer and the output one form a pair --tp splits), over
4 tokens per sample. In every 8 consecutive samples (one global batch of 8)
the targets at -100 are: 7 of the 8 of samples 0-1 (rank 0 of 4 at batch 2
keeps one), none of samples 2-3, 2 of 4 in samples 4 and 5, 1 in 6 and 7:
ranks at any batch of 2 or 4 keep different counts."""
import os
import shutil
import sys

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

VOCAB, DIM, CLASSES, SEQ, SAMPLES = 50, 16, 16, 4, 64
HERE = os.path.dirname(os.path.abspath(__file__))


def _variant():
    path = os.path.join(HERE, "variant")
    return open(path).read().strip() if os.path.exists(path) else "sce"


class PaddedLmLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.variant = _variant()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.hidden = nn.Linear(DIM, DIM)
        self.out = nn.Linear(DIM, CLASSES)
        self.register_buffer("class_weight", torch.linspace(0.5, 2.0, CLASSES))

    def forward(self, tokens, targets):
        h = self.embed(tokens)
        if self.variant != "vocab":
            h = torch.tanh(self.hidden(h))
        logits = self.out(h).reshape(-1, CLASSES)
        flat = targets.reshape(-1)
        if self.variant == "nll":
            return F.nll_loss(F.log_softmax(logits, dim=1), flat, ignore_index=-100)
        if self.variant == "weighted":
            return F.cross_entropy(logits, flat, weight=self.class_weight, ignore_index=-100)
        return F.cross_entropy(logits, flat, ignore_index=-100)


def data():
    rng = np.random.RandomState(5)
    tokens = rng.randint(0, VOCAB, size=(SAMPLES, SEQ)).astype(np.int64)
    targets = (tokens * 7 + 3) % CLASSES
    ignored = {0: [1, 2, 3], 1: [0, 1, 2, 3], 4: [0, 2], 5: [1, 3], 6: [2], 7: [0]}
    for i in range(SAMPLES):
        for t in ignored.get(i % 8, []):
            targets[i, t] = -100
    return tokens, targets


def main():
    out, src, variant = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.abspath(__file__), os.path.join(out, "export.py"))
    with open(os.path.join(out, "variant"), "w") as f:
        f.write(variant + "\n")
    sys.path.insert(0, os.path.join(src, "examples"))
    from export_common import export_example
    global HERE
    HERE = out
    torch.manual_seed(0)
    tokens, targets = data()
    export_example(out, PaddedLmLoss(), [("tokens", tokens), ("targets", targets)])


if __name__ == "__main__":
    main()
