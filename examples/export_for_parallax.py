#!/usr/bin/python3
"""Export a torch.nn module for Parallax training, the right way, and check it.

Use from Python (run with /usr/bin/python3, Debian's torch and onnx):

    from export_for_parallax import export_for_parallax
    problems = export_for_parallax(model, (x, y), "model.onnx",
                                   input_names=["x", "y"], output_names=["loss"])

`model(*example_inputs)` must return the loss (a scalar), or a tuple whose
first element is the loss and whose others are outputs you want to
compute later (e.g. logits for `parallaxc compile --infer --outputs logits`).

What "the right way" means, and why:
  - training=torch.onnx.TrainingMode.TRAINING: BatchNorm exported in
    training mode (batch statistics, running statistics updated) and
    Dropout kept; an eval-mode export folds BatchNorm into the Conv before
    it and drops Dropout, which then trains a different model.
  - do_constant_folding=False: constant folding merges parameters that
    happen to have equal values (a LayerNorm's initial weights and biases)
    into one initializer read through Identity nodes, which then trains as
    one tied parameter.
  - dim 0 of every input and output symbolic ("batch"), opset 17, so
    `parallaxc compile --batch N` picks the batch.
  - the standard losses torch 1.13 cannot export (MSELoss, BCELoss, L1Loss,
    SmoothL1Loss, HuberLoss, cross_entropy with label_smoothing) export
    through the symbolics of python/parallax/_symbolics.py.
  - the file's metadata_props say which initializers are the module's
    parameters (buffers such as a positional encoding are not trained),
    which are tied copies of another, and which embedding rows are
    padding_idx rows (python/parallax/_stamp.py, docs/metadata.md).

The checks run on the written file mirror the warnings of `parallaxc
compile` (passes/export_checks.c): initializers read through Identity,
BatchNormalization in inference mode or weights named onnx::Conv_N (BatchNorm
folded into Conv), Dropout without training mode, and all-zero rows of
embedding tables (padding_idx rows, which PyTorch never trains but Parallax
does). They return a list of messages (printed too); an empty list means the
export is fine. With parallaxc=PATH the compiler's own checks run as well
(`parallaxc compile` of a training program, its warnings included).

Command line (a module given as file.py:Class, built without arguments,
and a .npz of example inputs in forward()'s order):
    export_for_parallax.py file.py:Class inputs.npz out.onnx [--parallaxc PATH]
"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import parallax  # noqa: E402  (python/parallax: the loss symbolics and the metadata)
from parallax.checks import check_onnx  # noqa: E402,F401  (the one copy of the checks)


def export_for_parallax(model, example_inputs, path, input_names, output_names=("loss",),
                        parallaxc=None, batch=None, do_constant_folding=False):
    """Exports model (training mode, no constant folding unless asked,
    symbolic batch) to path, writes the parallax.* metadata into it and
    returns the list of problems found (empty: fine)."""
    parallax.export_training(model, example_inputs, path, input_names, output_names,
                             do_constant_folding=do_constant_folding)
    problems = check_onnx(path)
    if parallaxc:
        b = batch or int(example_inputs[0].shape[0])
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [parallaxc, "compile", path, "-o", os.path.join(tmp, "prog"), "--batch", str(b)]
            if len(output_names) > 1:
                cmd += ["--loss", output_names[0]]
            r = subprocess.run(cmd, capture_output=True, text=True)
        problems += [line for line in r.stderr.splitlines() if line.strip()]
        if r.returncode != 0 and not r.stderr.strip():
            problems.append("parallaxc compile failed with status %d" % r.returncode)
    for p in problems:
        print("export_for_parallax: %s" % p, file=sys.stderr)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module", help="file.py:Class (built without arguments)")
    ap.add_argument("inputs", help=".npz of example inputs in forward()'s order (arr_0, ...)")
    ap.add_argument("out", help="the .onnx to write")
    ap.add_argument("--names", help="comma-separated input names (default: the .npz keys)")
    ap.add_argument("--outputs", default="loss", help="comma-separated output names")
    ap.add_argument("--parallaxc", help="also run parallaxc compile's checks")
    a = ap.parse_args()
    import torch
    file, _, cls = a.module.partition(":")
    spec = importlib.util.spec_from_file_location("user_module", file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = np.load(a.inputs)
    keys = list(data.keys())
    names = a.names.split(",") if a.names else keys
    inputs = [torch.from_numpy(data[k]) for k in keys]
    problems = export_for_parallax(getattr(mod, cls)(), inputs, a.out, names,
                                   a.outputs.split(","), a.parallaxc)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
