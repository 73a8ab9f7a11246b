#!/usr/bin/python3
"""Training step time of a feed-forward pair with masked weights against the
dense step: our dense path (OpenBLAS) and PyTorch dense, in the same run.

usage: bench/sparse_ffn.py PARALLAXC [--dim 4096] [--hidden 4096] [--batch 64]
           [--steps 8] [--repeat 3] [--configs NAME,...] [--sweep DENSITIES]
       bench/sparse_ffn.py PARALLAXC --lm [--embed 512] [--ffn 2048] [--vocab 1000]
           [--lm-batch 16] [--steps 8] [--repeat 3]

The model: loss = mean((W2 relu(W1 x + b1) + b2 - y)^2), W1 [hidden, dim] and
W2 [dim, hidden] read by Gemm (transB = 1, as nn.Linear exports), SGD. Each
configuration compiles it (`--batch`, `--optimizer sgd`) and trains
`--steps` steps with `--threads 1`; the step time is the program's
--stats steady-state rate (warm-up steps left out). PyTorch trains the same
module (nn.Linear pair, the same weights, torch.set_num_threads(1)) as
many steps, timed after two warm-up steps. Every configuration and PyTorch
run --repeat times by turns; medians are reported with the load average
before and after (the machine is shared: run it when `uptime` is low).

Configurations (both weights masked, the sparse kernels unless named):
  dense          no --sparsity: our dense path
  u90            unstructured, 90%
  2:4            n:m 2:4 (50%)
  block16-50     block:16x16 at 50%
  block16-90     block:16x16 at 90%
  u90-gemm       unstructured 90% on the dense path (--sparse-kernels dense)

--sweep 0.05,0.1,...: the crossover instead: at each density, unstructured
masks through the sparse kernels against the dense path, step times and
their ratio (the density where it reaches 1 is the crossover
passes/weight_sparsity.c uses).

--lm: end to end instead: bench/large_lm.py's transformer LM (one encoder
layer, d_model --embed, feed-forward --ffn, --vocab words, 16 tokens per
sample), trained with SGD at --lm-batch samples per step: our dense path,
ours with the two feed-forward weights at 90% (--sparsity NAME=0.9, the
default kernels), and PyTorch dense training the same module, 1 thread.
Besides the wall-clock step times, --lm reports each one's CPU time per step
(programs: a run of --steps less a run of 2 steps; PyTorch: process time
per step), which a loaded machine disturbs less.
"""
import argparse
import json
import os
import resource
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
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

CONFIGS = {
    "dense": [],
    "u90": ["--sparsity", "auto:0.9", "--sparse-kernels", "sparse"],
    "2:4": ["--sparsity", "auto:0.5", "--sparsity-pattern", "2:4", "--sparse-kernels", "sparse"],
    "block16-50": ["--sparsity", "auto:0.5", "--sparsity-pattern", "block:16x16",
                   "--sparse-kernels", "sparse"],
    "block16-90": ["--sparsity", "auto:0.9", "--sparsity-pattern", "block:16x16",
                   "--sparse-kernels", "sparse"],
    "u90-gemm": ["--sparsity", "auto:0.9", "--sparse-kernels", "dense"],
}


def load():
    return os.getloadavg()[0]


def write_model(folder, dim, hidden, samples):
    rng = np.random.RandomState(7)
    w1 = (rng.randn(hidden, dim) / np.sqrt(dim)).astype(np.float32)
    w2 = (rng.randn(dim, hidden) / np.sqrt(hidden)).astype(np.float32)
    b1 = np.zeros(hidden, np.float32)
    b2 = np.zeros(dim, np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["a"]),
        helper.make_node("Gemm", ["a", "fc2.weight", "fc2.bias"], ["pred"], transB=1),
        helper.make_node("Sub", ["pred", "y"], ["diff"]),
        helper.make_node("Mul", ["diff", "diff"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "ffn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", dim]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", dim])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(a, n) for a, n in
         ((w1, "fc1.weight"), (b1, "fc1.bias"), (w2, "fc2.weight"), (b2, "fc2.bias"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(os.path.join(folder, "data"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    x = rng.randn(samples, dim).astype(np.float32)
    np.save(os.path.join(folder, "data", "x.npy"), x)
    np.save(os.path.join(folder, "data", "y.npy"), (0.5 * x).astype(np.float32))
    return w1, b1, w2, b2


def compile_config(parallaxc, folder, name, flags, batch):
    prog = os.path.join(folder, "prog_" + name.replace(":", "_"))
    subprocess.run([parallaxc, "compile", os.path.join(folder, "model.onnx"), "-o", prog,
                    "--batch", str(batch), "--optimizer", "sgd", "--lr", "1e-4"] + flags,
                   check=True)
    return prog


def run_program(prog, folder, steps, batch):
    """Seconds per step: the program's --stats steady-state rate, 1 thread."""
    stats = prog + ".stats.json"
    subprocess.run([prog, "--data", os.path.join(folder, "data"), "--steps", str(steps),
                    "--threads", "1", "--log-every", "0", "--stats", stats], check=True)
    s = json.load(open(stats))
    return batch / s["samples_per_second"]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def program_cpu(prog, folder, steps):
    """CPU seconds per step (user + system) of the program at 1 thread: a run of
    `steps` steps less a run of 2, over steps - 2 (start-up and the first steps
    cancel). On a shared machine this is steadier than the wall clock, which
    counts the time other processes hold the core."""
    cpu = []
    for n in (2, steps):
        t0 = children_cpu()
        subprocess.run([prog, "--data", os.path.join(folder, "data"), "--steps", str(n),
                        "--threads", "1", "--log-every", "0"], check=True,
                       stdout=subprocess.DEVNULL)
        cpu.append(children_cpu() - t0)
    return (cpu[1] - cpu[0]) / (steps - 2)


TORCH = r"""
import sys, time
import numpy as np
import torch
torch.set_num_threads(1)
folder, steps, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
w = np.load(folder + "/weights.npz")
dim, hidden = w["w1"].shape[1], w["w1"].shape[0]
m = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, dim))
with torch.no_grad():
    m[0].weight.copy_(torch.from_numpy(w["w1"])); m[0].bias.zero_()
    m[2].weight.copy_(torch.from_numpy(w["w2"])); m[2].bias.zero_()
opt = torch.optim.SGD(m.parameters(), lr=1e-4)
x = torch.from_numpy(np.load(folder + "/data/x.npy")); y = torch.from_numpy(np.load(folder + "/data/y.npy"))
n = x.shape[0]
times = []
for s in range(steps):
    i = (s * batch) % (n // batch * batch)
    t0 = time.perf_counter()
    opt.zero_grad()
    loss = ((m(x[i:i + batch]) - y[i:i + batch]) ** 2).mean()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
print(sum(times[2:]) / len(times[2:]))
"""


def run_torch(folder, steps, batch):
    out = subprocess.run([sys.executable, "-c", TORCH, folder, str(steps), str(batch)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc")
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--sweep", help="densities: the crossover of the sparse kernels")
    ap.add_argument("--lm", action="store_true", help="the transformer LM end to end")
    ap.add_argument("--embed", type=int, default=512)
    ap.add_argument("--ffn", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--lm-batch", type=int, default=16)
    ap.add_argument("--keep", help="folder for the model and programs (default: a temporary one)")
    a = ap.parse_args()
    folder = a.keep or tempfile.mkdtemp(prefix="px_sparse_ffn_")
    os.makedirs(folder, exist_ok=True)
    try:
        load0 = load()
        if a.lm:
            lm(a, folder)
        else:
            w1, b1, w2, b2 = write_model(folder, a.dim, a.hidden, 4 * a.batch)
            np.savez(os.path.join(folder, "weights.npz"), w1=w1, w2=w2)
            (sweep if a.sweep else compare)(a, folder)
        print("load average: %.2f before, %.2f after; OpenBLAS core type %s, 1 thread" %
              (load0, load(), os.environ.get("OPENBLAS_CORETYPE", "(default)")))
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


TORCH_LM = r"""
import sys, time
import torch
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[1])
import large_lm
steps, batch = int(sys.argv[2]), int(sys.argv[3])
sizes = dict(vocab=int(sys.argv[4]), embed=int(sys.argv[5]), hidden=int(sys.argv[6]))
model, inputs = large_lm.build("transformer", sizes)
tokens, targets = (torch.from_numpy(x) for _, x in inputs)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
n = tokens.shape[0] // batch * batch
times, cpu = [], []
for s in range(steps):
    i = (s * batch) % n
    t0, c0 = time.perf_counter(), time.process_time()
    opt.zero_grad()
    model(tokens[i:i + batch], targets[i:i + batch]).backward()
    opt.step()
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
print(sum(times[2:]) / len(times[2:]), sum(cpu[2:]) / len(cpu[2:]))
"""


def ffn_weights(model_path, embed, ffn):
    """The initializers MatMul multiplies by that are [embed, ffn] or [ffn, embed]."""
    m = onnx.load(model_path)
    shapes = {t.name: tuple(t.dims) for t in m.graph.initializer}
    return sorted({n.input[1] for n in m.graph.node if n.op_type == "MatMul" and
                   shapes.get(n.input[1]) in ((embed, ffn), (ffn, embed))})


def lm(a, folder):
    here = os.path.dirname(os.path.abspath(__file__))
    model_dir = os.path.join(folder, "lm")
    subprocess.run([sys.executable, os.path.join(here, "large_lm.py"), "transformer", model_dir,
                    "--vocab", str(a.vocab), "--embed", str(a.embed), "--hidden", str(a.ffn)],
                   check=True, capture_output=True)
    names = ffn_weights(os.path.join(model_dir, "model.onnx"), a.embed, a.ffn)
    if len(names) != 2:
        sys.exit("expected the two feed-forward weights, found %s" % names)
    configs = {"dense": [], "ffn90": ["--sparsity", ",".join(n + "=0.9" for n in names)]}
    progs = {}
    for name, flags in configs.items():
        progs[name] = os.path.join(folder, "lm_" + name)
        subprocess.run([a.parallaxc, "compile", os.path.join(model_dir, "model.onnx"), "-o",
                        progs[name], "--batch", str(a.lm_batch), "--optimizer", "sgd"] + flags,
                       check=True)
    times = {n: [] for n in list(configs) + ["torch"]}
    cpu = {n: [] for n in times}
    for r in range(a.repeat):
        for name in configs:
            times[name].append(run_program(progs[name], model_dir, a.steps, a.lm_batch))
            cpu[name].append(program_cpu(progs[name], model_dir, a.steps))
        out = subprocess.run([sys.executable, "-c", TORCH_LM, here, str(a.steps), str(a.lm_batch),
                              str(a.vocab), str(a.embed), str(a.ffn)],
                             check=True, capture_output=True, text=True).stdout
        wall, used = out.strip().splitlines()[-1].split()
        times["torch"].append(float(wall))
        cpu["torch"].append(float(used))
    title = ("transformer LM (d_model %d, feed-forward %d, vocab %d, 16 tokens), batch %d, SGD, "
             "1 thread; ffn90: %s at 90%%" % (a.embed, a.ffn, a.vocab, a.lm_batch, " ".join(names)))
    report(title, list(configs), times, a.repeat)
    report("the same, CPU time per step (user + system)", list(configs), cpu, a.repeat)
    for what, t in (("wall clock", times), ("CPU time", cpu)):
        turns = [d / s for d, s in zip(t["dense"], t["ffn90"])]
        print("ffn90 speed-up over dense, %s, each turn: %s; median %.2f" %
              (what, " ".join("%.2f" % x for x in turns), statistics.median(turns)))


def report(title, names, times, repeat):
    """Median step times, and their ratios to our dense path and to PyTorch."""
    med = {n: statistics.median(t) for n, t in times.items()}
    print("%s: step time, median of %d by turns (ms)" % (title, repeat))
    print("%-12s %10s %10s %10s   %s" % ("config", "step ms", "/ ours", "/ torch", "runs (ms)"))
    base = med.get("dense")
    for n in names + ["torch"]:
        print("%-12s %10.2f %10s %10.3f   %s" %
              (n, 1e3 * med[n], "%.3f" % (med[n] / base) if base else "-", med[n] / med["torch"],
               " ".join("%.1f" % (1e3 * t) for t in times[n])), flush=True)


def compare(a, folder):
    names = [n for n in a.configs.split(",") if n]
    progs = {n: compile_config(a.parallaxc, folder, n, CONFIGS[n], a.batch) for n in names}
    times = {n: [] for n in names + ["torch"]}
    for r in range(a.repeat):
        for n in names:
            times[n].append(run_program(progs[n], folder, a.steps, a.batch))
        times["torch"].append(run_torch(folder, a.steps, a.batch))
    report("FFN pair %dx%d, batch %d, SGD, 1 thread" % (a.hidden, a.dim, a.batch), names, times,
           a.repeat)


def sweep(a, folder):
    densities = [float(x) for x in a.sweep.split(",")]
    print("crossover, FFN pair %dx%d, batch %d, 1 thread (median of %d)" %
          (a.hidden, a.dim, a.batch, a.repeat))
    print("%8s %12s %12s %8s" % ("density", "sparse ms", "dense ms", "ratio"), flush=True)
    for dens in densities:
        s = "auto:%g" % (1 - dens)
        sp = compile_config(a.parallaxc, folder, "sw_sparse",
                            ["--sparsity", s, "--sparse-kernels", "sparse"], a.batch)
        dn = compile_config(a.parallaxc, folder, "sw_dense",
                            ["--sparsity", s, "--sparse-kernels", "dense"], a.batch)
        ts, td = [], []
        for r in range(a.repeat):
            ts.append(run_program(sp, folder, a.steps, a.batch))
            td.append(run_program(dn, folder, a.steps, a.batch))
        ts, td = statistics.median(ts), statistics.median(td)
        print("%8.2f %12.2f %12.2f %8.3f" % (dens, 1e3 * ts, 1e3 * td, ts / td), flush=True)


if __name__ == "__main__":
    main()
