"""Checks of an exported ONNX file for the pitfalls that make Parallax train
a different model than the PyTorch module (parallaxc compile warns about the
same ones, passes/export_checks.c)."""
import json

import numpy as np

from ._onnx import numpy_helper, onnx

FIX = ("export with torch.onnx.export(..., training=torch.onnx.TrainingMode.TRAINING, "
       "do_constant_folding=False)")


def check_onnx(path):
    """The export pitfalls visible in the ONNX file at path: a list of messages."""
    model = onnx.load(path)
    graph = model.graph
    meta = {p.key: p.value for p in model.metadata_props}
    # rows the metadata marks as padding_idx: never updated (docs/metadata.md)
    padding = json.loads(meta.get("parallax.padding_idx", "{}"))
    inits = {i.name: i for i in graph.initializer}
    float_inits = {n for n, i in inits.items() if i.data_type in (1, 10, 11, 16)}
    constants = {n.output[0]: n for n in graph.node if n.op_type == "Constant"}
    problems = []
    tied = ["%s = Identity(%s)" % (n.output[0], n.input[0]) for n in graph.node
            if n.op_type == "Identity" and n.input[0] in float_inits]
    if tied:
        problems.append("initializers tied through Identity (%s): they would train as one; %s"
                        % (", ".join(tied), FIX))
    for n in graph.node:
        attrs = {a.name: a for a in n.attribute}
        if n.op_type == "BatchNormalization" and len(n.output) <= 1 and \
                not (attrs.get("training_mode") and attrs["training_mode"].i):
            problems.append("BatchNormalization %r is in eval mode; %s" % (n.name, FIX))
        if n.op_type == "Conv" and len(n.input) > 1 and n.input[1].startswith("onnx::Conv_"):
            problems.append("Conv %r reads computed weights %r: BatchNorm folded into it; %s"
                            % (n.name, n.input[1], FIX))
        if n.op_type == "Dropout":
            tm = n.input[2] if len(n.input) > 2 else ""
            value = None
            if tm in constants:
                value = int(numpy_helper.to_array(constants[tm].attribute[0].t).reshape(-1)[0])
            elif tm in inits:
                value = int(numpy_helper.to_array(inits[tm]).reshape(-1)[0])
            if not tm or value == 0:
                problems.append("Dropout %r is switched off (eval mode); %s" % (n.name, FIX))
    users = {}
    for n in graph.node:
        for k, name in enumerate(n.input):
            users.setdefault(name, []).append((n, k))
    for name in float_inits:
        uses = users.get(name, [])
        if not uses or any(n.op_type != "Gather" or k != 0 or
                           any(a.name == "axis" and a.i != 0 for a in n.attribute)
                           for n, k in uses):
            continue
        table = numpy_helper.to_array(inits[name])
        if table.ndim != 2 or table.shape[0] < 2 or not table.any():
            continue
        zero = [r for r in np.flatnonzero(~table.any(axis=1)) if padding.get(name) != r]
        if zero:
            problems.append("row %d of embedding table %r is all zeros (a padding_idx row?): "
                            "PyTorch never trains it, Parallax does unless the export records "
                            "it (parallax.export writes parallax.padding_idx); keep padding ids "
                            "out of the batches or mask them in the model" % (zero[0], name))
    return problems
