#!/usr/bin/python3
"""Writes a DLRM-style click model (Naumov et al. 2019) for Criteo data as
ONNX, with the tables as external data written chunk by chunk, so any table
size works (multi-GiB included) without holding a table in memory.

  make_model.py OUT_DIR [--table-rows N[,N...]] [--dim 16] [--seed 7]

Inputs are those of `parallaxc data criteo`: label float32 [batch], dense
float32 [batch, 13] (log(x + 1) of the counts), cat_0 .. cat_25 int64
[batch] (the row of each table). The model:
- the 13 dense features through a bottom MLP 13-64-DIM (ReLU);
- each cat_K reads a row of its table emb_K [rows_K, DIM] with a Gather (so
  the tables are sparse variables on the parameter-server shards);
- DLRM's dot interaction: the 27 vectors (bottom output + 26 embeddings)
  stacked, every pairwise dot product (351), concatenated with the bottom
  output;
- a top MLP (351 + DIM)-64-1 gives the logit (output "logit", one per
  sample: the score --eval-metrics ranks);
- the loss is BCE with logits written out stably, max(z, 0) - z*y +
  log(1 + exp(-|z|)), averaged (output "loss").
OUT_DIR receives model.onnx and model.onnx.data. Run with /usr/bin/python3.
"""

import argparse
import os
import sys

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

from onnx import TensorProto, helper  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "big_recommender"))
from generate import DATA_FILE, external_tensor  # noqa: E402  (the same external data)

DENSE = 13
TABLES = 26
BOTTOM = 64
TOP = 64
ALIGN = 4096


def write_tables(path, seed, rows, dim, chunk_rows=65536):
    """Every table into path (4096-aligned), each chunk from its own
    generator keyed by (seed, table, first row); returns (offset, length)s.
    Rows start at U(-0.05, 0.05)."""
    places = []
    with open(path, "wb") as f:
        for t, r in enumerate(rows):
            f.write(b"\0" * ((-f.tell()) % ALIGN))
            offset = f.tell()
            for first in range(0, r, chunk_rows):
                rng = np.random.default_rng([seed, t, first])
                n = min(chunk_rows, r - first)
                f.write(rng.uniform(-0.05, 0.05, (n, dim)).astype("<f4").tobytes())
            places.append((offset, f.tell() - offset))
    return places


def linear(rng, n_in, n_out, name):
    """PyTorch's nn.Linear initialisation, U(-1/sqrt(in), 1/sqrt(in))."""
    bound = 1.0 / np.sqrt(n_in)
    w = rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32)
    b = rng.uniform(-bound, bound, n_out).astype(np.float32)
    return [helper.make_tensor(name + ".weight", TensorProto.FLOAT, w.shape, w.tobytes(), raw=True),
            helper.make_tensor(name + ".bias", TensorProto.FLOAT, b.shape, b.tobytes(), raw=True)]


def const(name, dtype, dims, values):
    """A Constant node: a float initializer would be a trained weight."""
    return helper.make_node("Constant", [], [name], name="/" + name,
                            value=helper.make_tensor(name, dtype, dims, values))


def build(rows, dim, places, seed):
    rng = np.random.default_rng([seed, 1 << 20])
    features = TABLES + 1
    pairs = [i * features + j for i in range(features) for j in range(i)]  # strictly lower
    inits = [external_tensor("emb_%d.weight" % k, [rows[k], dim], *places[k])
             for k in range(TABLES)]
    inits += linear(rng, DENSE, BOTTOM, "bottom.0") + linear(rng, BOTTOM, dim, "bottom.1")
    inits += linear(rng, len(pairs) + dim, TOP, "top.0") + linear(rng, TOP, 1, "top.1")
    n = []

    def gemm(x, layer, out, relu):
        n.append(helper.make_node("Gemm", [x, layer + ".weight", layer + ".bias"],
                                  [out + "_pre" if relu else out], name="/" + layer, transB=1))
        if relu:
            n.append(helper.make_node("Relu", [out + "_pre"], [out], name="/" + layer + "/relu"))

    gemm("dense", "bottom.0", "b0", True)
    gemm("b0", "bottom.1", "bottom", True)
    n += [const("axis1", TensorProto.INT64, [1], [1]),
          const("pairs", TensorProto.INT64, [len(pairs)], pairs),
          const("flat", TensorProto.INT64, [2], [0, features * features]),
          const("logit_shape", TensorProto.INT64, [1], [-1]),
          const("one", TensorProto.FLOAT, [], [1.0])]
    stack = ["bottom_u"]
    n.append(helper.make_node("Unsqueeze", ["bottom", "axis1"], ["bottom_u"], name="/bottom/u"))
    for k in range(TABLES):
        n.append(helper.make_node("Gather", ["emb_%d.weight" % k, "cat_%d" % k], ["e%d" % k],
                                  name="/emb_%d/Gather" % k))
        n.append(helper.make_node("Unsqueeze", ["e%d" % k, "axis1"], ["e%d_u" % k],
                                  name="/emb_%d/u" % k))
        stack.append("e%d_u" % k)
    n += [helper.make_node("Concat", stack, ["T"], name="/interact/stack", axis=1),
          helper.make_node("Transpose", ["T"], ["Tt"], name="/interact/t", perm=[0, 2, 1]),
          helper.make_node("MatMul", ["T", "Tt"], ["Z"], name="/interact/dots"),
          helper.make_node("Reshape", ["Z", "flat"], ["Zf"], name="/interact/flat"),
          helper.make_node("Gather", ["Zf", "pairs"], ["Zp"], name="/interact/pairs", axis=1),
          helper.make_node("Concat", ["bottom", "Zp"], ["top_in"], name="/interact/cat", axis=1)]
    gemm("top_in", "top.0", "t0", True)
    gemm("t0", "top.1", "t1", False)
    n += [helper.make_node("Reshape", ["t1", "logit_shape"], ["logit"], name="/logit"),
          helper.make_node("Relu", ["logit"], ["pos"], name="/loss/relu"),
          helper.make_node("Mul", ["logit", "label"], ["xy"], name="/loss/mul"),
          helper.make_node("Sub", ["pos", "xy"], ["lin"], name="/loss/sub"),
          helper.make_node("Abs", ["logit"], ["absx"], name="/loss/abs"),
          helper.make_node("Neg", ["absx"], ["negabs"], name="/loss/neg"),
          helper.make_node("Exp", ["negabs"], ["expx"], name="/loss/exp"),
          helper.make_node("Add", ["expx", "one"], ["onep"], name="/loss/add"),
          helper.make_node("Log", ["onep"], ["softplus"], name="/loss/log"),
          helper.make_node("Add", ["lin", "softplus"], ["per_sample"], name="/loss/add_1"),
          helper.make_node("ReduceMean", ["per_sample"], ["loss"], name="/loss/mean", keepdims=0)]
    inputs = [helper.make_tensor_value_info("label", TensorProto.FLOAT, ["batch"]),
              helper.make_tensor_value_info("dense", TensorProto.FLOAT, ["batch", DENSE])]
    inputs += [helper.make_tensor_value_info("cat_%d" % k, TensorProto.INT64, ["batch"])
               for k in range(TABLES)]
    outputs = [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
               helper.make_tensor_value_info("logit", TensorProto.FLOAT, ["batch"])]
    graph = helper.make_graph(n, "criteo_dlrm", inputs, outputs, inits)
    model = helper.make_model(graph, producer_name="parallax examples/criteo",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--table-rows", default="100000",
                    help="rows of every table, or 26 comma-separated counts (as parallaxc data "
                         "criteo --table-rows)")
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rows = [int(r) for r in a.table_rows.split(",")]
    rows = rows * TABLES if len(rows) == 1 else rows
    if len(rows) != TABLES or min(rows) < 1 or a.dim < 1:
        ap.error("--table-rows takes one count or 26, each >= 1; --dim >= 1")
    os.makedirs(a.out_dir, exist_ok=True)
    places = write_tables(os.path.join(a.out_dir, DATA_FILE), a.seed, rows, a.dim)
    with open(os.path.join(a.out_dir, "model.onnx"), "wb") as f:
        f.write(build(rows, a.dim, places, a.seed).SerializeToString())
    print("%s: 26 tables, %d rows, %.1f MB of tables" % (
        a.out_dir, sum(rows), sum(rows) * a.dim * 4 / 1e6))


if __name__ == "__main__":
    main()
