#!/usr/bin/python3
"""A deep MLP for the pipeline tests: Gemm (transB=1) and Relu layers of the
given widths, then SoftmaxCrossEntropyLoss; inputs x float [N, widths[0]],
y int64 [N]. Usage: deep_mlp.py OUT.onnx 784,64,...,10 [dropout|shared|conv]; with
`dropout`, a training-mode Dropout (ratio 0.5) follows the first Relu; with
`shared`, the fourth layer multiplies by the second layer's weight; with
`conv` (widths[0] 784), x is first seen as [N, 1, 28, 28] (Reshape to [0, 1, 28, 28]) and goes through
two 3x3 convolutions of 8 channels (padding 1) with Relu, so the first Gemm
reads 8 x 784 = 6272 features: layers of many FLOPs and few weights."""
import sys
import numpy as np
for a in ("float", "int", "bool", "object"):
    setattr(np, a, {"float": float, "int": int, "bool": bool, "object": object}[a])
import onnx
from onnx import helper, numpy_helper, TensorProto
out, widths = sys.argv[1], [int(w) for w in sys.argv[2].split(",")]
dropout, shared = sys.argv[3:] == ["dropout"], sys.argv[3:] == ["shared"]
rng = np.random.RandomState(0)
nodes, inits, h, x_width = [], [], "x", widths[0]
if sys.argv[3:] == ["conv"]:
    assert widths[0] == 784, widths
    inits.append(numpy_helper.from_array(np.array([0, 1, 28, 28], np.int64), "image_shape"))
    nodes.append(helper.make_node("Reshape", ["x", "image_shape"], ["image"], name="image"))
    h = "image"
    for i, c_in in enumerate((1, 8)):
        w = (rng.randn(8, c_in, 3, 3) / np.sqrt(9 * c_in)).astype(np.float32)
        inits += [numpy_helper.from_array(w, "c%d.weight" % i),
                  numpy_helper.from_array(np.zeros(8, np.float32), "c%d.bias" % i)]
        nodes += [helper.make_node("Conv", [h, "c%d.weight" % i, "c%d.bias" % i], ["c%d" % i],
                                   name="conv%d" % i, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["c%d" % i], ["cr%d" % i], name="crelu%d" % i)]
        h = "cr%d" % i
    nodes.append(helper.make_node("Flatten", [h], ["features"], name="flatten"))
    h, widths[0] = "features", 8 * 784
for i in range(len(widths) - 1):
    w = (rng.randn(widths[i + 1], widths[i]) / np.sqrt(widths[i])).astype(np.float32)
    b = (0.01 * rng.randn(widths[i + 1])).astype(np.float32)
    weight = "l1.weight" if shared and i == 3 else "l%d.weight" % i
    if weight == "l%d.weight" % i:
        inits.append(numpy_helper.from_array(w, weight))
    inits.append(numpy_helper.from_array(b, "l%d.bias" % i))
    nodes.append(helper.make_node("Gemm", [h, weight, "l%d.bias" % i], ["g%d" % i],
                                  name="gemm%d" % i, transB=1))
    h = "g%d" % i
    if i + 2 < len(widths):
        nodes.append(helper.make_node("Relu", [h], ["r%d" % i], name="relu%d" % i))
        h = "r%d" % i
        if dropout and i == 0:
            inits += [numpy_helper.from_array(np.array(0.5, np.float32), "ratio"),
                      numpy_helper.from_array(np.array(True), "training")]
            nodes.append(helper.make_node("Dropout", [h, "ratio", "training"], ["d0"], name="drop0"))
            h = "d0"
nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", [h, "y"], ["loss"], name="xent"))
g = helper.make_graph(nodes, "deep_mlp",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", x_width]),
                       helper.make_tensor_value_info("y", TensorProto.INT64, ["N"])],
                      [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out)
