#!/usr/bin/python3
"""Compares a parallel run with a 1-rank reference run of the same global
batch: every step's loss within 1e-6 relative (20 steps), every saved
initializer within 1e-5 absolute.

A loss under 0.1 is compared as if it were 0.1 (1e-7 absolute): a
cross-entropy is a log-sum-exp minus the target's score, rounded in
float32 at the scale of the scores, not of their difference, so a loss
near zero (a confident right answer) carries about 1e-7 of rounding
whatever its size; a split cross-entropy that sums in another order (--tp
on the vocabulary) differs from the 1-rank run by that much.

Usage: compare_runs.py REF.csv REF.onnx GOT.csv GOT.onnx"""
import sys

import numpy as np

for a in ("float", "int", "bool", "object"):
    setattr(np, a, {"float": float, "int": int, "bool": bool, "object": object}[a])
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

ref_csv, ref_onnx, got_csv, got_onnx = sys.argv[1:]


def losses(path):
    rows = [line.split(",") for line in open(path).read().split("\n")[1:] if line]
    return np.array([float(r[1]) for r in rows])


a, b = losses(ref_csv), losses(got_csv)
assert len(a) == len(b) == 20, (len(a), len(b))
rel = np.abs(a - b) / np.maximum(np.abs(a), 0.1)
assert rel.max() <= 1e-6, "loss differs by %.3g relative at step %d" % (rel.max(), rel.argmax() + 1)


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


wa, wb = weights(ref_onnx), weights(got_onnx)
assert sorted(wa) == sorted(wb), (sorted(wa), sorted(wb))
for name in wa:
    assert wa[name].shape == wb[name].shape, (name, wa[name].shape, wb[name].shape)
    err = np.abs(wa[name] - wb[name]).max()
    assert err <= 1e-5, "%s differs by %.3g" % (name, err)
print("max loss rel %.3g" % rel.max())
