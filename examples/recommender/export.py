#!/usr/bin/python3
"""Click-through recommender; the exported graph computes the BCE-with-logits loss.

Embedding tables: user 5000x16, item 10000x16 (shared by the candidate item and
the user's item history), category 100x8. The history is a bag of 8 item ids,
embedded with Embedding + mean over the bag (nn.EmbeddingBag would export a
Loop). The concatenation [user | item | mean(history) | category | dense] goes
through an MLP 60-64-32-1. Inputs: user int64 [batch], item int64 [batch],
history int64 [batch, 8], category int64 [batch], dense float32 [batch, 4],
label float32 [batch]. Output: loss (scalar float32).
Data: 512 samples with ids drawn Zipf-like (a few hot rows, many cold ones, as in
real recommender traffic) and labels from a hidden scoring rule.
"""

import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from export_common import export_example  # noqa: E402

USERS = 5000
ITEMS = 10000
CATEGORIES = 100
HISTORY = 8
DENSE = 4
SAMPLES = 512


class RecommenderLoss(nn.Module):
    """users / items: table sizes (examples/recommender_large uses bigger ones)."""

    def __init__(self, users=USERS, items=ITEMS):
        super().__init__()
        self.user = nn.Embedding(users, 16)
        self.item = nn.Embedding(items, 16)
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


def stable_bce_with_logits(logits, label):
    """binary_cross_entropy_with_logits written out: torch exports the library
    version as log(sigmoid(x)) and log(1 - sigmoid(x)), which turn into -inf once
    training pushes |x| past ~17 in float32. max(x, 0) - x*y + log(1 + exp(-|x|))
    is the same function without the overflow."""
    per_sample = torch.relu(logits) - logits * label + torch.log(1 + torch.exp(-torch.abs(logits)))
    return per_sample.mean()


def zipf_ids(rng, count, shape):
    """Ids in [0, count) with a heavy head, shuffled so hot ids are spread out."""
    ranks = np.minimum(rng.zipf(1.2, size=shape), count) - 1
    return rng.permutation(count)[ranks].astype(np.int64)


def make_data(seed=5, users=USERS, items=ITEMS, samples=SAMPLES):
    rng = np.random.RandomState(seed)
    user = zipf_ids(rng, users, samples)
    item = zipf_ids(rng, items, samples)
    history = zipf_ids(rng, items, (samples, HISTORY))
    category = (item % CATEGORIES).astype(np.int64)
    dense = rng.randn(samples, DENSE).astype(np.float32)
    # Hidden rule: users and items have a taste in [-1, 1]; a click is likelier
    # when they agree and when the first dense feature is high.
    user_taste = rng.uniform(-1, 1, users)
    item_taste = rng.uniform(-1, 1, items)
    score = 2.0 * user_taste[user] * item_taste[item] + 0.5 * dense[:, 0]
    label = (rng.rand(samples) < 1.0 / (1.0 + np.exp(-score))).astype(np.float32)
    return [("user", user), ("item", item), ("history", history), ("category", category),
            ("dense", dense), ("label", label)]


def main():
    torch.manual_seed(0)
    model = RecommenderLoss()
    data = make_data()
    with torch.no_grad():  # the hand-written loss must equal the library's
        logits = torch.randn(64) * 30
        label = torch.from_numpy(data[-1][1][:64])
        ours = stable_bce_with_logits(logits, label)
        library = nn.functional.binary_cross_entropy_with_logits(logits, label)
        assert abs(float(ours) - float(library)) <= 1e-5 * abs(float(library)), (ours, library)
    export_example(os.path.dirname(os.path.abspath(__file__)), model, data)


if __name__ == "__main__":
    main()
