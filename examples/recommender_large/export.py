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

import torch

EXAMPLES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, EXAMPLES)
from export_common import export_example  # noqa: E402


def _load_small_recommender():
    """The small example's model and data generator, so the two stay the same model."""
    path = os.path.join(EXAMPLES, "recommender", "export.py")
    spec = importlib.util.spec_from_file_location("recommender_export", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_small = _load_small_recommender()

USERS = 100_000
ITEMS = 1_000_000
SAMPLES = 16384


class RecommenderLargeLoss(_small.RecommenderLoss):
    """The small recommender's model with the large tables (bench/distributed.py
    and tests/tools/train_reference.py look for the *Loss class of this file)."""

    def __init__(self):
        super().__init__(users=USERS, items=ITEMS)


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        raise SystemExit("usage: %s OUT_DIR" % sys.argv[0])
    out_dir = os.path.abspath(sys.argv[1])
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    data = _small.make_data(seed=7, users=USERS, items=ITEMS, samples=SAMPLES)
    export_example(out_dir, RecommenderLargeLoss(), data)


if __name__ == "__main__":
    main()
