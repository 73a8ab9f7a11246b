#!/usr/bin/python3
"""Accuracy of masked training: an MLP at 80% sparsity trained with RigL
against the same MLP dense, the same number of steps, on a synthetic task
that needs the dense model's capacity.

usage: bench/rigl_convergence.py PARALLAXC [--steps 6000] [--batch 128]
           [--width 256] [--sparsity 0.8] [--clusters 1000] [--noise 0.3]
           [--seeds 1,2,3] [--dst-every 200] [--dst-fraction 0.1] [--keep DIR]

The task: 10 classes over 16-dimensional inputs; --clusters random centres
(standard normal), each with a random class, and a sample is a centre plus
Gaussian noise (--noise) labelled with that centre's class. 50,000
training samples, 10,000 held out. Carving out a thousand small regions is
what needs width: a dense MLP with a fifth of the parameters does markedly
worse (the `small` row).

The model: Linear(16, W) ReLU Linear(W, W) ReLU Linear(W, 10), softmax
cross-entropy, exported with python/parallax, momentum SGD (lr 0.05,
momentum 0.9), batch --batch, the training data shuffled every epoch.
Configurations, each compiled by PARALLAXC and trained --steps steps:
  dense    every weight dense
  rigl     --sparsity auto:S --sparsity-init erk (RigL's rule: S of all
           the weights, the small first and last layers kept dense, the
           W x W layer sparser), --dst rigl --dst-every K --dst-fraction F
           (mask updates until 3/4 of the run)
  static   the same initial masks, never updated (no --dst)
  small    dense, width chosen so that it has about (1 - sparsity) of the
           dense model's weights
Accuracy: the saved model's weights, applied in NumPy to the held-out
samples. Every configuration runs once per seed (--seeds: the model's
initialization and the masks; the task is fixed); the table gives each
seed's accuracy and the mean, and the difference of the means to dense.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

for _alias, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _t)
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import parallax  # noqa: E402

DIM, CLASSES, TRAIN, TEST = 16, 10, 50000, 10000


def task(clusters, noise):
    rng = np.random.RandomState(0)
    centres = rng.randn(clusters, DIM).astype(np.float32)
    label = rng.randint(0, CLASSES, clusters)
    pick = rng.randint(0, clusters, TRAIN + TEST)
    x = (centres[pick] + noise * rng.randn(TRAIN + TEST, DIM)).astype(np.float32)
    y = label[pick].astype(np.int64)
    return (x[:TRAIN], y[:TRAIN]), (x[TRAIN:], y[TRAIN:])


class Mlp(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(DIM, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
            torch.nn.ReLU(), torch.nn.Linear(width, CLASSES))

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.net(x), y)


def matrices(width):
    return [DIM * width, width * width, width * CLASSES]


def weights_of(width):
    return sum(matrices(width))


def small_width(width, density):
    """The width whose dense MLP has about `density` of the weights of `width`'s."""
    target = density * weights_of(width)
    return min(range(1, width + 1), key=lambda w: abs(weights_of(w) - target))


def export(folder, width, seed, train):
    torch.manual_seed(seed)
    os.makedirs(folder, exist_ok=True)
    x, y = train
    parallax.export(Mlp(width), (torch.from_numpy(x[:4]), torch.from_numpy(y[:4])),
                    os.path.join(folder, "model.onnx"))
    return os.path.join(folder, "model.onnx")


def accuracy(saved, test):
    w = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    h = test[0]
    for i in (0, 2, 4):
        h = h @ w["net.%d.weight" % i].T + w["net.%d.bias" % i]
        if i < 4:
            h = np.maximum(h, 0)
    return float(np.mean(np.argmax(h, axis=1) == test[1]))


def train(a, folder, model, name, compile_flags, run_flags, seed, data, test):
    prog = os.path.join(folder, name)
    saved = prog + ".trained.onnx"
    subprocess.run([a.parallaxc, "compile", model, "-o", prog, "--batch", str(a.batch),
                    "--optimizer", "momentum", "--lr", "0.05", "--momentum", "0.9"]
                   + compile_flags, check=True, capture_output=True)
    subprocess.run([prog, "--data", data, "--steps", str(a.steps),
                    "--shuffle", str(seed), "--threads", "1", "--log-every", "0",
                    "--save", saved] + run_flags, check=True, capture_output=True)
    return accuracy(saved, test)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parallaxc")
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--sparsity", type=float, default=0.8)
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--noise", type=float, default=0.3)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--dst-every", type=int, default=200)
    ap.add_argument("--dst-fraction", type=float, default=0.1)
    ap.add_argument("--keep", help="folder for the models and programs (default: temporary)")
    a = ap.parse_args()
    folder = a.keep or tempfile.mkdtemp(prefix="px_rigl_")
    try:
        run(a, folder)
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


def run(a, folder):
    train_set, test = task(a.clusters, a.noise)
    data = os.path.join(folder, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), train_set[0])
    np.save(os.path.join(data, "y.npy"), train_set[1])
    small = small_width(a.width, 1 - a.sparsity)
    masks = ["--sparsity", "auto:%g" % a.sparsity, "--sparsity-init", "erk"]
    seeds = [int(s) for s in a.seeds.split(",")]
    configs = [("dense", a.width, [], []),
               ("rigl", a.width, masks,
                ["--dst", "rigl", "--dst-every", str(a.dst_every), "--dst-fraction",
                 str(a.dst_fraction)]),
               ("static", a.width, masks, []),
               ("small", small, [], [])]
    acc = {c[0]: [] for c in configs}
    for seed in seeds:
        for name, width, cflags, rflags in configs:
            model = export(os.path.join(folder, "w%d_s%d" % (width, seed)), width, seed, train_set)
            acc[name].append(train(a, folder, model, name, cflags + ["--sparsity-seed", str(seed)]
                                   if cflags else [], rflags, seed, data, test))
            print("seed %d %-7s %.4f" % (seed, name, acc[name][-1]), flush=True)
    print("\nMLP 16-%d-%d-10 (small: width %d), %d clusters, noise %g, %d steps of batch %d, "
          "momentum SGD, 1 thread; held-out accuracy" %
          (a.width, a.width, small, a.clusters, a.noise, a.steps, a.batch))
    print("%-8s %9s %10s   %s" % ("config", "weights", "mean acc", "per seed / vs dense"))
    base = np.mean(acc["dense"])
    for name, width, cflags, _ in configs:
        n = weights_of(width)
        live = sum(round(k * (1 - a.sparsity)) for k in matrices(width)) if cflags else n
        mean = np.mean(acc[name])
        print("%-8s %9d %10.4f   %s  (%+.2f points)" %
              (name, live, mean, " ".join("%.4f" % v for v in acc[name]), 100 * (mean - base)))


if __name__ == "__main__":
    main()
