#!/usr/bin/python3
"""Models for tests/cli/train_tp_vocab.sh, each written with its data
folder: python3 tp_models.py KIND MODEL.onnx DATA_DIR

  gelu12  x[B,20] -> Gemm(32, bias) -> GELU, tanh approximation (Pow,
          Mul, Add, Tanh) -> Gemm(16, bias) -> Relu -> Gemm(12 classes,
          bias, transB) -> SoftmaxCrossEntropyLoss: a Megatron pair through
          the tanh GELU and a vocabulary projection with a Gemm bias.
  gpt2    the zoo's GPT-2 (tests/zoo/models.py): pre-LN blocks whose MLP
          has the erf GELU between its projections, and an lm_head tied to
          the token embedding, exported with the project's helper and
          constant folding: plain MatMul weights, the lm_head a copy of the
          embedding's transpose (the exporter's parallax.ties).
  gpt2_unfolded  the same without constant folding: every Linear reads
          Transpose(weight), the lm_head Transpose(wte.weight).
  tied_gemm  a token x[B] -> Gather(wte.weight [24, 16]) -> Gemm(32, bias)
          -> Relu -> Gemm(16, bias) -> Gemm(wte.weight, out.bias, transB=1)
          -> SoftmaxCrossEntropyLoss: an lm_head tied to the embedding table
          and read by the Gemm directly (no Transpose node), as an exporter
          writes a tied Linear it does not fold."""
import os
import sys

import numpy as np

for alias, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, t)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
SAMPLES = 320  # 20 steps at a global batch of 16


def gelu12(path, data):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(0)

    def w(name, *shape):
        return numpy_helper.from_array((rng.randn(*shape) * 0.3).astype(np.float32), name)

    def const(name, value):
        return helper.make_node("Constant", [], [name], name=name,
                                value=helper.make_tensor(name, TensorProto.FLOAT, [], [value]))

    inits = [w("fc1.weight", 32, 20), w("fc1.bias", 32), w("fc2.weight", 16, 32),
             w("fc2.bias", 16), w("out.weight", 12, 16), w("out.bias", 12)]
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["a"], name="fc1", transB=1),
        const("three", 3.0), const("c", 0.044715), const("k", 0.7978845608), const("one", 1.0),
        const("half", 0.5),
        helper.make_node("Pow", ["a", "three"], ["a3"], name="gelu/pow"),
        helper.make_node("Mul", ["a3", "c"], ["ca3"], name="gelu/mul_c"),
        helper.make_node("Add", ["a", "ca3"], ["inner"], name="gelu/add"),
        helper.make_node("Mul", ["inner", "k"], ["kin"], name="gelu/mul_k"),
        helper.make_node("Tanh", ["kin"], ["th"], name="gelu/tanh"),
        helper.make_node("Add", ["th", "one"], ["th1"], name="gelu/add_one"),
        helper.make_node("Mul", ["a", "th1"], ["ath"], name="gelu/mul_x"),
        helper.make_node("Mul", ["ath", "half"], ["g"], name="gelu/mul_half"),
        helper.make_node("Gemm", ["g", "fc2.weight", "fc2.bias"], ["b"], name="fc2", transB=1),
        helper.make_node("Relu", ["b"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "out.weight", "out.bias"], ["scores"], name="out",
                         transB=1),
        helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "y"], ["loss"], name="ce"),
    ]
    graph = helper.make_graph(
        nodes, "gelu12", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 20]),
                          helper.make_tensor_value_info("y", TensorProto.INT64, ["batch"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    np.save(os.path.join(data, "x.npy"), rng.randn(SAMPLES, 20).astype(np.float32))
    np.save(os.path.join(data, "y.npy"), rng.randint(0, 12, SAMPLES).astype(np.int64))


def tied_gemm(path, data):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(0)

    def w(name, *shape):
        return numpy_helper.from_array((rng.randn(*shape) * 0.3).astype(np.float32), name)

    inits = [w("wte.weight", 24, 16), w("fc1.weight", 32, 16), w("fc1.bias", 32),
             w("fc2.weight", 16, 32), w("fc2.bias", 16), w("out.bias", 24)]
    nodes = [
        helper.make_node("Gather", ["wte.weight", "x"], ["e"], name="embed"),
        helper.make_node("Gemm", ["e", "fc1.weight", "fc1.bias"], ["a"], name="fc1", transB=1),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["h"], name="fc2", transB=1),
        helper.make_node("Gemm", ["h", "wte.weight", "out.bias"], ["scores"], name="lm_head",
                         transB=1),
        helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "y"], ["loss"], name="ce"),
    ]
    graph = helper.make_graph(
        nodes, "tied_gemm", [helper.make_tensor_value_info("x", TensorProto.INT64, ["batch"]),
                             helper.make_tensor_value_info("y", TensorProto.INT64, ["batch"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    np.save(os.path.join(data, "x.npy"), rng.randint(0, 24, SAMPLES).astype(np.int64))
    np.save(os.path.join(data, "y.npy"), rng.randint(0, 24, SAMPLES).astype(np.int64))


def gpt2(path, data, fold=True):
    sys.path.insert(0, os.path.join(SRC, "tests", "zoo"))
    sys.path.insert(0, os.path.join(SRC, "examples"))
    import torch
    from export_for_parallax import export_for_parallax
    from models import ZOO
    torch.set_num_threads(1)
    torch.manual_seed(0)
    zoo = {z.name: z for z in ZOO}["gpt2"]
    model = zoo.build()
    inputs = zoo.data(np.random.RandomState(1), SAMPLES)
    example = tuple(torch.from_numpy(a[:4].copy()) for _, a in inputs)
    with open(os.devnull, "w") as null:
        saved, sys.stderr = sys.stderr, null
        try:
            export_for_parallax(model, example, path, [n for n, _ in inputs], ["loss"],
                                do_constant_folding=fold)
        finally:
            sys.stderr = saved
    for n, a in inputs:
        np.save(os.path.join(data, n + ".npy"), np.ascontiguousarray(a))


if __name__ == "__main__":
    kind, path, data = sys.argv[1:]
    os.makedirs(data, exist_ok=True)
    {"gelu12": gelu12, "gpt2": gpt2, "tied_gemm": tied_gemm,
     "gpt2_unfolded": lambda p, d: gpt2(p, d, fold=False)}[kind](path, data)
