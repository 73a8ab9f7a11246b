#!/usr/bin/python3
"""Trains every zoo model (tests/zoo/models.py) against PyTorch.

    run.py PARALLAXC [--models a,b] [--forms folded,unfolded] [--jobs N] [--keep DIR]
           [--export-batch N]

For each model, exported both with torch.onnx.export's default constant
folding ("folded") and with do_constant_folding=False ("unfolded"), in
training mode through examples/export_for_parallax.py (which writes the
parallax.* metadata): `parallaxc compile` (SGD) trains STEPS steps of
BATCH samples, and PyTorch trains a copy of the module on the same
batches from the same weights. --export-batch N traces the export with
N samples instead of BATCH: the program is then compiled for a batch the
export never saw (an initial state traced as zeros of the export's batch
must follow it). A case passes when
  - every step's loss is within 1e-4 relative of PyTorch's (1e-3 for
    models with BatchNorm);
  - every parameter the --save'd model holds (parallax.parameters, its
    transpose undone) is within 1e-4 (BatchNorm: 1e-3) of PyTorch's
    trained value, relative to its largest magnitude (at least 1);
  - every buffer it holds (parallax.buffers) equals PyTorch's buffer after
    training (BatchNorm running statistics to the same tolerance, all else
    exactly): buffers are not trained;
  - every tied copy (parallax.ties) equals its source, transposed as
    the metadata says: tied weights stay one.
Prints one line per case and exits 1 if any failed (0 cases is a failure).
"""

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from concurrent.futures import ProcessPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "examples"))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402  (numpy aliases restored by export_for_parallax)
from onnx import numpy_helper  # noqa: E402

STEPS, BATCH, LR = 5, 4, 0.05
FORMS = {"folded": True, "unfolded": False}


def export(entry, model, inputs, path, export_batch):
    """The module exported through the project's helper; returns its problems."""
    import torch
    from export_for_parallax import export_for_parallax
    example = tuple(torch.from_numpy(a[:export_batch].copy()) for _, a in inputs)
    with open(os.devnull, "w") as null:
        saved, sys.stderr = sys.stderr, null
        try:
            return export_for_parallax(model, example, path, [n for n, _ in inputs], ["loss"],
                                       do_constant_folding=FORMS[entry[1]])
        finally:
            sys.stderr = saved


def torch_train(model, inputs):
    import torch
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for s in range(STEPS):
        batch = [torch.from_numpy(a[s * BATCH:(s + 1) * BATCH].copy()) for _, a in inputs]
        loss = model(*batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return np.array(losses)


def _close(got, want, tol):
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    return err <= tol * scale, err / scale


def _transpose(a, perm, shape):
    return (np.transpose(a, perm) if perm else a).reshape(shape)


def check_saved(trained_path, meta, model, tol):
    """Problems of the saved model against the PyTorch module after training."""
    saved = {t.name: numpy_helper.to_array(t) for t in onnx.load(trained_path).graph.initializer}
    problems, worst = [], 0.0
    params = {}  # every name of every parameter, tied ones under each
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        for short, p in mod._parameters.items():
            if p is not None:
                params[mod_name + "." + short if mod_name else short] = p
    for name, where in json.loads(meta["parallax.parameters"]).items():
        want = params[name].detach().numpy()
        got = saved[where["initializer"]]
        perm = where.get("perm")
        if perm:  # the initializer holds transpose(parameter, perm)
            inv = list(np.argsort(perm))
            got = np.transpose(got.reshape([want.shape[p] for p in perm]), inv)
        ok, err = _close(got.reshape(want.shape), want, tol)
        worst = max(worst, err)
        if not ok:
            problems.append("parameter %s differs from PyTorch's by %.3g" % (name, err))
    buffers = dict(model.named_buffers())
    for name, init in json.loads(meta["parallax.buffers"]).items():
        want, got = buffers[name].detach().numpy(), saved[init]
        if "running_" in name:
            ok, err = _close(got.reshape(want.shape), want.astype(got.dtype), tol)
        else:
            ok, err = bool(np.array_equal(got.reshape(want.shape), want)), 0.0
        if not ok:
            problems.append("buffer %s changed (PyTorch's did not, or not so)" % name)
    for tie in json.loads(meta["parallax.ties"]):
        copy_, of = saved[tie["initializer"]], saved[tie["of"]]
        if not np.array_equal(copy_, _transpose(of, tie.get("perm"), copy_.shape)):
            problems.append("tied copy %s is no longer %s%s" % (
                tie["initializer"], tie["of"], " transposed" if tie.get("perm") else ""))
    return problems, worst


def run_case(parallaxc, entry, keep, export_batch=BATCH):
    """One (model, form): (ok, message)."""
    import torch
    from models import ZOO
    torch.set_num_threads(1)
    name, form = entry
    zoo = {z.name: z for z in ZOO}[name]
    tol = 1e-3 if zoo.batchnorm else 1e-4
    work = tempfile.mkdtemp(prefix="zoo_%s_%s_" % (name, form))
    try:
        torch.manual_seed(0)
        model = zoo.build()
        ref = copy.deepcopy(model)
        inputs = zoo.data(np.random.RandomState(1), STEPS * BATCH)
        path = os.path.join(work, "m.onnx")
        export(entry, model, inputs, path, export_batch)
        meta = {e.key: e.value for e in onnx.load(path).metadata_props}
        os.makedirs(os.path.join(work, "data"))
        for n, a in inputs:
            np.save(os.path.join(work, "data", n + ".npy"), np.ascontiguousarray(a))
        r = subprocess.run([parallaxc, "compile", path, "-o", os.path.join(work, "prog"),
                            "--batch", str(BATCH), "--optimizer", "sgd", "--lr", str(LR)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return False, "compile: " + r.stderr.strip()[-1500:]
        r = subprocess.run([os.path.join(work, "prog"), "--data", os.path.join(work, "data"),
                            "--steps", str(STEPS), "--losses", os.path.join(work, "l.csv"),
                            "--save", os.path.join(work, "trained.onnx"), "--log-every", "0",
                            "--threads", "1"], capture_output=True, text=True)
        if r.returncode != 0:
            return False, "run: " + r.stderr.strip()[-1500:]
        ours = np.loadtxt(os.path.join(work, "l.csv"), delimiter=",", skiprows=1, ndmin=2)[:, 1]
        want = torch_train(ref, inputs)
        rel = float(np.max(np.abs(ours - want) / np.abs(want))) if len(ours) == STEPS else np.inf
        problems = [] if rel <= tol else ["losses %s, PyTorch %s" % (ours, want)]
        more, werr = check_saved(os.path.join(work, "trained.onnx"), meta, ref, tol)
        problems += more
        msg = "loss rel err %.2g, weight err %.2g" % (rel, werr)
        return not problems, msg + ("; " + "; ".join(problems) if problems else "")
    except Exception:  # a harness error is this case's failure, with its trace
        return False, traceback.format_exc()[-1500:]
    finally:
        if keep:
            shutil.copytree(work, os.path.join(keep, "%s_%s" % entry), dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def main():
    from models import ZOO
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parallaxc")
    ap.add_argument("--models", help="comma-separated zoo names (default: all)")
    ap.add_argument("--forms", default="folded,unfolded")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", help="copy each case's folder here")
    ap.add_argument("--export-batch", type=int, default=BATCH,
                    help="samples the export traces (default: the training batch, %d)" % BATCH)
    a = ap.parse_args()
    names = a.models.split(",") if a.models else [z.name for z in ZOO]
    unknown = set(names) - {z.name for z in ZOO}
    if unknown:
        sys.exit("unknown zoo models: %s" % ", ".join(sorted(unknown)))
    cases = [(n, f) for n in names for f in a.forms.split(",")]
    failed = 0
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        futures = [pool.submit(run_case, os.path.abspath(a.parallaxc), c, a.keep, a.export_batch) for c in cases]
        for case, fut in zip(cases, futures):
            ok, msg = fut.result()
            failed += not ok
            print("%s %s/%s: %s" % ("ok  " if ok else "FAIL", case[0], case[1], msg), flush=True)
    print("%d of %d zoo cases passed" % (len(cases) - failed, len(cases)))
    sys.exit(1 if failed or not cases else 0)


if __name__ == "__main__":
    main()
