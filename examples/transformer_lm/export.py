#!/usr/bin/python3
"""Small causal transformer language model; the exported graph computes the token cross-entropy.

Token embedding (1000, 32) + learned positional embedding (16, 32), two
nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0,
batch_first) under a causal mask, Linear(32, 1000), cross-entropy averaged over
every token. Inputs: tokens int64 [batch, 16], targets int64 [batch, 16].
Output: loss (scalar float32). Data: the same kind of synthetic text as lstm_lm.
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_common import export_example, language_model_data  # noqa: E402

VOCAB = 1000
SEQ = 16
D_MODEL = 32
SAMPLES = 256


class TransformerLmLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(SEQ, D_MODEL)
        layer = nn.TransformerEncoderLayer(
            d_model=D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.out = nn.Linear(D_MODEL, VOCAB)
        # nn.TransformerEncoder deep-copies one layer, and LayerNorm starts at
        # ones/zeros: torch.onnx.export would then merge equal initializers
        # (tying weights through Identity nodes). Perturb every parameter so each
        # one stays a separate trainable initializer.
        with torch.no_grad():
            for param in self.parameters():
                param.add_(0.05 * torch.randn_like(param))

    def forward(self, tokens, targets):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden = self.embed(tokens) + self.pos(positions)
        # Additive causal mask (position i attends to positions <= i), built from
        # the input's shape rather than stored: a stored buffer would become an
        # initializer, which the compiler would treat as a trainable weight.
        future = positions.unsqueeze(0) > positions.unsqueeze(1)
        mask = torch.zeros(future.shape).masked_fill(future, float("-inf"))
        hidden = self.encoder(hidden, mask=mask)
        logits = self.out(hidden)
        return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def main():
    torch.manual_seed(0)
    tokens, targets = language_model_data(VOCAB, SEQ, SAMPLES, seed=4)
    export_example(
        os.path.dirname(os.path.abspath(__file__)),
        TransformerLmLoss(),
        [("tokens", tokens), ("targets", targets)],
    )


if __name__ == "__main__":
    main()
