#!/usr/bin/python3
"""Word-level LSTM language model; the exported graph computes the token cross-entropy.

Embedding(1000, 32) -> LSTM(32, 64, batch_first) -> Linear(64, 1000) -> cross-entropy
averaged over every token. Inputs: tokens int64 [batch, 16], targets int64 [batch, 16]
(targets are the tokens shifted by one). Output: loss (scalar float32).
Data: 256 windows cut from one synthetic text whose next word usually follows
from the current one, so training can actually lower the loss.
"""

import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_common import export_example  # noqa: E402

VOCAB = 1000
SEQ = 16
SAMPLES = 256


class LstmLmLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.lstm = nn.LSTM(32, 64, batch_first=True)
        self.out = nn.Linear(64, VOCAB)

    def forward(self, tokens, targets):
        hidden, _ = self.lstm(self.embed(tokens))
        logits = self.out(hidden)
        return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def make_text(rng, length):
    """A Zipf-ish word stream where each word has a few likely successors."""
    successors = rng.randint(0, VOCAB, size=(VOCAB, 4))
    text = np.empty(length, dtype=np.int64)
    text[0] = 0
    for i in range(1, length):
        if rng.rand() < 0.8:
            text[i] = successors[text[i - 1], rng.randint(0, 4)]
        else:
            text[i] = min(int(rng.zipf(1.3)), VOCAB) - 1
    return text


def make_data():
    rng = np.random.RandomState(3)
    text = make_text(rng, SAMPLES * SEQ + 1)
    tokens = text[:-1].reshape(SAMPLES, SEQ).copy()
    targets = text[1:].reshape(SAMPLES, SEQ).copy()
    return tokens, targets


def main():
    torch.manual_seed(0)
    tokens, targets = make_data()
    export_example(
        os.path.dirname(os.path.abspath(__file__)),
        LstmLmLoss(),
        [("tokens", tokens), ("targets", targets)],
    )


if __name__ == "__main__":
    main()
