#!/usr/bin/python3
"""make_table_model.py OUT_DIR ROWS DIM [SAMPLES]

Writes OUT_DIR/model.onnx: one embedding table [ROWS, DIM] (float32, seeded
normal * 0.01) much larger than the rest of the model, read by
Gather(table, idx) for idx int64 [batch, 4]; the looked-up rows, flattened
to [batch, 4*DIM], go through a dense layer w [4*DIM, 1] to a prediction,
and the loss is the mean squared error against y float32 [batch].
OUT_DIR/data/{idx,y}.npy hold SAMPLES samples (seeded). Used by
tests/cli/train_memory.sh to measure the memory each rank holds.
"""
import os
import sys

import numpy as np

for name, alias in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if name not in np.__dict__:
        setattr(np, name, alias)
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def main():
    if len(sys.argv) not in (4, 5):
        raise SystemExit(__doc__)
    out, rows, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    samples = int(sys.argv[4]) if len(sys.argv) == 5 else 256
    rng = np.random.RandomState(3)
    table = (rng.standard_normal((rows, dim)) * 0.01).astype(np.float32)
    w = (rng.standard_normal((4 * dim, 1)) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["table", "idx"], ["emb"], name="lookup", axis=0),
        helper.make_node("Reshape", ["emb", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("MatMul", ["flat", "w"], ["pred2"], name="dense"),
        helper.make_node("Reshape", ["pred2", "vec_shape"], ["pred"], name="squeeze"),
        helper.make_node("Sub", ["pred", "y"], ["err"], name="err"),
        helper.make_node("Mul", ["err", "err"], ["sq"], name="sq"),
        helper.make_node("ReduceMean", ["sq"], ["loss"], name="loss", keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "table_model",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, ["batch", 4]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(w, "w"),
         numpy_helper.from_array(np.array([-1, 4 * dim], np.int64), "flat_shape"),
         numpy_helper.from_array(np.array([-1], np.int64), "vec_shape")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "data", "idx.npy"), rng.randint(0, rows, (samples, 4)).astype(np.int64))
    np.save(os.path.join(out, "data", "y.npy"), rng.standard_normal(samples).astype(np.float32))


if __name__ == "__main__":
    main()
