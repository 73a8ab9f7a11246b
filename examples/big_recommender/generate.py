#!/usr/bin/python3
"""Writes a recommendation model of any size as ONNX with external data,
without ever holding a whole embedding table in memory (no PyTorch).

The graph is examples/recommender's: every table is read by one Gather with
run-time ids (so the compiler treats the tables as sparse), the embeddings
are concatenated with dense features and go through an MLP to a
BCE-with-logits loss written out as max(x, 0) - x*y + log(1 + exp(-|x|)).

  generate.py OUT_DIR [--tables 2] [--rows 1000000] [--dim 16] [--samples 512]
              [--seed 7] [--chunk-rows 65536]

--rows takes one count for every table or a comma-separated list, one per
table. OUT_DIR receives:
  model.onnx       the graph; the tables' bytes are in model.onnx.data
  model.onnx.data  the tables, one after the other (each 4096-aligned),
                   written chunk by chunk from a seeded generator
  data/<input>.npy ids_<t> int64 [samples], dense float32 [samples, 4],
                   label float32 [samples]
  reference.json   the loss on the first B samples (NumPy, float32, reading
                   only the rows those samples touch) for a few B

Run with /usr/bin/python3 (Debian's numpy and onnx).
"""

import argparse
import json
import os

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

from onnx import TensorProto, helper  # noqa: E402

DENSE = 4
HIDDEN = (64, 32)
ALIGN = 4096
REFERENCE_BATCHES = (1, 4, 8, 16)
DATA_FILE = "model.onnx.data"


def table_chunks(seed, table, rows, dim, chunk_rows):
    """Rows of table `table` in chunks, the same for every chunk size: each
    chunk comes from its own generator keyed by (seed, table, first row)."""
    for first in range(0, rows, chunk_rows):
        n = min(chunk_rows, rows - first)
        rng = np.random.default_rng([seed, table, first])
        yield (rng.standard_normal((n, dim), dtype=np.float32) * np.float32(0.1)).astype(
            "<f4", copy=False)


def write_tables(path, seed, rows, dim, chunk_rows):
    """Streams every table into path; returns each table's (offset, length)."""
    places = []
    with open(path, "wb") as f:
        for t, r in enumerate(rows):
            pad = (-f.tell()) % ALIGN
            f.write(b"\0" * pad)
            offset = f.tell()
            for chunk in table_chunks(seed, t, r, dim, chunk_rows):
                f.write(chunk.tobytes())
            places.append((offset, f.tell() - offset))
    return places


def external_tensor(name, dims, offset, length):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", DATA_FILE), ("offset", str(offset)), ("length", str(length))):
        entry = t.external_data.add()
        entry.key = key
        entry.value = value
    return t


def mlp_weights(seed, n_in):
    """PyTorch's nn.Linear initialisation, U(-1/sqrt(in), 1/sqrt(in))."""
    rng = np.random.default_rng([seed, 1 << 20])
    sizes = (n_in,) + HIDDEN + (1,)
    out = []
    for i in range(len(sizes) - 1):
        bound = 1.0 / np.sqrt(sizes[i])
        w = rng.uniform(-bound, bound, (sizes[i + 1], sizes[i])).astype(np.float32)
        b = rng.uniform(-bound, bound, sizes[i + 1]).astype(np.float32)
        out.append((w, b))
    return out


def build_graph(rows, dim, places, mlp):
    n_tables = len(rows)
    inits = [external_tensor("table_%d.weight" % t, [rows[t], dim], *places[t])
             for t in range(n_tables)]
    for i, (w, b) in enumerate(mlp):
        inits.append(helper.make_tensor("mlp.%d.weight" % i, TensorProto.FLOAT, w.shape,
                                        w.tobytes(), raw=True))
        inits.append(helper.make_tensor("mlp.%d.bias" % i, TensorProto.FLOAT, b.shape,
                                        b.tobytes(), raw=True))
    nodes = [helper.make_node("Gather", ["table_%d.weight" % t, "ids_%d" % t], ["emb_%d" % t],
                              name="/table_%d/Gather" % t) for t in range(n_tables)]
    nodes.append(helper.make_node("Concat", ["emb_%d" % t for t in range(n_tables)] + ["dense"],
                                  ["features"], name="/Concat", axis=1))
    x = "features"
    for i in range(len(mlp)):
        nodes.append(helper.make_node("Gemm", [x, "mlp.%d.weight" % i, "mlp.%d.bias" % i],
                                      ["gemm_%d" % i], name="/mlp/Gemm_%d" % i, transB=1))
        x = "gemm_%d" % i
        if i + 1 < len(mlp):
            nodes.append(helper.make_node("Relu", [x], ["relu_%d" % i], name="/mlp/Relu_%d" % i))
            x = "relu_%d" % i
    # Constants are Constant nodes, not initializers: a float initializer is
    # a weight the program trains (the 1 of log(1 + exp(-|x|)) would move).
    nodes += [
        helper.make_node("Constant", [], ["squeeze_axes"], name="/squeeze_axes",
                         value=helper.make_tensor("squeeze_axes", TensorProto.INT64, [1], [1])),
        helper.make_node("Constant", [], ["one"], name="/loss/one",
                         value=helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])),
        helper.make_node("Squeeze", [x, "squeeze_axes"], ["logits"], name="/Squeeze"),
        helper.make_node("Relu", ["logits"], ["pos"], name="/loss/Relu"),
        helper.make_node("Mul", ["logits", "label"], ["xy"], name="/loss/Mul"),
        helper.make_node("Sub", ["pos", "xy"], ["lin"], name="/loss/Sub"),
        helper.make_node("Abs", ["logits"], ["absx"], name="/loss/Abs"),
        helper.make_node("Neg", ["absx"], ["negabs"], name="/loss/Neg"),
        helper.make_node("Exp", ["negabs"], ["expx"], name="/loss/Exp"),
        helper.make_node("Add", ["expx", "one"], ["onep"], name="/loss/Add"),
        helper.make_node("Log", ["onep"], ["softplus"], name="/loss/Log"),
        helper.make_node("Add", ["lin", "softplus"], ["per_sample"], name="/loss/Add_1"),
        helper.make_node("ReduceMean", ["per_sample"], ["loss"], name="/loss/ReduceMean",
                         keepdims=0),
    ]
    inputs = [helper.make_tensor_value_info("ids_%d" % t, TensorProto.INT64, ["batch"])
              for t in range(n_tables)]
    inputs.append(helper.make_tensor_value_info("dense", TensorProto.FLOAT, ["batch", DENSE]))
    inputs.append(helper.make_tensor_value_info("label", TensorProto.FLOAT, ["batch"]))
    outputs = [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])]
    graph = helper.make_graph(nodes, "big_recommender", inputs, outputs, inits)
    model = helper.make_model(graph, producer_name="parallax big_recommender",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def zipf_ids(rng, count, n):
    """Ids in [0, count) with a heavy head, spread over the table."""
    ranks = np.minimum(rng.zipf(1.2, size=n), count) - 1
    return ((ranks * np.int64(2654435761)) % count).astype(np.int64)


def make_data(seed, rows, samples):
    rng = np.random.default_rng([seed, 1 << 21])
    data = [("ids_%d" % t, zipf_ids(rng, r, samples)) for t, r in enumerate(rows)]
    dense = rng.standard_normal((samples, DENSE), dtype=np.float32)
    score = 0.5 * dense[:, 0] - 0.25 * dense[:, 1]
    label = (rng.random(samples) < 1.0 / (1.0 + np.exp(-score))).astype(np.float32)
    return data + [("dense", dense), ("label", label)]


def reference_loss(path, places, rows, dim, mlp, data, batch):
    """The loss on the first `batch` samples, reading only the touched rows."""
    feats = []
    for t, (offset, _) in enumerate(places):
        table = np.memmap(path, dtype="<f4", mode="r", offset=offset, shape=(rows[t], dim))
        feats.append(np.asarray(table[data[t][1][:batch]], dtype=np.float32))
    x = np.concatenate(feats + [data[-2][1][:batch]], axis=1)
    for i, (w, b) in enumerate(mlp):
        x = (x @ w.T + b).astype(np.float32)
        if i + 1 < len(mlp):
            x = np.maximum(x, np.float32(0))
    x = x[:, 0]
    y = data[-1][1][:batch]
    per = np.maximum(x, 0) - x * y + np.log(np.float32(1) + np.exp(-np.abs(x)))
    return float(np.mean(per.astype(np.float32), dtype=np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--tables", type=int, default=2)
    ap.add_argument("--rows", default="1000000",
                    help="rows of every table, or a comma-separated count per table")
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--chunk-rows", type=int, default=65536)
    a = ap.parse_args()
    rows = [int(r) for r in a.rows.split(",")]
    if len(rows) == 1:
        rows = rows * a.tables
    if len(rows) != a.tables or min(rows) < 1 or a.dim < 1 or a.samples < 1 or a.chunk_rows < 1:
        ap.error("need --tables >= 1 table sizes >= 1, --dim, --samples, --chunk-rows >= 1")
    os.makedirs(os.path.join(a.out_dir, "data"), exist_ok=True)
    data_path = os.path.join(a.out_dir, DATA_FILE)
    places = write_tables(data_path, a.seed, rows, a.dim, a.chunk_rows)
    mlp = mlp_weights(a.seed, a.tables * a.dim + DENSE)
    model = build_graph(rows, a.dim, places, mlp)
    with open(os.path.join(a.out_dir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    data = make_data(a.seed, rows, a.samples)
    for name, array in data:
        np.save(os.path.join(a.out_dir, "data", name + ".npy"), array)
    losses = {str(b): reference_loss(data_path, places, rows, a.dim, mlp, data, b)
              for b in REFERENCE_BATCHES if b <= a.samples}
    with open(os.path.join(a.out_dir, "reference.json"), "w") as f:
        json.dump({"tables": rows, "dim": a.dim, "samples": a.samples, "seed": a.seed,
                   "table_bytes": sum(r * a.dim * 4 for r in rows), "losses": losses}, f,
                  indent=2)
        f.write("\n")
    print("%s: %d tables, %d bytes of tables, loss(4)=%r" % (
        a.out_dir, a.tables, sum(r * a.dim * 4 for r in rows), losses.get("4")))


if __name__ == "__main__":
    main()
