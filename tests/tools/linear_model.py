#!/usr/bin/python3
"""A one-layer regression model for communication tests, written with
onnx.helper (no PyTorch): loss = mean((x W^T + b - y)^2), W [OUT, IN] read
by a Gemm with transB = 1.

  linear_model.py DIR [--in 1024] [--out 256] [--samples 64]

writes DIR/model.onnx and DIR/data/{x,y}.npy (seeded).
"""

import argparse
import os

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--in", dest="inp", type=int, default=1024)
    ap.add_argument("--out", type=int, default=256)
    ap.add_argument("--samples", type=int, default=64)
    a = ap.parse_args()
    rng = np.random.RandomState(3)
    w = (rng.randn(a.out, a.inp) / np.sqrt(a.inp)).astype(np.float32)
    b = np.zeros(a.out, dtype=np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["pred"], transB=1),
        helper.make_node("Sub", ["pred", "y"], ["diff"]),
        helper.make_node("Mul", ["diff", "diff"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", a.inp]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", a.out])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(w, "fc.weight"), numpy_helper.from_array(b, "fc.bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(a.dir, "data"), exist_ok=True)
    onnx.save(model, os.path.join(a.dir, "model.onnx"))
    x = rng.randn(a.samples, a.inp).astype(np.float32)
    teacher = rng.randn(a.out, a.inp).astype(np.float32) / np.sqrt(a.inp)
    np.save(os.path.join(a.dir, "data", "x.npy"), x)
    np.save(os.path.join(a.dir, "data", "y.npy"), (x @ teacher.T).astype(np.float32))


if __name__ == "__main__":
    main()
