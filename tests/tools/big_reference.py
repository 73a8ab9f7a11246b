#!/usr/bin/python3
"""big_reference.py MODEL_DIR --batch B --steps K --lr LR --losses RUN.csv
                    [--saved OUT.onnx] [--rtol 1e-5] [--sample 2000]

An independent reference for the models examples/big_recommender/generate.py
writes (tables -> Gather -> Concat with dense -> MLP -> BCE with logits):
trains them with plain SGD in NumPy (float32) for K steps on global batches
of B samples taken in the program's order (step s reads samples
[(s-1)*B mod (floor(n/B)*B), +B), no shuffle), reading only the rows the
batches touch from the external data with np.memmap, never a whole table.

Checks, printing each with its worst difference, exit 1 on a mismatch:
  - the K losses of RUN.csv (the program's --losses) against the reference's
    (relative --rtol);
  - with --saved, the model the program wrote with --save (external data or
    inline): every touched row of every table against the reference's
    trained row (relative --rtol, absolute rtol*0.1 for values near zero),
    a sample of --sample untouched rows bit for bit against the initial
    model, and the dense weights against the reference's (relative --rtol,
    near zero relative to 1% of the tensor's largest value).

Run with /usr/bin/python3 (Debian's numpy and onnx)."""

import argparse
import os
import sys

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402


class Model:
    """The initializers of an ONNX file: external ones as memory maps (only
    the rows read are ever loaded), inline ones as arrays."""

    def __init__(self, path):
        self.dir = os.path.dirname(os.path.abspath(path))
        self.proto = onnx.load(path, load_external_data=False)
        self.tensors = {t.name: t for t in self.proto.graph.initializer}

    def array(self, name):
        t = self.tensors[name]
        if t.data_location != onnx.TensorProto.EXTERNAL:
            return numpy_helper.to_array(t)
        if t.data_type != onnx.TensorProto.FLOAT:
            raise SystemExit("%s: external tensor of type %d, expected float" % (name, t.data_type))
        kv = {e.key: e.value for e in t.external_data}
        return np.memmap(os.path.join(self.dir, kv["location"]), dtype="<f4", mode="r",
                         offset=int(kv.get("offset", "0")), shape=tuple(t.dims))


def architecture(model):
    """Table names (in Concat order) and the MLP's (weight, bias) names."""
    tables, mlp = [], []
    for node in model.proto.graph.node:
        if node.op_type == "Gather":
            tables.append((node.input[0], node.input[1]))
        elif node.op_type == "Gemm":
            mlp.append((node.input[1], node.input[2]))
    if not tables or len(mlp) < 1:
        raise SystemExit("not a big_recommender model: %d Gathers, %d Gemms" % (len(tables),
                                                                                 len(mlp)))
    return tables, mlp


def batches(n, batch, steps):
    usable = (n // batch) * batch
    if usable == 0:
        raise SystemExit("%d samples are fewer than one global batch of %d" % (n, batch))
    for s in range(steps):
        first = (s * batch) % usable
        yield np.arange(first, first + batch)


def train(model_dir, batch, steps, lr):
    model = Model(os.path.join(model_dir, "model.onnx"))
    tables, mlp_names = architecture(model)
    data = {name: np.load(os.path.join(model_dir, "data", name + ".npy"), mmap_mode="r")
            for name in [ids for _, ids in tables] + ["dense", "label"]}
    n = len(data["label"])
    order = list(batches(n, batch, steps))
    # Each table's touched rows, sorted, read once from the model file.
    rows = {}
    for name, ids in tables:
        touched = np.unique(np.concatenate([np.asarray(data[ids][b]) for b in order]))
        rows[name] = (touched, np.array(model.array(name)[touched], dtype=np.float32))
    mlp = [[np.array(model.array(w), dtype=np.float32), np.array(model.array(b), dtype=np.float32)]
           for w, b in mlp_names]
    lr = np.float32(lr)
    losses = []
    for b in order:
        slot = [np.searchsorted(rows[name][0], np.asarray(data[ids][b])) for name, ids in tables]
        emb = [rows[name][1][s] for (name, _), s in zip(tables, slot)]
        x = np.concatenate(emb + [np.asarray(data["dense"][b], dtype=np.float32)], axis=1)
        y = np.asarray(data["label"][b], dtype=np.float32)
        acts, pre = [x], []
        for i, (w, bias) in enumerate(mlp):
            h = (acts[-1] @ w.T + bias).astype(np.float32)
            pre.append(h)
            acts.append(np.maximum(h, np.float32(0)) if i + 1 < len(mlp) else h)
        z = acts[-1][:, 0]
        e = np.exp(-np.abs(z))
        per = np.maximum(z, 0) - z * y + np.log(np.float32(1) + e)
        losses.append(float(np.mean(per.astype(np.float32), dtype=np.float32)))
        # d mean(per) / dz, term by term as the graph writes the loss.
        g = ((z > 0).astype(np.float32) - y - np.sign(z) * e / (np.float32(1) + e)) / np.float32(
            batch)
        d = g.astype(np.float32)[:, None]
        grads = []
        for i in range(len(mlp) - 1, -1, -1):
            w = mlp[i][0]
            grads.append((i, (d.T @ acts[i]).astype(np.float32), d.sum(axis=0, dtype=np.float32)))
            d = (d @ w).astype(np.float32)
            if i > 0:
                d = d * (pre[i - 1] > 0)
        for i, gw, gb in grads:
            mlp[i][0] = mlp[i][0] - lr * gw
            mlp[i][1] = mlp[i][1] - lr * gb
        col = 0
        for (name, _), s in zip(tables, slot):
            dim = rows[name][1].shape[1]
            gr = np.zeros_like(rows[name][1])
            np.add.at(gr, s, d[:, col:col + dim])
            col += dim
            touched = np.unique(s)
            rows[name][1][touched] -= lr * gr[touched]
    return model, tables, mlp_names, rows, mlp, losses


def run_losses(path):
    out = []
    for line in open(path).read().split("\n")[1:]:
        if line.strip():
            out.append(float(line.split(",")[1]))
    return out


def rel_diff(a, b, floor):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), floor))) if a.size else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--losses", required=True)
    ap.add_argument("--saved")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--sample", type=int, default=2000)
    a = ap.parse_args()
    initial, tables, mlp_names, rows, mlp, want = train(a.model_dir, a.batch, a.steps, a.lr)
    ok = True
    got = run_losses(a.losses)
    if len(got) != len(want):
        print("FAIL losses: %d in %s, the reference has %d" % (len(got), a.losses, len(want)))
        ok = False
    else:
        worst = rel_diff(got, want, 1e-30)
        good = worst <= a.rtol
        ok &= good
        print("%s losses: %d steps, %.6f .. %.6f, worst relative difference %.2e (limit %.0e)" % (
            "PASS" if good else "FAIL", len(want), want[0], want[-1], worst, a.rtol))
    if a.saved:
        saved = Model(a.saved)
        ext = sum(t.data_location == onnx.TensorProto.EXTERNAL for t in saved.tensors.values())
        rng = np.random.default_rng(1)
        for name, _ in tables:
            touched, values = rows[name]
            table = saved.array(name)
            worst = rel_diff(np.asarray(table[touched]), values, a.rtol * 0.1)
            sample = rng.choice(table.shape[0], size=min(a.sample, table.shape[0]), replace=False)
            sample = np.setdiff1d(sample, touched)
            same = np.array_equal(np.asarray(table[sample]).view(np.uint32),
                                  np.asarray(initial.array(name)[sample]).view(np.uint32))
            good = worst <= a.rtol and same
            ok &= good
            print("%s %s: %d trained rows, worst relative difference %.2e; %d untouched rows %s" % (
                "PASS" if good else "FAIL", name, len(touched), worst, len(sample),
                "unchanged" if same else "CHANGED"))
        # Relative to each tensor's largest value for elements near zero
        # (biases): 8 steps of float32 sums in another order move those by
        # more than rtol of themselves.
        worst = max(rel_diff(saved.array(n), v, 0.01 * float(np.max(np.abs(v))))
                    for names, values in zip(mlp_names, mlp) for n, v in zip(names, values))
        good = worst <= a.rtol
        ok &= good
        print("%s dense weights: worst relative difference %.2e (%d external tensors in %s)" % (
            "PASS" if good else "FAIL", worst, ext, a.saved))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
