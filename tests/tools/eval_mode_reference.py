#!/usr/bin/python3
"""PyTorch references for validation in eval mode (and --save-infer).

    eval_mode_reference.py make OUT [--no-batchnorm]
        A classifier with BatchNorm1d (unless --no-batchnorm) and Dropout(0.4): forward(x, y) returns
        (loss, accuracy, logits). Exported in training mode with a dynamic
        batch to OUT/model.onnx; OUT/train/{x,y}.npy (64 samples) and
        OUT/val/{x,y}.npy (44 samples: 5 full batches of 8 and 4 left over).

    eval_mode_reference.py check-eval OUT SAVED.onnx EVAL.csv --batch B
        Loads the trained weights and running statistics of SAVED.onnx (the
        program's --save) into the module, switches it to model.eval() and
        computes the validation as the program defines it: the mean over the
        full batches of B samples of each batch's mean loss and accuracy. The
        last row of EVAL.csv (the program's validation after its last step)
        must equal it (loss within 1e-5 relative, accuracy within 1e-6), and
        the running statistics must have moved from their initial values
        (otherwise eval and training mode would be the same test).

    eval_mode_reference.py ort-inputs OUT INPUTS.json [--labels]
        OUT/val/x.npy (and y.npy with --labels) as ort_eval.js's inputs.

    eval_mode_reference.py check-infer OUT SAVED.onnx INFER.onnx ORT.json NAMES
        The served model INFER.onnx (the program's --save-infer with
        --outputs NAMES, comma-separated) against PyTorch's model.eval() with
        SAVED.onnx's weights on OUT/val: it passes onnx.checker, its inputs
        are x (and y only when accuracy is asked for: no labels otherwise),
        its outputs are NAMES, and ONNX Runtime's outputs (ORT.json, from
        ort_eval.js) equal PyTorch's within 1e-5 (logits) and 1e-6
        (accuracy).
"""
import argparse
import csv
import json
import os
import sys

import numpy as np

for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, _a):
        setattr(np, _a, _t)
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from torch import nn  # noqa: E402


class Classifier(nn.Module):
    def __init__(self, batchnorm=True):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.bn = nn.BatchNorm1d(16) if batchnorm else nn.Identity()
        self.drop = nn.Dropout(0.4)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x, y):
        logits = self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))
        loss = nn.functional.cross_entropy(logits, y)
        accuracy = (logits.argmax(1) == y).float().mean()
        return loss, accuracy, logits


def cmd_make(out, batchnorm=True):
    torch.manual_seed(3)
    m = Classifier(batchnorm)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((6, 3))
    for name, n in (("train", 64), ("val", 44)):
        x = rng.standard_normal((n, 6)).astype(np.float32) * 2 + 0.5
        y = np.argmax(x @ w + rng.standard_normal((n, 3)), axis=1).astype(np.int64)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        np.save(os.path.join(out, name, "x.npy"), x)
        np.save(os.path.join(out, name, "y.npy"), y)
    x = torch.zeros(4, 6)
    y = torch.zeros(4, dtype=torch.int64)
    m.train()
    torch.onnx.export(m, (x, y), os.path.join(out, "model.onnx"), input_names=["x", "y"],
                      output_names=["loss", "accuracy", "logits"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}, "logits": {0: "batch"}})
    return 0


def load_trained(path):
    m = Classifier()
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    state = m.state_dict()
    with torch.no_grad():
        for name, t in state.items():
            if name in inits:
                t.copy_(torch.from_numpy(inits[name].copy()).to(t.dtype))
            elif t.dtype == torch.float32:
                raise SystemExit("FAIL %s: no initializer '%s'" % (path, name))
    m.eval()
    return m


def cmd_check_eval(a):
    torch.set_num_threads(1)
    m = load_trained(a.saved)
    moved = float(m.bn.running_mean.abs().max())
    x = torch.from_numpy(np.load(os.path.join(a.out, "val", "x.npy")))
    y = torch.from_numpy(np.load(os.path.join(a.out, "val", "y.npy")))
    B = a.batch
    with torch.no_grad():
        parts = [m(x[i:i + B], y[i:i + B])[:2] for i in range(0, (len(y) // B) * B, B)]
    want = [float(np.mean([float(p[k]) for p in parts])) for k in (0, 1)]
    with open(a.eval_csv) as f:
        rows = list(csv.reader(f))
    got = [float(v) for v in rows[-1][1:3]]
    print("validation loss %.7f accuracy %.4f; PyTorch model.eval() %.7f %.4f (%d batches); "
          "running_mean max %.3g" % (got[0], got[1], want[0], want[1], len(parts), moved))
    bad = abs(got[0] - want[0]) > 1e-5 * abs(want[0]) or abs(got[1] - want[1]) > 1e-6
    if bad or rows[0][:3] != ["step", "loss", "accuracy"]:
        print("FAIL: the program's eval-mode validation differs from model.eval()")
        return 1
    if moved == 0:
        print("FAIL: the running statistics never moved")
        return 1
    return 0


def cmd_ort_inputs(a):
    x = np.load(os.path.join(a.out, "val", "x.npy"))
    feeds = {"x": {"type": "float32", "dims": list(x.shape), "data": x.ravel().tolist()}}
    if a.labels:
        y = np.load(os.path.join(a.out, "val", "y.npy"))
        feeds["y"] = {"type": "int64", "dims": list(y.shape), "data": y.ravel().tolist()}
    with open(a.inputs, "w") as f:
        json.dump(feeds, f)
    return 0


def cmd_check_infer(a):
    torch.set_num_threads(1)
    names = a.names.split(",")
    model = onnx.load(a.infer)
    onnx.checker.check_model(model)
    inputs = [i.name for i in model.graph.input]
    outputs = [o.name for o in model.graph.output]
    want_inputs = ["x", "y"] if "accuracy" in names else ["x"]
    failures = []
    if inputs != want_inputs or outputs != names:
        failures.append("inputs %s, outputs %s; expected %s and %s"
                        % (inputs, outputs, want_inputs, names))
    m = load_trained(a.saved)
    x = torch.from_numpy(np.load(os.path.join(a.out, "val", "x.npy")))
    y = torch.from_numpy(np.load(os.path.join(a.out, "val", "y.npy")))
    with torch.no_grad():
        _, acc, logits = m(x, y)
    want = {"logits": logits.numpy(), "accuracy": acc.numpy()}
    ort_out = json.load(open(a.ort))
    for name in names:
        got = np.array(ort_out[name]["data"], dtype=np.float64).reshape(ort_out[name]["dims"])
        ref = want[name]
        err = float(np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref))))
        tol = 1e-6 if name == "accuracy" else 1e-5
        print("%s: ONNX Runtime against PyTorch model.eval(): max error %.3g (%d values)"
              % (name, err, ref.size))
        if got.shape != ref.shape or err > tol:
            failures.append("%s: ONNX Runtime %s, PyTorch %s" % (name, got.ravel()[:4],
                                                              ref.ravel()[:4]))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("out")
    mk.add_argument("--no-batchnorm", action="store_true", help="Dropout only (no batch statistics)")
    ce = sub.add_parser("check-eval")
    ce.add_argument("out")
    ce.add_argument("saved")
    ce.add_argument("eval_csv")
    ce.add_argument("--batch", type=int, required=True)
    oi = sub.add_parser("ort-inputs")
    oi.add_argument("out")
    oi.add_argument("inputs")
    oi.add_argument("--labels", action="store_true")
    ci = sub.add_parser("check-infer")
    for arg in ("out", "saved", "infer", "ort", "names"):
        ci.add_argument(arg)
    a = ap.parse_args()
    if a.cmd == "ort-inputs":
        return cmd_ort_inputs(a)
    if a.cmd == "check-infer":
        return cmd_check_infer(a)
    if a.cmd == "make":
        return cmd_make(a.out, not a.no_batchnorm)
    return cmd_check_eval(a)


if __name__ == "__main__":
    sys.exit(main())
