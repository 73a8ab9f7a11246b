#!/usr/bin/python3
"""Accuracy of masked training: an MLP at 80% sparsity trained with RigL
against the same MLP dense, the same number of steps, on a synthetic task
that needs the dense model's capacity.

usage: bench/rigl_convergence.py PARALLAXC [--task teacher|clusters]
           [--dim D] [--teacher-units 256] [--teacher-fanin 8]
           [--clusters 1000] [--noise 0.3] [--train N] [--held-out 10000]
           [--width 512] [--hidden 2] [--steps 6000] [--batch 128]
           [--lr 0.05] [--lr-schedule cosine|constant] [--lr-warmup 100]
           [--sparsity 0.8] [--dst-every 100] [--dst-fraction 0.3]
           [--dst-until 0.75] [--seeds 1,2,3] [--configs dense,rigl,static,small]
           [--keep DIR]

The tasks (10 classes; --train training samples, then --held-out
validation and as many test samples, all drawn once with seed 0):
  teacher   (default) standard normal inputs of --dim (64) features,
            labelled by a fixed random teacher network: --teacher-units
            ReLU units, each reading its own random --teacher-fanin of the
            inputs, and 10 dense outputs; the label is the largest output.
            Many units are what it needs (a dense student with a fifth of
            the weights has too few), each reading few inputs (which a
            sparse student can find). 200,000 training samples.
  clusters  --dim (16) dimensions, --clusters random centres each with a
            random class, a sample is a centre plus Gaussian noise
            (--noise). 50,000 training samples.

The student: Linear(D, W) ReLU [Linear(W, W) ReLU] x (--hidden - 1)
Linear(W, 10), softmax cross-entropy, exported with python/parallax,
momentum SGD (--lr, momentum 0.9) with a cosine learning rate over the
run after a linear warm-up (--lr-schedule, --lr-warmup), batch --batch,
the training data shuffled every epoch, 1 thread. Configurations, each
compiled by PARALLAXC and trained --steps steps:
  dense    every weight dense
  rigl     --sparsity auto:S --sparsity-init erk (RigL's rule: S of all
           the weights, spread so that a layer's density goes with
           (in + out) / (in x out): the last layer dense, the W x W layer
           the sparsest), --dst rigl --dst-every K --dst-fraction F
           --dst-until (--dst-until x the steps)
  static   the same initial masks, never updated (no --dst)
  small    dense, width chosen so that it has about (1 - sparsity) of the
           dense model's weights
Accuracy: the saved model's weights, applied in NumPy to the validation and
the test samples. Settings are compared on the validation accuracy; the
test accuracy is reported. Every configuration runs once per seed (--seeds:
the model's initialization and the masks; the task is fixed); the table
gives the means, each seed's test accuracy and the test mean's difference
to dense.
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

CLASSES = 10


def clusters_task(a):
    """--clusters random centres in 16 dimensions, each with a random class; a
    sample is a centre plus Gaussian noise (--noise), labelled with its class."""
    rng = np.random.RandomState(0)
    centres = rng.randn(a.clusters, a.dim).astype(np.float32)
    label = rng.randint(0, CLASSES, a.clusters)
    n = a.train + 2 * a.held_out
    pick = rng.randint(0, a.clusters, n)
    x = (centres[pick] + a.noise * rng.randn(n, a.dim)).astype(np.float32)
    return x, label[pick].astype(np.int64)


def teacher_task(a):
    """A fixed random teacher labels standard normal inputs: --teacher-units
    ReLU units, each reading --teacher-fanin of the --dim inputs (its own
    random subset, weights N(0, 1/fanin)), and 10 dense output units (weights
    N(0, 1/units), less their mean over the units, so that the ReLUs' positive
    mean favours no class); the label is the teacher's largest output."""
    rng = np.random.RandomState(0)
    u = np.zeros((a.teacher_units, a.dim), np.float32)
    for j in range(a.teacher_units):
        pick = rng.choice(a.dim, a.teacher_fanin, replace=False)
        u[j, pick] = rng.randn(a.teacher_fanin) / np.sqrt(a.teacher_fanin)
    v = rng.randn(CLASSES, a.teacher_units) / np.sqrt(a.teacher_units)
    v = (v - v.mean(axis=1, keepdims=True)).astype(np.float32)
    x = rng.randn(a.train + 2 * a.held_out, a.dim).astype(np.float32)
    y = np.argmax(np.maximum(x @ u.T, 0) @ v.T, axis=1).astype(np.int64)
    return x, y


def task(a):
    """(train, validation, test): --train samples, then --held-out each."""
    x, y = (teacher_task if a.task == "teacher" else clusters_task)(a)
    t, h = a.train, a.held_out
    return (x[:t], y[:t]), (x[t:t + h], y[t:t + h]), (x[t + h:], y[t + h:])


class Mlp(torch.nn.Module):
    def __init__(self, dim, width, hidden):
        super().__init__()
        layers = [torch.nn.Linear(dim, width), torch.nn.ReLU()]
        for _ in range(hidden - 1):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        self.net = torch.nn.Sequential(*layers, torch.nn.Linear(width, CLASSES))

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.net(x), y)


def weights_of(dim, width, hidden):
    return dim * width + (hidden - 1) * width * width + width * CLASSES


def small_width(dim, width, hidden, density):
    """The width whose dense MLP has about `density` of the weights of `width`'s."""
    target = density * weights_of(dim, width, hidden)
    return min(range(1, width + 1), key=lambda w: abs(weights_of(dim, w, hidden) - target))


def export(folder, width, hidden, seed, train):
    torch.manual_seed(seed)
    os.makedirs(folder, exist_ok=True)
    x, y = train
    parallax.export(Mlp(x.shape[1], width, hidden), (torch.from_numpy(x[:4]), torch.from_numpy(y[:4])),
                    os.path.join(folder, "model.onnx"))
    return os.path.join(folder, "model.onnx")


def accuracy(saved, *sets):
    w = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    out = []
    for x, y in sets:
        h, layers = x, sorted(int(k.split(".")[1]) for k in w if k.endswith(".weight"))
        for i in layers:
            h = h @ w["net.%d.weight" % i].T + w["net.%d.bias" % i]
            if i < layers[-1]:
                h = np.maximum(h, 0)
        out.append(float(np.mean(np.argmax(h, axis=1) == y)))
    return out


def train(a, folder, model, name, compile_flags, run_flags, seed, data, held_out):
    prog = os.path.join(folder, name)
    saved = prog + ".trained.onnx"
    subprocess.run([a.parallaxc, "compile", model, "-o", prog, "--batch", str(a.batch),
                    "--optimizer", "momentum", "--lr", str(a.lr), "--momentum", "0.9"]
                   + compile_flags, check=True, capture_output=True)
    subprocess.run([prog, "--data", data, "--steps", str(a.steps),
                    "--shuffle", str(seed), "--threads", "1", "--log-every", "0",
                    "--save", saved] + schedule(a) + run_flags, check=True, capture_output=True)
    return accuracy(saved, *held_out)


def schedule(a):
    if a.lr_schedule == "constant":
        return []
    return ["--lr-schedule", "cosine:%d" % a.steps, "--lr-warmup", str(a.lr_warmup)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parallaxc")
    ap.add_argument("--task", choices=("teacher", "clusters"), default="teacher")
    ap.add_argument("--dim", type=int, help="inputs (default: 64 teacher, 16 clusters)")
    ap.add_argument("--teacher-units", type=int, default=256)
    ap.add_argument("--teacher-fanin", type=int, default=8)
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--noise", type=float, default=0.3)
    ap.add_argument("--train", type=int, help="training samples (default: 200,000 teacher, "
                    "50,000 clusters)")
    ap.add_argument("--held-out", type=int, default=10000,
                    help="validation samples, and as many test samples")
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=2, help="hidden layers")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--lr-schedule", choices=("cosine", "constant"), default="cosine")
    ap.add_argument("--lr-warmup", type=int, default=100)
    ap.add_argument("--sparsity", type=float, default=0.8)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--dst-every", type=int, default=100)
    ap.add_argument("--dst-fraction", type=float, default=0.3)
    ap.add_argument("--dst-until", type=float, default=0.75, help="fraction of the steps")
    ap.add_argument("--configs", default="dense,rigl,static,small")
    ap.add_argument("--keep", help="folder for the models and programs (default: temporary)")
    a = ap.parse_args()
    if a.dim is None:
        a.dim = 64 if a.task == "teacher" else 16
    if a.train is None:
        a.train = 200000 if a.task == "teacher" else 50000
    folder = a.keep or tempfile.mkdtemp(prefix="px_rigl_")
    try:
        run(a, folder)
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


def run(a, folder):
    train_set, valid, test = task(a)
    data = os.path.join(folder, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), train_set[0])
    np.save(os.path.join(data, "y.npy"), train_set[1])
    small = small_width(a.dim, a.width, a.hidden, 1 - a.sparsity)
    masks = ["--sparsity", "auto:%g" % a.sparsity, "--sparsity-init", "erk"]
    seeds = [int(s) for s in a.seeds.split(",")]
    dst = ["--dst", "rigl", "--dst-every", str(a.dst_every), "--dst-fraction",
           str(a.dst_fraction), "--dst-until", str(int(a.dst_until * a.steps))]
    configs = [c for c in (("dense", a.width, [], []), ("rigl", a.width, masks, dst),
                           ("static", a.width, masks, []), ("small", small, [], []))
               if c[0] in a.configs.split(",")]
    acc = {c[0]: [] for c in configs}
    for seed in seeds:
        for name, width, cflags, rflags in configs:
            model = export(os.path.join(folder, "w%d_s%d" % (width, seed)), width, a.hidden, seed,
                           train_set)
            acc[name].append(train(a, folder, model, name, cflags + ["--sparsity-seed", str(seed)]
                                   if cflags else [], rflags, seed, data, (valid, test)))
            print("seed %d %-7s validation %.4f test %.4f" % ((seed, name) + tuple(acc[name][-1])),
                  flush=True)
    what = ("teacher of %d units, fan-in %d" % (a.teacher_units, a.teacher_fanin)
            if a.task == "teacher" else "%d clusters, noise %g" % (a.clusters, a.noise))
    print("\nMLP %s-10 (small: width %d), %s task, %d training samples, %d steps of "
          "batch %d, momentum SGD lr %g (%s), 1 thread; RigL every %d steps, fraction %g, "
          "until %d%%" % ("-".join(str(v) for v in [a.dim] + [a.width] * a.hidden), small, what, a.train, a.steps, a.batch, a.lr,
                          "constant" if a.lr_schedule == "constant" else
                          "cosine, warm-up %d" % a.lr_warmup, a.dst_every, a.dst_fraction,
                          100 * a.dst_until))
    print("%-8s %9s %10s %10s   %s" % ("config", "weights", "valid", "test", "test per seed / "
                                       "test vs dense"))
    base = np.mean([v[1] for v in acc["dense"]]) if "dense" in acc else None
    for name, width, cflags, _ in configs:
        n = weights_of(a.dim, width, a.hidden)
        live = round((1 - a.sparsity) * n) if cflags else n
        va, te = np.mean([v[0] for v in acc[name]]), np.mean([v[1] for v in acc[name]])
        print("%-8s %9d %10.4f %10.4f   %s%s" %
              (name, live, va, te, " ".join("%.4f" % v[1] for v in acc[name]),
               "" if base is None else "  (%+.2f points)" % (100 * (te - base))))


if __name__ == "__main__":
    main()
