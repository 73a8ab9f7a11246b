#!/usr/bin/python3
"""Forward (inference) throughput of each example model: the program that
`parallaxc compile --infer` builds against PyTorch eager on the same model,
batch and data, both single-threaded with OpenBLAS, measured in the same run.
Also reports compile time.

usage: bench/forward.py PARALLAXC [--batch 64] [--batches 100] [--repeat 5] [--models a,b]

Throughput: steady-state samples/s of the forward pass. Ours: the program's
`--bench-steps N` runs its compiled step N times on the first batch and
prints the mean step time. PyTorch: the loop over N batches of the same data
inside a running interpreter (Python overhead included), per batch. The two
run --repeat times, interleaved, and the medians are compared; the ratio is
ours / PyTorch (> 1: we are faster).
"""
import argparse
import importlib.util
import inspect
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402

for _alias, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _t)
import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("mlp", "cnn", "lstm_lm", "transformer_lm", "recommender")


def load_module(model):
    path = os.path.join(ROOT, "examples", model, "export.py")
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    spec = importlib.util.spec_from_file_location("export_" + model, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def torch_model(mod):
    classes = [c for _, c in inspect.getmembers(mod, inspect.isclass)
               if issubclass(c, torch.nn.Module) and c.__module__ == mod.__name__ and c.__name__.endswith("Loss")]
    if len(classes) != 1:
        raise SystemExit("cannot find the model class in %s" % mod.__file__)
    torch.manual_seed(0)
    return classes[0]().eval()


def input_arrays(model):
    import json
    ref = json.load(open(os.path.join(ROOT, "examples", model, "reference.json")))
    names = [i["name"] for i in ref["inputs"]]
    return [(n, np.load(os.path.join(ROOT, "examples", model, "data", n + ".npy"))) for n in names]


def tile(arr, n):
    reps = -(-n // arr.shape[0])
    return np.ascontiguousarray(np.concatenate([arr] * reps)[:n])


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    torch.set_num_threads(1)
    work = tempfile.mkdtemp(prefix="pxbench-")
    rows = []
    try:
        for model in args.models.split(","):
            onnx_path = os.path.join(ROOT, "examples", model, "model.onnx")
            prog = os.path.join(work, model)
            compile_cmd = [args.parallaxc, "compile", "--infer", onnx_path, "--batch", str(args.batch), "-o", prog]
            t_compile = median_time(lambda: subprocess.run(compile_cmd, check=True), 3)
            n = args.batch * args.batches
            arrays = [(name, tile(a, n)) for name, a in input_arrays(model)]
            data = os.path.join(work, model + "-data")
            os.makedirs(data)
            for name, a in arrays:
                np.save(os.path.join(data, name + ".npy"), a[:args.batch])
            run_cmd = [prog, "--data", data, "--out", os.path.join(work, model + "-out"),
                       "--bench-steps", str(args.batches)]

            net = torch_model(load_module(model))
            batches = [[torch.from_numpy(a[i * args.batch:(i + 1) * args.batch]) for _, a in arrays]
                       for i in range(args.batches)]

            def torch_loop():
                with torch.no_grad():
                    for b in batches:
                        net(*b)
            torch_loop()
            ours_runs, torch_runs = [], []
            for _ in range(args.repeat):  # interleaved: machine drift hits both
                out = subprocess.run(run_cmd, check=True, capture_output=True, text=True).stdout
                ours_runs.append(float(out.split("mean ")[1].split(" us")[0]) * 1e-6)
                torch_runs.append(median_time(torch_loop, 1) / args.batches)
            t_ours = statistics.median(ours_runs) * args.batches
            t_torch = statistics.median(torch_runs) * args.batches
            rows.append((model, n / t_ours, n / t_torch, t_compile))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("forward throughput, batch %d, %d batches, 1 thread (median of %d)" % (args.batch, args.batches, args.repeat))
    print("%-16s %14s %14s %8s %10s" % ("model", "parallax s/s", "pytorch s/s", "ratio", "compile s"))
    for model, ours, theirs, tc in rows:
        print("%-16s %14.0f %14.0f %8.2f %10.3f" % (model, ours, theirs, ours / theirs, tc))


if __name__ == "__main__":
    main()
