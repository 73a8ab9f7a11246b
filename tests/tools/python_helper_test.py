#!/usr/bin/python3
"""The parallax Python package against PyTorch and the compiled program.

Usage: python_helper_test.py PARALLAXC WORKDIR   (PYTHONPATH=python)

  export:  a logits model without loss_fn is refused, naming loss_fn; a module
           in eval mode is warned about, exported in training mode and left in
           eval mode with its buffers and the RNG untouched; initializers carry
           the module's own names; inputs have a symbolic batch; opset 17.
  round trip: a model exported with loss_fn is trained K steps by the program
           (--save); loaded back, PyTorch's loss on the batch of step K+1
           equals the program's loss at step K+1 (same trajectory, one more
           step), and its BatchNorm running statistics came back too.
  load_state_dict: a weight the exporter transposed (constant folding)
           maps back through the metadata; ties, a missing parameter, an unexpected initializer and
           a shape mismatch are each reported by name; strict refuses before
           copying anything.
  read_run: losses, eval, stats and the trace summary equal the files.
"""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import torch
from torch import nn

import parallax
from parallax._onnx import onnx

PARALLAXC, WORK = sys.argv[1], sys.argv[2]
failures = []


def check(label, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", label, (": " + detail) if detail and not ok
                       else ""))
    if not ok:
        failures.append(label)


def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL %s: %s%s" % (" ".join(cmd), r.stdout[-2000:], r.stderr[-2000:]))
    return r.stdout


class Recommender(nn.Module):
    """Logits from an embedding (sparse), BatchNorm and an MLP."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(300, 8)
        self.hidden = nn.Linear(8 + 3, 16)
        self.norm = nn.BatchNorm1d(16)
        self.out = nn.Linear(16, 3)

    def forward(self, item, dense):
        h = torch.cat([self.embed(item), dense], dim=1)
        return self.out(torch.relu(self.norm(self.hidden(h))))


def path(name):
    return os.path.join(WORK, name)


# --- export --------------------------------------------------------------
torch.manual_seed(0)
rng = np.random.default_rng(1)
N, B = 256, 16
item = rng.integers(0, 300, size=N)
dense = rng.standard_normal((N, 3)).astype(np.float32)
target = (item % 3).astype(np.int64)
os.makedirs(path("data"), exist_ok=True)
os.makedirs(path("run"), exist_ok=True)
for name, array in (("item", item), ("dense", dense), ("target", target)):
    np.save(path("data/%s.npy" % name), array)
example = (torch.from_numpy(item[:4]), torch.from_numpy(dense[:4]), torch.from_numpy(target[:4]))

model = Recommender()
try:
    parallax.export(model, example[:2], path("logits.onnx"))
    check("a logits model without loss_fn is refused", False, "no error")
except parallax.ExportError as e:
    check("a logits model without loss_fn is refused, naming loss_fn",
          "loss_fn" in str(e) and "scalar" in str(e), str(e))

model.eval()
before = {k: v.clone() for k, v in model.state_dict().items()}
rng_before = torch.get_rng_state()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    problems = parallax.export(model, example, path("model.onnx"),
                               loss_fn=nn.CrossEntropyLoss())
messages = [str(w.message) for w in caught]
check("an eval-mode module is warned about", any("eval mode" in m for m in messages),
      "; ".join(messages))
check("the export checks find nothing", problems == [], str(problems))
check("the module is left in eval mode", not model.training and not model.norm.training)
check("the module's buffers and parameters are unchanged",
      all(torch.equal(before[k], v) for k, v in model.state_dict().items()))
check("the RNG state is unchanged", torch.equal(rng_before, torch.get_rng_state()))

graph = onnx.load(path("model.onnx"))
inits = {i.name for i in graph.graph.initializer}
expected = {k for k in model.state_dict() if not k.endswith("num_batches_tracked")}
check("initializers carry the module's names", inits == expected,
      "%s vs %s" % (sorted(inits), sorted(expected)))
check("opset 17", any(o.domain in ("", "ai.onnx") and o.version == 17
                      for o in graph.opset_import))
dims = {i.name: i.type.tensor_type.shape.dim[0].dim_param for i in graph.graph.input}
check("inputs are item, dense, target with a symbolic batch",
      dims == {"item": "batch", "dense": "batch", "target": "batch"}, str(dims))
check("outputs are loss and output", [o.name for o in graph.graph.output] == ["loss", "output"])
model.train()

# --- round trip through the program ---------------------------------------
K = 10
initial = {k: v.clone() for k, v in model.state_dict().items()}
run(PARALLAXC, "compile", path("model.onnx"), "-o", path("train"), "--batch", str(B),
    "--optimizer", "adam", "--lr", "0.01")
run(path("train"), "--data", path("data"), "--steps", str(K), "--save", path("trained.onnx"),
    "--log-every", "0", "--losses", path("run/losses.csv"), "--stats", path("run/stats.json"),
    "--trace", path("run/trace.json"), "--eval-data", path("data"), "--eval-every", "5",
    "--eval-log", path("run/eval.csv"))
run(path("train"), "--data", path("data"), "--steps", str(K + 1), "--log-every", "0",
    "--losses", path("longer.csv"))
program_loss = float(open(path("longer.csv")).read().split()[-1].split(",")[1])

report = parallax.load_state_dict(model, path("trained.onnx"))
check("every tensor but num_batches_tracked loads", report.ok and
      report.missing_buffers == ["norm.num_batches_tracked"], str(report))
changed = [k for k in expected if not torch.equal(initial[k], model.state_dict()[k])]
check("the trained weights and running statistics changed", sorted(changed) == sorted(expected),
      "unchanged: %s" % sorted(expected - set(changed)))
rows = slice(K * B % N, K * B % N + B)
with torch.no_grad():
    torch_loss = nn.CrossEntropyLoss()(
        model(torch.from_numpy(item[rows]), torch.from_numpy(dense[rows])),
        torch.from_numpy(target[rows])).item()
rel = abs(torch_loss - program_loss) / abs(program_loss)
check("PyTorch's loss after loading = the program's next loss (%.7f vs %.7f)"
      % (torch_loss, program_loss), rel <= 1e-5, "relative error %.3g" % rel)

# --- load_state_dict reports ------------------------------------------------


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 4)
        self.decode = nn.Linear(4, 50, bias=False)
        self.decode.weight = self.embed.weight

    def forward(self, tokens, target):
        return nn.functional.cross_entropy(self.decode(self.embed(tokens)), target)


tied = Tied()
parallax.export(tied, (torch.tensor([1, 2, 3]), torch.tensor([2, 3, 4])), path("tied.onnx"))
report = parallax.load_state_dict(Tied(), path("tied.onnx"))
check("a tied weight is reported as tied, not missing", report.ok and len(report.tied) == 1,
      str(report))


class Folded(nn.Module):
    """A Linear on a 3-D input: constant folding stores its weight transposed."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 4)
        self.proj = nn.Linear(4, 3)

    def forward(self, tokens, target):
        return nn.functional.cross_entropy(self.proj(self.embed(tokens)).mean(1), target)


folded = Folded()
fold_inputs = (torch.randint(0, 20, (4, 5)), torch.tensor([0, 1, 2, 0]))
torch.onnx.export(folded, fold_inputs, path("folded.onnx"), opset_version=17,
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=True,
                  input_names=["tokens", "target"], output_names=["loss"])
parallax.stamp(folded, path("folded.onnx"), fold_inputs)
copy_back = Folded()
report = parallax.load_state_dict(copy_back, path("folded.onnx"))
check("a weight the exporter transposed loads back through the metadata",
      "proj.weight" not in {i.name for i in onnx.load(path("folded.onnx")).graph.initializer} and
      report.ok and all(torch.equal(a, b) for a, b in zip(folded.state_dict().values(),
                                                          copy_back.state_dict().values())),
      str(report))


class Extra(Recommender):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(3))


extra = Extra()
kept = extra.embed.weight.clone()
try:
    parallax.load_state_dict(extra, path("trained.onnx"))
    check("a parameter not in the file is refused", False, "no error")
except parallax.LoadError as e:
    check("a parameter not in the file is refused, by name", "scale" in str(e), str(e))
check("strict refusal copies nothing", torch.equal(kept, extra.embed.weight))
report = parallax.load_state_dict(extra, path("trained.onnx"), strict=False)
check("strict=False loads the rest and reports the missing one",
      report.missing == ["scale"] and "embed.weight" in report.loaded, str(report))


class Fewer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(300, 8)


try:
    parallax.load_state_dict(Fewer(), path("trained.onnx"))
    check("unexpected initializers are refused", False, "no error")
except parallax.LoadError as e:
    check("unexpected initializers are refused, by name", "out.weight" in str(e), str(e))


class Wider(Recommender):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(301, 8)


try:
    parallax.load_state_dict(Wider(), path("trained.onnx"), strict=False)
    check("a shape mismatch is refused", False, "no error")
except parallax.LoadError as e:
    check("a shape mismatch is refused even with strict=False, by name",
          "embed.weight [301, 8] vs [300, 8]" in str(e), str(e))

# --- read_run -----------------------------------------------------------------
r = parallax.read_run(path("run"))
check("read_run: one loss per step", [row["step"] for row in r["losses"]] == list(range(1, K + 1)))
check("read_run: the validations", [row["step"] for row in r["eval"]] == [5, 10])
check("read_run: stats", r["stats"]["steps"] == K and len(r["stats"]["ranks"]) == 1)
events = [e for e in json.load(open(path("run/trace.json")))["traceEvents"] if e["ph"] == "X"]
steps = sum(1 for e in events if e["name"] == "step (forward + backward)")
summary = r["trace"][0]["threads"]["main"]
check("read_run: the trace summary counts every span",
      sum(s["count"] for t in r["trace"][0]["threads"].values() for s in t.values()) ==
      len(events) and summary["step (forward + backward)"]["count"] == steps)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
