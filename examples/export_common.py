"""Shared export logic for the example training-loss models.

Every example is a torch.nn.Module whose forward(*inputs) returns a scalar
float32 loss. export_example() writes, next to the calling script:
  model.onnx      opset 17, leading dim of every input symbolic and named "batch"
  data/<in>.npy   one array per graph input, samples along dim 0
  reference.json  the PyTorch loss on the first B samples for a few B

Run with /usr/bin/python3 (Debian's torch and onnx).
"""

import json
import os
import sys

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import parallax  # noqa: E402

REFERENCE_BATCHES = (1, 2, 8, 16)


def export_example(model_dir, model, inputs, large=False):
    """inputs: list of (name, numpy array) in the order forward() takes them.
    large: only model.onnx, its weights in external data (model.onnx.data:
    a program then reads each weight from the file rather than mapping them
    all) and data/, without the parallax.* metadata and reference.json,
    whose re-export and PyTorch runs cost much on a large model."""
    model.eval()
    data_dir = os.path.join(model_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    names = [name for name, _ in inputs]
    for name, array in inputs:
        np.save(os.path.join(data_dir, name + ".npy"), np.ascontiguousarray(array))

    # Trace with two samples so nothing can specialise on a batch of one.
    sample = tuple(torch.from_numpy(array[:2].copy()) for _, array in inputs)
    onnx_path = os.path.join(model_dir, "model.onnx")

    def export(module, path):
        torch.onnx.export(
            module,
            sample,
            path,
            input_names=names,
            output_names=["loss"],
            dynamic_axes={name: {0: "batch"} for name in names},
            opset_version=17,
            do_constant_folding=True,
            training=torch.onnx.TrainingMode.EVAL,
        )

    export(model, onnx_path)
    check_untied(onnx_path)
    if large:
        onnx.save_model(onnx.load(onnx_path), onnx_path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.onnx.data")
        return
    # The parallax.* metadata (docs/metadata.md): the trainable set (buffers
    # such as a positional encoding stay fixed), ties, padding_idx rows.
    parallax.stamp(model, onnx_path, sample, reexport=export)

    n_samples = inputs[0][1].shape[0]
    losses = {}
    with torch.no_grad():
        for batch in REFERENCE_BATCHES + (n_samples,):
            if batch > n_samples:
                continue
            args = tuple(torch.from_numpy(array[:batch].copy()) for _, array in inputs)
            loss = model(*args)
            losses[str(batch)] = float(loss.to(torch.float32).item())

    graph = onnx.load(onnx_path).graph
    reference = {
        "model": "model.onnx",
        "inputs": [
            {"name": name, "dtype": str(array.dtype), "shape": list(array.shape[1:])}
            for name, array in inputs
        ],
        "samples": int(n_samples),
        "loss_batch_8": losses["8"],
        "losses": losses,
        "note": "PyTorch float32 loss on the first B samples of data/, keyed by B",
        "onnx_ops": sorted({node.op_type for node in graph.node}),
        "initializers": len(graph.initializer),
    }
    with open(os.path.join(model_dir, "reference.json"), "w") as f:
        json.dump(reference, f, indent=2)
        f.write("\n")
    print("%s: loss(8)=%r ops=%s" % (os.path.basename(model_dir), losses["8"],
                                     " ".join(reference["onnx_ops"])))


def language_model_data(vocab, seq, samples, seed):
    """(tokens, targets) int64 [samples, seq] for the language-model examples
    and benchmarks: windows of one Zipf-ish word stream where each word has a
    few likely successors (so training can lower the loss); targets are the
    tokens shifted by one."""
    rng = np.random.RandomState(seed)
    successors = rng.randint(0, vocab, size=(vocab, 4))
    length = samples * seq + 1
    text = np.empty(length, dtype=np.int64)
    text[0] = 0
    for i in range(1, length):
        if rng.rand() < 0.8:
            text[i] = successors[text[i - 1], rng.randint(0, 4)]
        else:
            text[i] = min(int(rng.zipf(1.3)), vocab) - 1
    tokens = text[:-1].reshape(samples, seq).copy()
    targets = text[1:].reshape(samples, seq).copy()
    return tokens, targets


def check_untied(onnx_path):
    """torch.onnx.export merges bitwise-equal initializers into one plus Identity
    nodes; for a training graph that silently ties separate weights together."""
    graph = onnx.load(onnx_path).graph
    inits = {init.name for init in graph.initializer}
    tied = [node.output[0] for node in graph.node
            if node.op_type == "Identity" and node.input[0] in inits]
    if tied:
        raise SystemExit("%s: export tied parameters %s; give them distinct values"
                         % (onnx_path, ", ".join(tied)))
