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

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_common import export_example, language_model_data  # noqa: E402

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


def main():
    torch.manual_seed(0)
    tokens, targets = language_model_data(VOCAB, SEQ, SAMPLES, seed=3)
    export_example(
        os.path.dirname(os.path.abspath(__file__)),
        LstmLmLoss(),
        [("tokens", tokens), ("targets", targets)],
    )


if __name__ == "__main__":
    main()
