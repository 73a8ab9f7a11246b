"""Trains a PyTorch model and the program `parallaxc compile` builds from its
ONNX export on the same batches from the same weights with SGD, and
compares every step's loss (within 1e-5 relative) and, when asked, the
trained weights (`--save`, within 1e-5). Used by tests/cli/*_vs_torch.sh;
it works in the current directory (m.onnx, data/, prog, ours.csv).

    compare(name, model, inputs, parallaxc, steps, batch, lr, opset,
            want_ops, export_kwargs, check_weights)

inputs: {graph input name: array of steps * batch samples}, in the order
model.forward takes them; the program reads batch s of each at step s.
want_ops: ONNX op types the export must contain (else the test says so).
"""
import copy
import os
import subprocess
import sys

import numpy as np

for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _a not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _a, _t)
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402


def compare(name, model, inputs, parallaxc, steps, batch, lr, opset, want_ops,
            export_kwargs=None, check_weights=True):
    ref_model = copy.deepcopy(model)
    names = list(inputs)
    first = tuple(torch.tensor(inputs[k][:batch]) for k in names)
    torch.onnx.export(model, first if len(first) > 1 else first[0], "m.onnx",
                      opset_version=opset, input_names=names, output_names=["loss"],
                      **(export_kwargs or {}))
    ops = {n.op_type for n in onnx.load("m.onnx").graph.node}
    missing = set(want_ops) - ops
    if missing:
        sys.exit("%s: the export lacks %s (it has %s)" % (name, sorted(missing), sorted(ops)))
    os.makedirs("data", exist_ok=True)
    for k in names:
        np.save(os.path.join("data", k + ".npy"), inputs[k])
    subprocess.run([parallaxc, "compile", "m.onnx", "-o", "prog", "--optimizer", "sgd",
                    "--lr", str(lr)], check=True)
    run = ["./prog", "--data", "data", "--steps", str(steps), "--losses", "ours.csv",
           "--log-every", "0"]
    subprocess.run(run + (["--save", "trained.onnx"] if check_weights else []), check=True)
    ours = np.loadtxt("ours.csv", delimiter=",", skiprows=1, ndmin=2)[:, 1]
    opt = torch.optim.SGD(ref_model.parameters(), lr=lr)
    ref = []
    for s in range(steps):
        sl = slice(s * batch, (s + 1) * batch)
        loss = ref_model(*(torch.tensor(inputs[k][sl]) for k in names))
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref.append(loss.item())
    ref = np.array(ref)
    rel = np.max(np.abs(ours - ref) / np.abs(ref)) if len(ours) == steps else np.inf
    werr = 0.0
    if check_weights:
        trained = {t.name: numpy_helper.to_array(t)
                   for t in onnx.load("trained.onnx").graph.initializer}
        werr = max(float(np.max(np.abs(trained[k].reshape(p.shape) - p.detach().numpy())))
                   for k, p in ref_model.named_parameters())
    print("%s: losses ours" % name, ours, "torch", ref, "max relative error %.3g" % rel
          + (", max weight error %.3g" % werr if check_weights else ""))
    if not rel <= 1e-5 or not werr <= 1e-5:
        sys.exit("%s: the compiled program's losses%s differ from PyTorch's"
                 % (name, " or weights" if check_weights else ""))
