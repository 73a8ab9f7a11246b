#!/usr/bin/python3
"""An LM1B-like language model (the Parallax paper's regime): an LSTM over a
large vocabulary trained with a sampled softmax, so that both the input
embedding and the output weights and biases are read only through row look-ups
(Gather) and are *sparse* variables.

Embedding(V, E) -> LSTM(E, H, batch_first) -> sampled softmax over the true
next word and S negative words shared by the positions of a sequence:
  logit_true[b,t]   = <h[b,t], W_out[target[b,t]]> + b_out[target[b,t]]
  logit_neg[b,t,s]  = <h[b,t], W_out[neg[b,s]]>    + b_out[neg[b,s]]
  loss = mean over (b,t) of cross_entropy([logit_true, logit_neg...], class 0)
Negatives are drawn uniformly by the data generator and stored as an input
(`negatives`), so the graph is deterministic and one rank at batch N*b sees the
same samples as N ranks at b. Uniform sampling needs no log-Q correction.

Inputs: tokens, targets int64 [T]; negatives int64 [S]. Output: loss.

usage: export.py                 the small example kept in git, next to this file
                                 (V=2000, E=32, H=64, T=8, S=32, 256 samples)
       export.py OUT_DIR [--vocab V] [--embed E] [--hidden H] [--seq T]
                 [--negatives S] [--samples N]
                                 a benchmark-sized model (default V=100000,
                                 E=128, H=256, T=16, S=64, 8192 samples) in OUT_DIR
"""

import argparse
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_common import export_example  # noqa: E402

SMALL = dict(vocab=2000, embed=32, hidden=64, seq=8, negatives=32, samples=256)
LARGE = dict(vocab=100_000, embed=128, hidden=256, seq=16, negatives=64, samples=8192)


class Lm1bLoss(nn.Module):
    def __init__(self, vocab=SMALL["vocab"], embed=SMALL["embed"], hidden=SMALL["hidden"]):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        # Output layer as plain tables: every read is a row look-up.
        self.out_w = nn.Embedding(vocab, hidden)
        self.out_b = nn.Embedding(vocab, 1)
        with torch.no_grad():
            self.out_w.weight.mul_(0.1)
            self.out_b.weight.uniform_(-0.1, 0.1)

    def forward(self, tokens, targets, negatives):
        h, _ = self.lstm(self.embed(tokens))                       # [B,T,H]
        w_t = self.out_w(targets)                                   # [B,T,H]
        true_logit = (h * w_t).sum(-1, keepdim=True) + self.out_b(targets)  # [B,T,1]
        w_n = self.out_w(negatives)                                 # [B,S,H]
        neg_logit = torch.matmul(h, w_n.transpose(1, 2))            # [B,T,S]
        neg_logit = neg_logit + self.out_b(negatives).transpose(1, 2)  # + [B,1,S]
        logits = torch.cat([true_logit, neg_logit], dim=-1)         # [B,T,1+S]
        logits = logits.reshape(-1, logits.shape[-1])
        # the true word is class 0 of every row
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        return nn.functional.cross_entropy(logits, labels)


def make_data(vocab, seq, negatives, samples, seed=5):
    """A Zipf-ish word stream in which each word has a few likely successors,
    cut into windows; negatives uniform over the vocabulary."""
    rng = np.random.RandomState(seed)
    successors = rng.randint(0, vocab, size=(vocab, 4))
    length = samples * seq + 1
    text = np.empty(length, dtype=np.int64)
    text[0] = 0
    follow = rng.rand(length) < 0.8
    pick = rng.randint(0, 4, size=length)
    zipf = np.minimum(rng.zipf(1.3, size=length), vocab) - 1
    for i in range(1, length):
        text[i] = successors[text[i - 1], pick[i]] if follow[i] else zipf[i]
    tokens = text[:-1].reshape(samples, seq).copy()
    targets = text[1:].reshape(samples, seq).copy()
    neg = rng.randint(0, vocab, size=(samples, negatives)).astype(np.int64)
    return tokens, targets, neg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?")
    for k in LARGE:
        ap.add_argument("--" + k, type=int)
    a = ap.parse_args()
    cfg = dict(SMALL if a.out_dir is None else LARGE)
    for k in cfg:
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    out_dir = os.path.dirname(os.path.abspath(__file__)) if a.out_dir is None else a.out_dir
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    tokens, targets, neg = make_data(cfg["vocab"], cfg["seq"], cfg["negatives"], cfg["samples"])
    export_example(
        out_dir,
        Lm1bLoss(cfg["vocab"], cfg["embed"], cfg["hidden"]),
        [("tokens", tokens), ("targets", targets), ("negatives", neg)],
    )


if __name__ == "__main__":
    main()
