#!/usr/bin/python3
"""Checks what the README's quickstart left in its folder (run there).

Usage: check_quickstart.py --ort ORT.json   (in the quickstart's folder)

  - the program trained: losses.csv has every step, the loss fell;
  - the reloaded module (evaluate.py, run again) mapped every tensor and is
    accurate on the toy task;
  - served.onnx (--save-infer) passes onnx.checker, takes `tokens` alone
    and returns `output`; the inference program's outputs on it and ONNX
    Runtime's (ORT.json, from tests/tools/ort_eval.js on val/tokens.npy)
    equal the reloaded module's eval-mode logits (independently computed
    here, in PyTorch) within 1e-5;
  - the report has every chart, each with data.
"""
import argparse
import json
import re
import subprocess
import sys

import numpy as np

for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, _a):
        setattr(np, _a, _t)
import onnx  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, ".")
import parallax  # noqa: E402
from model import TextClassifier  # noqa: E402


def fail(msg):
    sys.exit("FAIL quickstart: " + msg)


def max_error(got, want, what):
    if got.shape != want.shape:
        fail("%s is %s, PyTorch gives %s" % (what, got.shape, want.shape))
    err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
    if err > 1e-5:
        fail("%s differs from PyTorch eval by %.3g" % (what, err))
    return err


ap = argparse.ArgumentParser()
ap.add_argument("--ort", required=True, help="ort_eval.js's outputs for served.onnx")
args = ap.parse_args()


losses = np.loadtxt("run/losses.csv", delimiter=",", skiprows=1)
if losses.shape[0] != 768:
    fail("run/losses.csv has %d steps, expected 768" % losses.shape[0])
first, last = losses[:16, 1].mean(), losses[-16:, 1].mean()
if not last < 0.5 * first:
    fail("the loss did not fall: %.4f at the start, %.4f at the end" % (first, last))

printed = subprocess.run([sys.executable, "evaluate.py"], capture_output=True, text=True,
                         check=True).stdout
if "loaded 5 of the module's tensors" not in printed or "not in the file" in printed:
    fail("evaluate.py did not reload every tensor:\n" + printed)
accuracy = float(printed.split("accuracy")[-1])
if accuracy < 0.85:
    fail("validation accuracy %.3f after training (expected >= 0.85)" % accuracy)

model = TextClassifier()
report = parallax.load_state_dict(model, "trained.onnx")
model.eval()
with torch.no_grad():
    logits = model(torch.from_numpy(np.load("val/tokens.npy"))).numpy()
served_model = onnx.load("served.onnx")
onnx.checker.check_model(served_model)
io = ([i.name for i in served_model.graph.input], [o.name for o in served_model.graph.output])
if io != (["tokens"], ["output"]):
    fail("served.onnx has inputs %s and outputs %s, expected ['tokens'] and ['output']" % io)
err = max_error(np.load("predictions/output.npy"), logits, "predictions/output.npy")
ort = json.load(open(args.ort))["output"]
ort_err = max_error(np.array(ort["data"], dtype=np.float64).reshape(ort["dims"]), logits,
                    "ONNX Runtime's output on served.onnx")
charts = re.findall(r'data-chart="([a-z]+)" data-points="(\d+)"', open("report.html").read())
empty = [name for name, points in charts if points == "0"]
if len(charts) < 7 or empty:
    fail("report.html: charts %s, empty %s" % ([c for c, _ in charts], empty))
print("ok quickstart: %d steps, loss %.3f -> %.3f, accuracy %.3f, served.onnx = PyTorch eval "
      "(inference program %.2g, ONNX Runtime %.2g), %d charts; reloaded %s"
      % (losses.shape[0], first, last, accuracy, err, ort_err, len(charts),
         ", ".join(report.loaded)))
