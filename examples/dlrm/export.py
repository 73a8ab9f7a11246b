#!/usr/bin/python3
"""DLRM-style click model with nn.EmbeddingBag tables, exported the way a
PyTorch user would: torch.onnx.export with its default options apart from
training=TrainingMode.TRAINING (and a symbolic batch dim).

PyTorch exports each nn.EmbeddingBag as a Loop over the bags; parallaxc
turns that loop back into Gather + SegmentReduce (ir/control_flow.c), so the
tables stay sparse variables whose gradients are row sets.

Model (after DLRM, Naumov et al. 2019): dense features [batch, 4] go through
a bottom MLP 4-16-8; three categorical features are bags of ids, each summed
by an nn.EmbeddingBag(mode="sum") over its table (1000x8, 500x8, 200x8) from
the flat ids and per-sample offsets; the four 8-vectors interact by pairwise
dot products (6 values), which with the bottom output feed a top MLP 14-16-1;
the loss is binary cross-entropy with logits, written out stably.
Inputs: dense float32 [batch, 4], ids0 int64 [batch, 3], ids1 int64
[batch, 2], ids2 int64 [batch, 4], label float32 [batch]. Output: loss.
Data: 512 samples, Zipf-like ids, labels from a hidden rule.
"""

import json
import os
import sys

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python"))
import parallax  # noqa: E402

DENSE = 4
DIM = 8
TABLES = ((1000, 3), (500, 2), (200, 4))  # (rows, ids per sample)
SAMPLES = 512
REFERENCE_BATCHES = (1, 2, 8, 16)


def stable_bce_with_logits(logits, label):
    """max(x, 0) - x*y + log(1 + exp(-|x|)): binary_cross_entropy_with_logits
    without the log(sigmoid(x)) that torch exports for the library version."""
    per_sample = torch.relu(logits) - logits * label + torch.log(1 + torch.exp(-torch.abs(logits)))
    return per_sample.mean()


class DLRMLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(DENSE, 16), nn.ReLU(), nn.Linear(16, DIM), nn.ReLU())
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, DIM, mode="sum") for rows, _ in TABLES)
        n_features = 1 + len(TABLES)
        pairs = torch.triu_indices(n_features, n_features, offset=1)
        self.register_buffer("pair_index", pairs[0] * n_features + pairs[1], persistent=False)
        self.top = nn.Sequential(nn.Linear(DIM + self.pair_index.numel(), 16), nn.ReLU(),
                                 nn.Linear(16, 1))

    def embed(self, table, ids):
        """One bag per sample: the flat ids and where each sample's bag starts."""
        batch, per_sample = ids.shape
        offsets = torch.arange(0, batch * per_sample, per_sample)
        return table(ids.reshape(-1), offsets)

    def forward(self, dense, ids0, ids1, ids2, label):
        x = self.bottom(dense)
        bags = [self.embed(t, ids) for t, ids in zip(self.tables, (ids0, ids1, ids2))]
        features = torch.stack([x] + bags, dim=1)  # [batch, 4, DIM]
        dots = torch.bmm(features, features.transpose(1, 2)).flatten(1)
        interactions = dots[:, self.pair_index]
        logits = self.top(torch.cat([x, interactions], dim=1)).squeeze(1)
        return stable_bce_with_logits(logits, label)


def zipf_ids(rng, count, shape):
    ranks = np.minimum(rng.zipf(1.2, size=shape), count) - 1
    return rng.permutation(count)[ranks].astype(np.int64)


def make_data(seed=11):
    rng = np.random.RandomState(seed)
    dense = rng.randn(SAMPLES, DENSE).astype(np.float32)
    ids = [zipf_ids(rng, rows, (SAMPLES, per)) for rows, per in TABLES]
    taste = [rng.uniform(-1, 1, rows) for rows, _ in TABLES]
    score = 1.5 * taste[0][ids[0]].mean(1) * taste[1][ids[1]].mean(1) + 0.5 * dense[:, 0]
    label = (rng.rand(SAMPLES) < 1.0 / (1.0 + np.exp(-score))).astype(np.float32)
    return [("dense", dense), ("ids0", ids[0]), ("ids1", ids[1]), ("ids2", ids[2]),
            ("label", label)]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    model = DLRMLoss()
    inputs = make_data()
    names = [n for n, _ in inputs]
    os.makedirs(os.path.join(here, "data"), exist_ok=True)
    for name, array in inputs:
        np.save(os.path.join(here, "data", name + ".npy"), np.ascontiguousarray(array))
    sample = tuple(torch.from_numpy(a[:2].copy()) for _, a in inputs)
    path = os.path.join(here, "model.onnx")

    def export(module, to):
        torch.onnx.export(module, sample, to, input_names=names, output_names=["loss"],
                          dynamic_axes={n: {0: "batch"} for n in names}, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING)

    export(model, path)
    # The parallax.* metadata (docs/metadata.md): the trainable set, ties,
    # padding_idx rows.
    parallax.stamp(model, path, sample, reexport=export)
    losses = {}
    with torch.no_grad():
        for batch in REFERENCE_BATCHES + (SAMPLES,):
            args = tuple(torch.from_numpy(a[:batch].copy()) for _, a in inputs)
            losses[str(batch)] = float(model(*args))
    graph = onnx.load(path).graph
    reference = {
        "model": "model.onnx",
        "inputs": [{"name": n, "dtype": str(a.dtype), "shape": list(a.shape[1:])}
                   for n, a in inputs],
        "samples": SAMPLES,
        "loss_batch_8": losses["8"],
        "losses": losses,
        "note": "PyTorch float32 loss on the first B samples of data/, keyed by B",
        "onnx_ops": sorted({node.op_type for node in graph.node}),
        "initializers": len(graph.initializer),
    }
    with open(os.path.join(here, "reference.json"), "w") as f:
        json.dump(reference, f, indent=2)
        f.write("\n")
    print("dlrm: loss(8)=%r ops=%s" % (losses["8"], " ".join(reference["onnx_ops"])))


if __name__ == "__main__":
    main()
