#!/usr/bin/python3
"""The click-through recommender of examples/recommender at a realistic size:
a 1,000,000-row item table, so that densifying its gradient (what allreduce
mode and PyTorch DDP with dense embeddings do) costs what it costs in practice.

usage: examples/recommender_large/export.py OUT_DIR

Writes OUT_DIR/model.onnx (~70 MB of weights), OUT_DIR/data/<input>.npy and
OUT_DIR/reference.json. Nothing is written next to this script: the model is
too big to keep in git; bench/distributed.py generates it into bench/.cache/.

Same structure as examples/recommender (see its docstring): embedding tables
user 100000x16, item 1000000x16 (shared by the candidate item and the bag of 8
history items), category 100x8; MLP 60-64-32-1 on [user | item |
mean(history) | category | dense]; BCE-with-logits loss. Same inputs, names and
dtypes. Data: 16384 samples with Zipf-like ids (seeded), labels from a hidden
scoring rule. Deterministic: the same OUT_DIR contents on every run.
"""

import importlib.util
import os
import sys

import numpy as np
import torch
from torch import nn

EXAMPLES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, EXAMPLES)
from export_common import export_example  # noqa: E402


def _load_small_recommender():
    """The small example's helpers (loss, id sampler), so the two stay the same model."""
    path = os.path.join(EXAMPLES, "recommender", "export.py")
    spec = importlib.util.spec_from_file_location("recommender_export", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_small = _load_small_recommender()
stable_bce_with_logits = _small.stable_bce_with_logits
zipf_ids = _small.zipf_ids

USERS = 100_000
ITEMS = 1_000_000
CATEGORIES = 100
HISTORY = 8
DENSE = 4
SAMPLES = 16384


class RecommenderLargeLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(USERS, 16)
        self.item = nn.Embedding(ITEMS, 16)
        self.category = nn.Embedding(CATEGORIES, 8)
        self.mlp = nn.Sequential(
            nn.Linear(16 + 16 + 16 + 8 + DENSE, 64), nn.ReLU(),
            nn.Linear(64, 32), nn.ReLU(),
            nn.Linear(32, 1),
        )

    def forward(self, user, item, history, category, dense, label):
        features = torch.cat(
            [
                self.user(user),
                self.item(item),
                self.item(history).mean(dim=1),
                self.category(category),
                dense,
            ],
            dim=1,
        )
        logits = self.mlp(features).squeeze(1)
        return stable_bce_with_logits(logits, label)


def make_data():
    rng = np.random.RandomState(7)
    user = zipf_ids(rng, USERS, SAMPLES)
    item = zipf_ids(rng, ITEMS, SAMPLES)
    history = zipf_ids(rng, ITEMS, (SAMPLES, HISTORY))
    category = (item % CATEGORIES).astype(np.int64)
    dense = rng.randn(SAMPLES, DENSE).astype(np.float32)
    user_taste = rng.uniform(-1, 1, USERS)
    item_taste = rng.uniform(-1, 1, ITEMS)
    score = 2.0 * user_taste[user] * item_taste[item] + 0.5 * dense[:, 0]
    label = (rng.rand(SAMPLES) < 1.0 / (1.0 + np.exp(-score))).astype(np.float32)
    return [("user", user), ("item", item), ("history", history), ("category", category),
            ("dense", dense), ("label", label)]


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        raise SystemExit("usage: %s OUT_DIR" % sys.argv[0])
    out_dir = os.path.abspath(sys.argv[1])
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    export_example(out_dir, RecommenderLargeLoss(), make_data())


if __name__ == "__main__":
    main()
