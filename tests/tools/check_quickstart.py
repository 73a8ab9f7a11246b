#!/usr/bin/python3
"""Checks what the README's quickstart left in its folder (run there).

Usage: check_quickstart.py   (in the quickstart's folder)

  - the program trained: losses.csv has every step, the loss fell;
  - the reloaded module (evaluate.py, run again) mapped every tensor and is
    accurate on the toy task;
  - the served program's outputs equal the reloaded module's eval-mode
    logits (independently computed here, in PyTorch);
  - the report has every chart, each with data.
"""
import re
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, ".")
import parallax  # noqa: E402
from model import TextClassifier  # noqa: E402


def fail(msg):
    sys.exit("FAIL quickstart: " + msg)


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
served = np.load("predictions/output.npy")
if served.shape != logits.shape:
    fail("predictions/output.npy is %s, PyTorch gives %s" % (served.shape, logits.shape))
err = np.abs(served - logits).max() / max(1.0, np.abs(logits).max())
if err > 1e-5:
    fail("served outputs differ from PyTorch eval by %.3g" % err)
charts = re.findall(r'data-chart="([a-z]+)" data-points="(\d+)"', open("report.html").read())
empty = [name for name, points in charts if points == "0"]
if len(charts) < 7 or empty:
    fail("report.html: charts %s, empty %s" % ([c for c, _ in charts], empty))
print("ok quickstart: %d steps, loss %.3f -> %.3f, accuracy %.3f, served = PyTorch eval "
      "(%.2g), %d charts; reloaded %s" % (losses.shape[0], first, last, accuracy, err, len(charts),
                               ", ".join(report.loaded)))
