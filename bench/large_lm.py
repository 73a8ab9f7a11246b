#!/usr/bin/python3
"""Benchmark-sized language models for bench/train.py: the examples' LSTM and
Transformer LMs with a realistic output layer (full softmax over the
vocabulary), exported like the examples (examples/export_common.py) into
OUT_DIR (model.onnx, data/*.npy, reference.json).

usage: bench/large_lm.py {lstm,transformer} OUT_DIR [--vocab V] [--embed E]
           [--hidden H] [--layers L] [--heads N] [--seq T] [--samples S] [--large]

lstm:        Embedding(V, E) -> LSTM(E, H) -> Linear(H, V) -> cross-entropy
             (default V=20000, E=64, H=128)
transformer: token + position embedding (V, E), L x TransformerEncoderLayer
             (d_model=E, N heads, feed-forward H, causal mask) -> Linear(E, V)
             -> cross-entropy (default V=8000, E=64, H=256, L=1, N=4)
The data is the examples' kind of synthetic text (each word has a few likely
successors), T=16 tokens per sample, S=512 samples. --large writes the
weights as external data (model.onnx.data) and no metadata or reference
losses (examples/export_common.py), for models of hundreds of MB.
"""

import argparse
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
from export_common import export_example, language_model_data  # noqa: E402

DEFAULTS = {
    "lstm": {"vocab": 20000, "embed": 64, "hidden": 128, "layers": 1, "heads": 1},
    "transformer": {"vocab": 8000, "embed": 64, "hidden": 256, "layers": 1, "heads": 4},
}
COMMON = {"seq": 16, "samples": 512}


class LargeLstmLmLoss(nn.Module):
    def __init__(self, vocab, embed, hidden, **_):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens, targets):
        hidden, _ = self.lstm(self.embed(tokens))
        logits = self.out(hidden)
        return nn.functional.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))


class LargeTransformerLmLoss(nn.Module):
    def __init__(self, vocab, embed, hidden, layers, heads, seq, **_):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, embed)
        self.pos = nn.Embedding(seq, embed)
        layer = nn.TransformerEncoderLayer(d_model=embed, nhead=heads, dim_feedforward=hidden,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.out = nn.Linear(embed, vocab)
        # As in examples/transformer_lm: distinct values keep the exporter from
        # merging equal initializers of the copied layers.
        with torch.no_grad():
            for param in self.parameters():
                param.add_(0.05 * torch.randn_like(param))

    def forward(self, tokens, targets):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden = self.embed(tokens) + self.pos(positions)
        future = positions.unsqueeze(0) > positions.unsqueeze(1)
        mask = torch.zeros(future.shape).masked_fill(future, float("-inf"))
        hidden = self.encoder(hidden, mask=mask)
        logits = self.out(hidden)
        return nn.functional.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))


CLASSES = {"lstm": LargeLstmLmLoss, "transformer": LargeTransformerLmLoss}


def sizes(kind, overrides=None):
    s = dict(DEFAULTS[kind], **COMMON)
    s.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return s


def build(kind, overrides=None):
    """(model, [(input name, array)]) with the same weights on every call."""
    s = sizes(kind, overrides)
    torch.manual_seed(0)
    model = CLASSES[kind](**s)
    tokens, targets = language_model_data(s["vocab"], s["seq"], s["samples"], seed=5)
    return model, [("tokens", tokens), ("targets", targets)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=sorted(CLASSES))
    ap.add_argument("out_dir")
    for k in ("vocab", "embed", "hidden", "layers", "heads", "seq", "samples"):
        ap.add_argument("--" + k, type=int)
    ap.add_argument("--large", action="store_true")
    a = ap.parse_args()
    overrides = {k: getattr(a, k) for k in ("vocab", "embed", "hidden", "layers", "heads", "seq",
                                             "samples")}
    model, inputs = build(a.kind, overrides)
    os.makedirs(a.out_dir, exist_ok=True)
    export_example(a.out_dir, model, inputs, large=a.large)


if __name__ == "__main__":
    main()
