#!/usr/bin/python3
"""Reference trajectories of torch.optim for tests/unit/test_optim.c.

Run with Debian's interpreter (it has torch):
    /usr/bin/python3 tests/tools/optim_reference.py [OUT_DIR]
OUT_DIR defaults to tests/data/optim next to this script's tests/ folder.

Each case starts from a seeded float32 variable, runs a few optimizer steps
with seeded gradients and writes one JSON file: the hyper-parameters, the
initial variable, and per step t (1-based) the gradient given and the
variable and optimizer state after the step. Float32 arrays are strings of
8-hex-digit words, the IEEE bits of each value in order, so values are exact.

dense cases: the gradient is the whole variable's; torch.optim.SGD (plain,
momentum, nesterov), Adam, AdamW, Adagrad, RMSprop, each with and without
weight decay, single-tensor code path (foreach=False).

rows cases (px_optim_rows, lazy semantics): each step touches a few distinct
rows (in no particular order); "g" holds the gradient rows in that order.
  sgd, adagrad: torch.optim.SGD / Adagrad with a sparse COO gradient;
  adam: torch.optim.SparseAdam;
  momentum, nesterov: torch's SGD step (torch.optim.sgd.sgd, foreach=False)
    applied to each touched row alone with that row's own momentum buffer, which
    is what lazy momentum means; a row's first step starts its buffer.
  adamw, rmsprop: torch's AdamW / RMSprop step (torch.optim.adamw.adamw,
    torch.optim.rmsprop.rmsprop, foreach=False) applied to the touched rows
    alone with their own state and, for AdamW, the global step t for the bias
    corrections; AdamW's decoupled decay shrinks the touched rows only.
  *_wd: torch refuses weight decay with sparse gradients (SparseAdam has none);
    the runtime adds wd*w to the touched rows' gradient, so the reference
    gives torch the gradient rows g.add(w[rows], alpha=wd) (torch's own
    weight-decay operation) and no weight decay (AdamW: its own decoupled
    weight decay, on the touched rows).

These torch results come from the AVX2 kernels of torch's CPU build (its
add(alpha) and addcmul use fused multiply-adds); the runtime reproduces
that arithmetic on any CPU.
"""
import json
import os
import struct
import sys

import torch
from torch.optim.adamw import adamw as torch_adamw_step
from torch.optim.rmsprop import rmsprop as torch_rmsprop_step
from torch.optim.sgd import sgd as torch_sgd_step

import torch_optimizers

STEPS = 5
DENSE_SHAPE = (5, 7)  # 35 elements: whole SIMD vectors and a tail
ROWS_SHAPE = (12, 6)


def hexbits(t):
    t = t.detach().contiguous().view(-1).to(torch.float32)
    return "".join("%08x" % struct.unpack("<I", struct.pack("<f", v))[0] for v in t.tolist())


def hyper(kind, lr, momentum=0.0, nesterov=False, betas=(0.9, 0.999), eps=1e-8, wd=0.0,
          alpha=None):
    h = {"kind": kind, "lr": lr, "momentum": momentum, "nesterov": int(nesterov),
         "beta1": betas[0], "beta2": betas[1], "epsilon": eps, "weight_decay": wd}
    if alpha is not None:
        h["alpha"] = alpha
    return h


def make_dense_optimizer(h, p):
    return torch_optimizers.make(h["kind"], [p], h["lr"], momentum=h["momentum"],
                                 nesterov=h["nesterov"], beta1=h["beta1"], beta2=h["beta2"],
                                 epsilon=h["epsilon"], alpha=h.get("alpha", 0.99),
                                 weight_decay=h["weight_decay"])


def slot_names(kind):
    return {"sgd": [], "momentum": ["momentum_buffer"], "adam": ["exp_avg", "exp_avg_sq"],
            "adagrad": ["sum"], "adamw": ["exp_avg", "exp_avg_sq"],
            "rmsprop": ["square_avg"]}[kind]


def dense_case(name, seed, h):
    g = torch.Generator().manual_seed(seed)
    w0 = torch.randn(DENSE_SHAPE, generator=g)
    p = torch.nn.Parameter(w0.clone())
    opt = make_dense_optimizer(h, p)
    steps = []
    for t in range(1, STEPS + 1):
        grad = torch.randn(DENSE_SHAPE, generator=g) * 0.5
        p.grad = grad.clone()
        opt.step()
        st = opt.state[p]
        steps.append({"t": t, "g": hexbits(grad), "w": hexbits(p.data),
                      "slots": [hexbits(st[s]) for s in slot_names(h["kind"])]})
    return {"case": name, "mode": "dense", **h, "n_rows": DENSE_SHAPE[0],
            "dim": DENSE_SHAPE[1], "w0": hexbits(w0), "steps": steps}


class LazyRows:
    """The rows reference of one case: torch state over the whole table."""

    def __init__(self, h, w0):
        self.h = h
        kind = h["kind"]
        self.p = torch.nn.Parameter(w0.clone())
        self.bufs = {}  # lazy momentum: row -> buffer (absent: never touched)
        if kind == "sgd":
            self.opt = torch.optim.SGD([self.p], lr=h["lr"])
        elif kind == "adagrad":
            self.opt = torch.optim.Adagrad([self.p], lr=h["lr"], eps=h["epsilon"])
        elif kind == "adam":
            self.opt = torch.optim.SparseAdam([self.p], lr=h["lr"],
                                              betas=(h["beta1"], h["beta2"]), eps=h["epsilon"])

    def step(self, idx, grad_rows, t):
        h = self.h
        if h["kind"] == "adamw":
            return self.rows_step(idx, grad_rows, t)
        if h["weight_decay"] != 0:
            grad_rows = grad_rows.add(self.p.data[idx], alpha=h["weight_decay"])
        if h["kind"] == "momentum":
            return self.momentum_step(idx, grad_rows)
        if h["kind"] == "rmsprop":
            return self.rows_step(idx, grad_rows, t)
        self.p.grad = torch.sparse_coo_tensor(idx.unsqueeze(0), grad_rows, self.p.shape)
        self.opt.step()

    def momentum_step(self, idx, grad_rows):
        h = self.h
        rows = [self.p.data[r].clone() for r in idx.tolist()]
        bufs = [self.bufs.get(r) for r in idx.tolist()]
        torch_sgd_step(rows, list(grad_rows), bufs, foreach=False, weight_decay=0.0,
                            momentum=h["momentum"], lr=h["lr"], dampening=0.0,
                            nesterov=bool(h["nesterov"]), maximize=False)
        for i, r in enumerate(idx.tolist()):
            self.p.data[r] = rows[i]
            self.bufs[r] = bufs[i]

    def rows_step(self, idx, grad_rows, t):
        """AdamW / RMSprop on the touched rows, each with its own state."""
        h = self.h
        n_slots = len(slot_names(h["kind"]))
        rows = [self.p.data[r].clone() for r in idx.tolist()]
        state = [self.bufs.setdefault(r, [torch.zeros_like(rows[0]) for _ in range(n_slots)])
                 for r in idx.tolist()]
        if h["kind"] == "adamw":
            steps = [torch.tensor(float(t - 1)) for _ in rows]
            torch_adamw_step(rows, list(grad_rows), [s[0] for s in state], [s[1] for s in state],
                             [], steps, foreach=False, amsgrad=False, beta1=h["beta1"],
                             beta2=h["beta2"], lr=h["lr"], weight_decay=h["weight_decay"],
                             eps=h["epsilon"], maximize=False)
        else:
            torch_rmsprop_step(rows, list(grad_rows), [s[0] for s in state], [], [],
                               foreach=False, lr=h["lr"], alpha=h["alpha"], eps=h["epsilon"],
                               weight_decay=0.0, momentum=0.0, centered=False)
        for i, r in enumerate(idx.tolist()):
            self.p.data[r] = rows[i]

    def slots(self):
        kind = self.h["kind"]
        if kind in ("adamw", "rmsprop"):
            out = [torch.zeros_like(self.p.data) for _ in slot_names(kind)]
            for r, st in self.bufs.items():
                for k, s in enumerate(st):
                    out[k][r] = s
            return out
        if kind == "momentum":
            buf = torch.zeros_like(self.p.data)
            for r, b in self.bufs.items():
                buf[r] = b
            return [buf]
        st = self.opt.state[self.p]
        if kind == "adagrad":
            return [st["sum"]]
        if kind == "adam":
            return [st["exp_avg"], st["exp_avg_sq"]]
        return []


def rows_case(name, seed, h):
    g = torch.Generator().manual_seed(seed)
    n_rows, dim = ROWS_SHAPE
    w0 = torch.randn(ROWS_SHAPE, generator=g)
    ref = LazyRows(h, w0)
    steps = []
    for t in range(1, STEPS + 1):
        # rows n_rows-2 and n_rows-1 are never touched
        count = 3 + int(torch.randint(0, 4, (1,), generator=g))
        idx = torch.randperm(n_rows - 2, generator=g)[:count]
        grad_rows = torch.randn(count, dim, generator=g) * 0.5
        ref.step(idx, grad_rows, t)
        steps.append({"t": t, "idx": idx.tolist(), "g": hexbits(grad_rows),
                      "w": hexbits(ref.p.data), "slots": [hexbits(s) for s in ref.slots()]})
    return {"case": name, "mode": "rows", **h, "n_rows": n_rows, "dim": dim,
            "w0": hexbits(w0), "steps": steps}


def cases():
    wd = 0.05
    base = {
        "sgd": hyper("sgd", 0.1),
        "momentum": hyper("momentum", 0.1, momentum=0.9),
        "nesterov": hyper("momentum", 0.1, momentum=0.9, nesterov=True),
        "adam": hyper("adam", 0.01, betas=(0.9, 0.999), eps=1e-8),
        "adagrad": hyper("adagrad", 0.1, eps=1e-10),
    }
    later = {  # added later: their own seeds, so the cases above keep theirs
        "adamw": hyper("adamw", 0.01, betas=(0.9, 0.999), eps=1e-8),
        "rmsprop": hyper("rmsprop", 0.01, eps=1e-8, alpha=0.99),
    }
    out = []
    for seed, kinds in ((100, base), (200, later)):
        for mode, make in (("dense", dense_case), ("rows", rows_case)):
            for name, h in kinds.items():
                for decay in (0.0, wd):
                    seed += 1
                    case = "%s_%s%s" % (mode, name, "_wd" if decay else "")
                    out.append(make(case, seed, dict(h, weight_decay=decay)))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "data", "optim")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    all_cases = cases()
    for c in all_cases:
        c["torch"] = torch.__version__
        with open(os.path.join(out_dir, c["case"] + ".json"), "w") as f:
            json.dump(c, f, indent=1)
            f.write("\n")
    print("wrote %d cases to %s" % (len(all_cases), out_dir))


if __name__ == "__main__":
    main()
