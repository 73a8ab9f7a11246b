#!/usr/bin/python3
"""PyTorch reference for --eval-data and training metrics (tests/cli/train_eval.sh).

  eval_reference.py make DIR
      writes DIR/model.onnx: a small classifier MLP whose forward returns two
      scalars, the cross-entropy loss and the accuracy
      ((argmax(logits) == y).float().mean()); DIR/train/{x,y}.npy (96
      samples) and DIR/val/{x,y}.npy (42 samples: not a multiple of the
      global batch 4, so a partial last batch is left out).
  eval_reference.py check DIR --batch B --lr F --steps S --every K
        LOSSES.csv EVAL.csv
      trains the same module with torch.optim.SGD on the global batch B in
      the program's data order and, after every K steps and after the last,
      computes the mean loss and accuracy over the validation set's full
      global batches (each batch's mean, averaged: what every rank's batch
      mean averaged over ranks and steps gives). Checks LOSSES.csv
      (step,loss,accuracy of every training step) and EVAL.csv
      (step,loss,accuracy) against it: losses within 1e-4 relative, accuracy
      exactly (to 1e-6). Exits 1 naming the row on a mismatch.

Run with /usr/bin/python3 (Debian's torch and onnx).
"""

import argparse
import csv
import os
import sys

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from torch import nn  # noqa: E402

FEATURES, CLASSES = 12, 4


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, CLASSES))

    def forward(self, x, y):
        logits = self.net(x)
        loss = nn.functional.cross_entropy(logits, y)
        accuracy = (logits.argmax(dim=1) == y).float().mean()
        return loss, accuracy


def data(rng, n, teacher):
    x = rng.randn(n, FEATURES).astype(np.float32)
    y = np.argmax(x @ teacher + 0.5 * rng.randn(n, CLASSES), axis=1).astype(np.int64)
    return x, y


def cmd_make(args):
    torch.manual_seed(3)
    rng = np.random.RandomState(7)
    teacher = rng.randn(FEATURES, CLASSES)
    model = Classifier()
    for sub, n in (("train", 96), ("val", 42)):
        os.makedirs(os.path.join(args.dir, sub), exist_ok=True)
        x, y = data(rng, n, teacher)
        np.save(os.path.join(args.dir, sub, "x.npy"), x)
        np.save(os.path.join(args.dir, sub, "y.npy"), y)
    x = torch.zeros(2, FEATURES)
    y = torch.zeros(2, dtype=torch.int64)
    torch.onnx.export(model, (x, y), os.path.join(args.dir, "model.onnx"),
                      input_names=["x", "y"], output_names=["loss", "accuracy"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=17,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)
    return 0


def load_weights(model, path):
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(inits[name].copy()))


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], [[float(v) for v in r] for r in rows[1:]]


def close(got, want, rtol):
    return abs(got - want) <= rtol * max(abs(want), 1e-3)


def cmd_check(args):
    torch.set_num_threads(1)
    model = Classifier()
    load_weights(model, os.path.join(args.dir, "model.onnx"))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    load = lambda sub: [torch.from_numpy(np.load(os.path.join(args.dir, sub, n + ".npy")))
                        for n in ("x", "y")]
    tx, ty = load("train")
    vx, vy = load("val")
    B = args.batch
    wrap = (len(tx) // B) * B

    def validate():
        with torch.no_grad():
            parts = [model(vx[i:i + B], vy[i:i + B]) for i in range(0, (len(vx) // B) * B, B)]
        return [float(np.mean([float(p[k]) for p in parts])) for k in (0, 1)]

    train_rows, eval_rows = [], []
    for s in range(args.steps):
        i = (s * B) % wrap
        loss, acc = model(tx[i:i + B], ty[i:i + B])
        train_rows.append([s + 1, float(loss), float(acc)])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (s + 1) % args.every == 0 or s + 1 == args.steps:
            eval_rows.append([s + 1] + validate())

    failures = []
    # --losses ends with the step's learning rate; --eval-log does not.
    train_rows = [r + [float(np.float32(args.lr))] for r in train_rows]
    for label, path, want, columns in (
            ("--losses", args.losses, train_rows, ["step", "loss", "accuracy", "lr"]),
            ("--eval-log", args.eval_log, eval_rows, ["step", "loss", "accuracy"])):
        header, got = read_csv(path)
        if header != columns:
            failures.append("%s: header %s, expected %s" % (label, header, ",".join(columns)))
        if len(got) != len(want):
            failures.append("%s: %d rows, expected %d" % (label, len(got), len(want)))
        for g, w in zip(got, want):
            if (len(g) != len(columns) or g[0] != w[0] or not close(g[1], w[1], 1e-4)
                    or abs(g[2] - w[2]) > 1e-6 or any(not close(a, b, 1e-7) for a, b in zip(g[3:], w[3:]))):
                failures.append("%s: row %s, PyTorch %s" % (label, g, w))
    for msg in failures[:10]:
        print("FAIL " + msg)
    print("%d training rows and %d validation rows checked against PyTorch (last validation: %s)"
          % (len(train_rows), len(eval_rows), eval_rows[-1]))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--batch", type=int, required=True, help="global batch")
    c.add_argument("--lr", type=float, required=True)
    c.add_argument("--steps", type=int, required=True)
    c.add_argument("--every", type=int, required=True)
    c.add_argument("losses")
    c.add_argument("eval_log")
    args = ap.parse_args()
    return cmd_make(args) if args.cmd == "make" else cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
