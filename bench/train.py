#!/usr/bin/python3
"""Training throughput and peak memory of each example model: the program that
`parallaxc compile` builds (SGD) against PyTorch eager training of the same
model (forward + backward + torch.optim.SGD step, nn.Embedding with its default
dense gradients), same batch, same data order, both with the same number of
threads (ours: --threads, the rank's pool that also splits GEMM; PyTorch:
torch.set_num_threads), measured in the same run.

usage: bench/train.py PARALLAXC [--batch 32] [--repeat 5] [--seconds 1.0]
                      [--models a,b] [--threads 1,2] [--json train_bench.json]

Models: the examples, plus two benchmark-sized language models with a full
softmax made by bench/large_lm.py into bench/.cache (once): lstm_lm_20k (LSTM
LM, 20k vocabulary, embedding 64, LSTM 128) and transformer_lm_8k (one encoder
layer, 8k vocabulary, d=64); and the model zoo (tests/zoo/models.py) as
zoo:NAME, exported through python/parallax into bench/.cache/zoo (once per
version of models.py). --threads runs every model at each listed thread
count; "all" means every core of the machine.

Steps/s. Ours: the steady-state rate the program reports in --stats (its
warm-up steps excluded) for a run of N steps, N chosen from a calibration run
so that the steps last about --seconds; as a cross-check, the (wall) column
is whole-process time of that run minus a 3-step run, divided by N-3 (noisy
on this machine: MPI_Init of a singleton takes ~1 s and varies by tenths).
PyTorch: one interpreter per model (this script with --torch-child) builds the
model, warms up (at least 10 steps and half of --seconds), then on each
request trains for about --seconds in 4 windows back to back and reports the
fastest window's rate (Python overhead included, import and model
construction excluded). PyTorch's threads: at 1 thread its OpenMP pool and its BLAS
(OpenBLAS, pthread build) each have 1; at T > 1 thread three settings are
tried, its OpenMP threads / its BLAS's threads = T/1, T/T and 1/T (the two
pools spin while they wait, so T/T can oversubscribe T cores), each in its
own interpreter, twice by turns, and the fastest is kept for the
measurement (the table's "torch thr" column). Ours and PyTorch alternate
--repeat times. The steps/s columns are each side's best: our fastest run,
PyTorch's fastest window over all its runs (load and interruptions only
ever slow a run down, so the best is the stable figure of an idle machine,
and PyTorch's shorter windows give it the better chance). speed is ours /
PyTorch of those (> 1: we are faster); paired is the median of the
repeats' ratios, each from two runs back to back, so that load that comes
and goes on the machine hits both sides of a ratio alike: the figure to
compare on a loaded machine.

Peak memory: max RSS of each process (os.wait4): ours the median over the
long runs, PyTorch its interpreter's peak over all its steps. The PyTorch
figure includes the interpreter and the torch library; `torch idle` is its
peak after building the model, before training.
"""
import argparse
import importlib.util
import inspect
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("mlp", "cnn", "lstm_lm", "transformer_lm", "recommender", "dlrm", "lm1b", "lstm_lm_20k",
          "transformer_lm_8k")
# Generated models: name -> (bench/large_lm.py kind, size overrides).
LARGE = {"lstm_lm_20k": ("lstm", {}), "transformer_lm_8k": ("transformer", {})}
CACHE = os.path.join(ROOT, "bench", ".cache")
LR = 0.01
SHORT_STEPS = 3
# PyTorch's warm-up: at least this many steps and half a --seconds window
# (at most the second count), then each timed run is TORCH_WINDOWS windows
# of which the fastest counts.
TORCH_WARMUP_STEPS, TORCH_WARMUP_STEPS_MAX = 10, 200
TORCH_WINDOWS = 4


def run_reaped(cmd, capture=False):
    """(wall seconds, max RSS in MiB, stdout or None) of one process, reaped
    with wait4 so that ru_maxrss is this child's own peak."""
    t0 = time.perf_counter()
    out_f = tempfile.TemporaryFile(mode="w+") if capture else subprocess.DEVNULL
    err_f = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
    wall = time.perf_counter() - t0
    err_f.seek(0)
    err = err_f.read()
    out = None
    if capture:
        out_f.seek(0)
        out = out_f.read()
    if proc.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (" ".join(cmd), proc.returncode, err[-2000:]))
    return wall, usage.ru_maxrss / 1024.0, out


# ------------------------------------------------------------ PyTorch side

def set_threads_env(threads):
    """The thread count of every BLAS/OpenMP user in this process and its children."""
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)


# PyTorch's thread settings tried at each thread count T > 1 (at T = 1 all
# are 1). Debian's PyTorch runs its own kernels (oneDNN convolutions,
# elementwise, reductions) on an OpenMP pool of torch.set_num_threads(T)
# threads, and its Linear/matmul GEMMs in the pthread OpenBLAS, whose own
# pool has OPENBLAS_NUM_THREADS threads. Both pools spin while they wait, so
# T + T threads on T cores can be much slower than either alone. Each
# candidate: (label, torch.set_num_threads, BLAS threads).
def torch_candidates(threads):
    if threads == 1:
        return [("omp1/blas1", 1, 1)]
    return [("omp%d/blas1" % threads, threads, 1),
            ("omp%d/blas%d" % (threads, threads), threads, threads),
            ("omp1/blas%d" % threads, 1, threads)]


def torch_env(omp, blas):
    """The environment of a PyTorch child with `omp` intra-op threads and
    `blas` BLAS threads (read by OpenMP and OpenBLAS when they load)."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(omp)
    env["OPENBLAS_NUM_THREADS"] = str(blas)
    env["MKL_NUM_THREADS"] = str(blas)
    return env


ZOO_SAMPLES = 512


def is_zoo(model):
    return model.startswith("zoo:")


def zoo_entry(model):
    sys.path.insert(0, os.path.join(ROOT, "tests", "zoo"))
    from models import ZOO
    entries = {z.name: z for z in ZOO}
    name = model[len("zoo:"):]
    if name not in entries:
        raise SystemExit("unknown zoo model %r (known: %s)" % (name, ",".join(entries)))
    return entries[name]


def model_dir(model):
    if is_zoo(model):
        return os.path.join(CACHE, "zoo", model[len("zoo:"):])
    return os.path.join(CACHE, model) if model in LARGE else os.path.join(ROOT, "examples", model)


def export_zoo(model):
    """A zoo model exported (training mode, no constant folding, through
    python/parallax) with ZOO_SAMPLES samples of its data and the
    reference.json inputs list the PyTorch side reads, unless the cache
    has it for this version of tests/zoo/models.py."""
    import hashlib
    d = model_dir(model)
    src = os.path.join(ROOT, "tests", "zoo", "models.py")
    stamp = hashlib.sha256(open(src, "rb").read()).hexdigest()
    ref_path = os.path.join(d, "reference.json")
    if os.path.exists(ref_path) and json.load(open(ref_path)).get("models_py") == stamp:
        return
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import parallax
    entry = zoo_entry(model)
    torch.manual_seed(0)
    net = entry.build()
    inputs = entry.data(np.random.RandomState(1), ZOO_SAMPLES)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    for n, a in inputs:
        np.save(os.path.join(d, "data", n + ".npy"), np.ascontiguousarray(a))
    example = tuple(torch.from_numpy(a[:4].copy()) for _, a in inputs)
    parallax.export_training(net, example, os.path.join(d, "model.onnx"), [n for n, _ in inputs])
    with open(ref_path, "w") as f:
        json.dump({"models_py": stamp, "inputs": [{"name": n} for n, _ in inputs]}, f)


def ensure_model(model):
    """Exports a generated model into bench/.cache unless it is there already."""
    if is_zoo(model):
        # in a child: a parent that imported torch would make every process
        # it starts report torch's memory as its own peak (fork copies it)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--export-zoo", model],
                       check=True)
        return
    if model not in LARGE:
        return
    d = model_dir(model)
    if os.path.exists(os.path.join(d, "reference.json")):
        return
    kind, overrides = LARGE[model]
    cmd = [sys.executable, os.path.join(ROOT, "bench", "large_lm.py"), kind, d]
    for k, v in overrides.items():
        cmd += ["--" + k, str(v)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def build_torch_model(model):
    import torch
    if is_zoo(model):
        torch.manual_seed(0)
        return zoo_entry(model).build()
    if model in LARGE:
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import large_lm
        kind, overrides = LARGE[model]
        net, _ = large_lm.build(kind, overrides)
        return net
    mod = load_module(model)
    classes = [c for _, c in inspect.getmembers(mod, inspect.isclass)
               if issubclass(c, torch.nn.Module) and c.__module__ == mod.__name__
               and c.__name__.endswith("Loss")]
    torch.manual_seed(0)
    return classes[0]()


def load_module(model):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    path = os.path.join(ROOT, "examples", model, "export.py")
    spec = importlib.util.spec_from_file_location("export_" + model, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def torch_child(model, batch, seconds, threads):
    """Runs in its own interpreter, driven over stdin/stdout by TorchPeer: builds
    the model, prints {"idle_max_rss_mib"}, then for each "run" line trains for
    about `seconds` and prints {"steps_per_second"}; "quit" ends it."""
    import resource

    import numpy as np
    import torch
    torch.set_num_threads(threads)
    net = build_torch_model(model).train()
    ref = json.load(open(os.path.join(model_dir(model), "reference.json")))
    arrays = [np.load(os.path.join(model_dir(model), "data", i["name"] + ".npy"))
              for i in ref["inputs"]]
    n = arrays[0].shape[0]
    if batch > n:
        raise SystemExit("batch %d exceeds the %d samples of %s" % (batch, n, model))
    # The program's data order: consecutive batches, wrapping at floor(n/B)*B.
    batches = [[torch.from_numpy(np.ascontiguousarray(a[s:s + batch])) for a in arrays]
               for s in range(0, (n // batch) * batch, batch)]
    idle_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    done = [0]

    def step():
        opt.zero_grad(set_to_none=True)
        loss = net(*batches[done[0] % len(batches)])
        loss.backward()
        opt.step()
        done[0] += 1
    # warm-up: allocator, oneDNN primitives, BLAS buffers, first-touch pages
    t0 = time.perf_counter()
    for k in range(TORCH_WARMUP_STEPS_MAX):
        step()
        if k + 1 >= TORCH_WARMUP_STEPS and time.perf_counter() - t0 >= seconds / 2:
            break
    print(json.dumps({"idle_max_rss_mib": idle_rss}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        # TORCH_WINDOWS windows back to back, about `seconds` in all; the
        # fastest counts (load only ever slows a window down)
        best = 0.0
        for _ in range(TORCH_WINDOWS):
            steps, t0 = 0, time.perf_counter()
            while True:
                step()
                steps += 1
                elapsed = time.perf_counter() - t0
                if elapsed >= seconds / TORCH_WINDOWS and steps >= 5:
                    break
            best = max(best, steps / elapsed)
        print(json.dumps({"steps_per_second": best}), flush=True)


class TorchPeer:
    """One PyTorch interpreter per model, kept alive between timed segments so
    that the repeats interleave with ours without paying the import each time."""

    def __init__(self, model, batch, seconds, candidate):
        self.label, omp, blas = candidate
        cmd = [sys.executable, os.path.abspath(__file__), "--torch-child", model,
               "--batch", str(batch), "--seconds", str(seconds), "--threads", str(omp)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=torch_env(omp, blas))
        self.idle_rss = None

    def wait_ready(self):
        """Waits until the child has built the model and warmed up."""
        self.idle_rss = self._reply()["idle_max_rss_mib"]
        return self

    def _reply(self):
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the PyTorch child ended early (status %s)" % self.proc.wait())
        return json.loads(line)

    def run(self):
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return self._reply()["steps_per_second"]

    def close(self):
        """Ends the child; returns its max RSS in MiB (its own, via wait4)."""
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.proc.stdout.close()
        if self.proc.returncode != 0:
            raise SystemExit("the PyTorch child failed (%d)" % self.proc.returncode)
        return usage.ru_maxrss / 1024.0


def best_torch_peer(model, batch, seconds, threads):
    """PyTorch's fastest thread setting for this model at `threads`: each
    candidate's child is timed twice, by turns, and the one with the best
    run is kept for the measurement (the others end). Returns the peer and
    {label: best steps/s} of every candidate."""
    # started together: their imports and warm-ups overlap
    peers = [TorchPeer(model, batch, seconds, c) for c in torch_candidates(threads)]
    for p in peers:
        p.wait_ready()
    if len(peers) == 1:
        return peers[0], {}
    best = {p.label: 0.0 for p in peers}
    try:
        for _ in range(2):
            for p in peers:
                best[p.label] = max(best[p.label], p.run())
    finally:
        keep = max(peers, key=lambda p: best[p.label])
        for p in peers:
            if p is not keep:
                p.close()
    return keep, best


# ---------------------------------------------------------------- our side

def ours_run(prog, data, steps, threads, stats=None):
    cmd = [prog, "--data", data, "--steps", str(steps), "--threads", str(threads)]
    cmd += ["--stats", stats] if stats else []
    wall, rss, _ = run_reaped(cmd)
    rate = None
    if stats:
        rate = json.load(open(stats)).get("samples_per_second")
    return wall, rss, rate


def bench_model(args, model, work, threads, compiled):
    """One row of the table. compiled: {model: (compile seconds, error or
    None)}, shared by the thread counts."""
    set_threads_env(threads)
    ensure_model(model)
    onnx_path = os.path.join(model_dir(model), "model.onnx")
    data = os.path.join(model_dir(model), "data")
    prog = os.path.join(work, model.replace(":", "_"))
    stats = os.path.join(work, model.replace(":", "_") + ".stats.json")
    # one program per model: --threads is a run-time flag
    if model not in compiled:
        compile_cmd = [args.parallaxc, "compile", onnx_path, "-o", prog, "--batch",
                       str(args.batch), "--optimizer", "sgd", "--lr", str(LR)]
        t0 = time.perf_counter()
        r = subprocess.run(compile_cmd, capture_output=True, text=True)
        error = None
        if r.returncode != 0:  # reported in the table, the other models still run
            lines = [l for l in r.stderr.splitlines() if l.startswith("error")] or [r.stderr.strip()]
            error = lines[0][:150]
        compiled[model] = (time.perf_counter() - t0, error)
    t_compile, error = compiled[model]
    if error:
        return {"model": model, "batch": args.batch, "threads": threads, "error": error}

    # Calibrate N so the long run's steps last about --seconds.
    _, _, rate = ours_run(prog, data, 50, threads, stats)
    n_long = SHORT_STEPS + max(50, int(args.seconds * rate / args.batch))

    peer, tried = best_torch_peer(model, args.batch, args.seconds, threads)
    ours_rates, ours_wall_rates, ours_rss, torch_rates = [], [], [], []
    try:
        for _ in range(args.repeat):  # interleaved: machine drift hits both
            t_long, rss, sps = ours_run(prog, data, n_long, threads, stats)
            if args.wall:
                t_short, _, _ = ours_run(prog, data, SHORT_STEPS, threads)
                ours_wall_rates.append((n_long - SHORT_STEPS) / max(t_long - t_short, 1e-9))
            ours_rates.append(sps / args.batch)
            ours_rss.append(rss)
            torch_rates.append(peer.run())
    finally:
        torch_rss = peer.close()
    row = {
        "model": model,
        "batch": args.batch,
        "threads": threads,
        "steps_long": n_long,
        "ours_steps_per_second": max(ours_rates),
        "ours_wall_steps_per_second":
            statistics.median(ours_wall_rates) if ours_wall_rates else None,
        "torch_steps_per_second": max(torch_rates),
        "torch_setting": peer.label,
        "torch_settings_tried": tried,
        "ours_max_rss_mib": statistics.median(ours_rss),
        "torch_max_rss_mib": torch_rss,
        "torch_idle_max_rss_mib": peer.idle_rss,
        "compile_seconds": t_compile,
        "ours_runs": ours_rates,
        "ours_wall_runs": ours_wall_rates,
        "torch_runs": torch_rates,
    }
    # best against best (see the docstring); and the median of each repeat's
    # ratio from two runs back to back, the figure to read on a loaded machine
    row["speed_ratio"] = row["ours_steps_per_second"] / row["torch_steps_per_second"]
    row["paired_speed_ratio"] = statistics.median(o / t for o, t in zip(ours_rates, torch_rates))
    row["memory_ratio"] = row["torch_max_rss_mib"] / row["ours_max_rss_mib"]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc", nargs="?")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0, help="length of one timed run")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", default="1",
                    help="comma-separated thread counts for both sides; all = every core")
    ap.add_argument("--json", default="train_bench.json", help="where to write the results")
    ap.add_argument("--no-wall", dest="wall", action="store_false",
                    help="skip the (wall) cross-check's short runs (its column shows -)")
    ap.add_argument("--torch-child", help=argparse.SUPPRESS)
    ap.add_argument("--export-zoo", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.export_zoo:
        export_zoo(args.export_zoo)
        return
    if args.torch_child:
        torch_child(args.torch_child, args.batch, args.seconds, int(args.threads))
        return
    if not args.parallaxc:
        ap.error("PARALLAXC is required")
    models = args.models.split(",")
    for m in models:
        if m not in MODELS and not is_zoo(m):
            ap.error("unknown model %r (known: %s, zoo:NAME)" % (m, ",".join(MODELS)))
    try:
        thread_counts = [os.cpu_count() if t == "all" else int(t)
                         for t in args.threads.split(",")]
    except ValueError:
        ap.error("--threads: expected comma-separated counts or 'all', got %r" % args.threads)
    if any(t < 1 for t in thread_counts):
        ap.error("--threads: counts must be >= 1")
    work = tempfile.mkdtemp(prefix="pxbench-train-")
    rows, compiled = [], {}
    try:
        for threads in thread_counts:
            for model in models:
                rows.append(bench_model(args, model, work, threads, compiled))
                print("%s (%d threads) done" % (model, threads), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("training steps/s and peak memory, batch %d, SGD (best of %d runs each)"
          % (args.batch, args.repeat))
    print("%-18s %3s %10s %10s %10s %-11s %7s %7s %9s %9s %10s %7s %9s" % (
        "model", "thr", "ours st/s", "(wall)", "torch st/s", "torch thr", "speed", "paired",
        "ours MiB", "torch MiB", "torch idle", "mem", "compile s"))
    for r in rows:
        if "error" in r:
            print("%-18s %3d  does not compile: %s" % (r["model"], r["threads"], r["error"]))
            continue
        wall = r["ours_wall_steps_per_second"]
        print("%-18s %3d %10.1f %10s %10.1f %-11s %7.2f %7.2f %9.1f %9.1f %10.1f %7.2f %9.2f" % (
            r["model"], r["threads"], r["ours_steps_per_second"],
            "-" if wall is None else "%.1f" % wall, r["torch_steps_per_second"], r["torch_setting"],
            r["speed_ratio"], r["paired_speed_ratio"],
            r["ours_max_rss_mib"], r["torch_max_rss_mib"], r["torch_idle_max_rss_mib"],
            r["memory_ratio"], r["compile_seconds"]))
    print("ours st/s: the best run's --stats steady-state rate; (wall): median whole-process\n"
          "time of a long run minus a %d-step run; torch st/s: its best window (%d a run);\n"
          "torch thr: PyTorch's fastest setting of those tried, its OpenMP threads\n"
          "(torch.set_num_threads) / its BLAS's own threads; speed = ours/torch of those\n"
          "best rates (> 1: we are faster); paired = median of the runs' ratios, each from two\n"
          "runs back to back (the figure to read on a loaded machine);\n"
          "mem = torch/ours max RSS (> 1: we use less); torch idle: the interpreter with the\n"
          "model built, before training" % (SHORT_STEPS, TORCH_WINDOWS))
    with open(args.json, "w") as f:
        json.dump({"batch": args.batch, "repeat": args.repeat, "threads": thread_counts,
                   "optimizer": "sgd",
                   "lr": LR, "models": rows}, f, indent=1)
        f.write("\n")
    print("wrote %s" % args.json)


if __name__ == "__main__":
    main()
