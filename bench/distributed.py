#!/usr/bin/python3
"""Distributed training throughput and traffic at 2 ranks: Parallax's three
synchronisation modes (--comm hybrid | allreduce | ps) against PyTorch
DistributedDataParallel (gloo) with dense and with sparse embedding
gradients, on the same model, per-rank batch, optimizer (SGD, lr 0.05) and
data order, one thread per rank, measured in the same run.

usage: bench/distributed.py PARALLAXC [--batch 64] [--seconds 1.0] [--repeat 5]
           [--models lstm_lm,recommender,recommender_large] [--configs ...]
           [--json FILE] [--quick]

Models: examples/lstm_lm, examples/recommender and recommender_large (the
recommender with a 1,000,000-row item table and a 100,000-row user table),
which examples/recommender_large/export.py generates into bench/.cache/
(again only when that script changes).

Parallax: `parallaxc compile --batch B --optimizer sgd --lr 0.05 --comm MODE`,
run as `mpirun -np 2 --bind-to core PROGRAM --steps W+S --warmup-steps W
--stats FILE`: samples/s and bytes per rank per step by kind come from
--stats (warm-up excluded; bytes are what each rank handed to MPI).
PyTorch: two persistent worker processes (this script, pinned one to a core
as mpirun binds its ranks), gloo; each run builds the model from the
example's export.py (same seed, so the same initial weights as the ONNX
file), wraps it in DDP and trains with torch.optim.SGD, nn.Embedding
sparse=False or sparse=True; samples/s over S steps after W, timed between
barriers on rank 0. Both follow Parallax's data order (step s takes the
global batch at (s*2B) mod (floor(n/2B)*2B), rank r rows [rB, (r+1)B) of it).

Steps: the configurations run at 0.3 ms to 4 s a step, so one step count
for all would time either microseconds or minutes. Each configuration gets
a probe (2 warm-up + 4 steps), then a warm-up of one epoch (at least
--warmup steps: every row the data uses has been touched once, so one-off
first-touch costs are out) and S timed steps, S from a calibration run so
that a run times about --seconds. A configuration too slow for that (dense
DDP on the 1M-row table, seconds a step) keeps its probe as its one
measurement. The probes all train the same 6 steps from the same weights:
their final losses must agree (checked: the peers are the same training).
Also reported: hybrid over its first epoch with 2 warm-up steps.

Every configuration then runs --repeat times, interleaved (machine drift
hits all of them), and medians are reported. Ratios: hybrid / the better DDP
variant, hybrid / allreduce, hybrid / ps (> 1: hybrid is faster). Other
processes on the machine disturb the numbers: the load average is printed.

Sparse traffic: the minimum is computed here from the data for the steps
hybrid counted. Each rank needs the distinct rows its batch touches (per
sparse variable; a variable read by several inputs counts the union),
pulled once and their gradients pushed once. On one machine both ranks are
on one node and the parameter-server shard is the node leader (rank 0), so
only rank 1's rows cross between processes: minimum = U1 * row_bytes pulled
+ U1 * row_bytes pushed per step ("min wire"). "min all-remote" = the same
for the distinct rows of every rank (what a shard on another machine would
see). Measured sparse bytes = ps_pull + ps_push sent, summed over ranks (in
ps mode this includes the dense variables, so the ratio is for hybrid).
"""
import argparse
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

if __name__ == "__main__":
    # This benchmark's processes and the programs it starts take one
    # BLAS/OpenMP thread each (its two ranks are pinned to one core each);
    # a script that imports it (bench/cluster/bench.py) keeps its own.
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# PX_BENCH_CACHE: where generated models live (a machine that runs prebuilt
# programs keeps them where the programs were compiled against them).
CACHE = os.environ.get("PX_BENCH_CACHE") or os.path.join(ROOT, "bench", ".cache")
# PX_PYTHON: the interpreter with torch for export scripts and DDP workers.
PYTHON = os.environ.get("PX_PYTHON") or "/usr/bin/python3"
MODELS = ("lstm_lm", "recommender", "recommender_large")
MODES = ("hybrid", "allreduce", "ps")
DDP_VARIANTS = ("ddp_dense", "ddp_sparse")
LR = 0.05
# Ops an index tensor may pass through between a graph input and the Gather
# without changing which rows it names.
INDEX_RESHAPES = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}


# ---------------------------------------------------------------- models

# Benchmark-sized variants of an example: NAME_large is examples/NAME/export.py
# run with an output folder (its LARGE configuration), e.g. lm1b_large: the
# LM1B-like model with a 100k vocabulary.
def example_of(model):
    base = model[:-len("_large")] if model.endswith("_large") else model
    if not os.path.exists(os.path.join(ROOT, "examples", model)) and \
            os.path.exists(os.path.join(ROOT, "examples", base, "export.py")):
        return base
    return model


def export_script(model):
    return os.path.join(ROOT, "examples", example_of(model), "export.py")


def model_dir(model):
    """Folder with model.onnx and data/; generated for recommender_large."""
    if model != "recommender_large":
        return os.path.join(ROOT, "examples", model)
    return generated_model_dir(model)


def generated_model_dir(model):
    """bench/.cache/<model>: what examples/<model>/export.py writes there,
    regenerated when the script changes."""
    out = os.path.join(CACHE, model)
    script = export_script(model)
    stamp = hashlib.sha256(open(script, "rb").read()).hexdigest()
    stamp_file = os.path.join(out, "export.sha256")
    if not (os.path.exists(stamp_file) and open(stamp_file).read().strip() == stamp
            and os.path.exists(os.path.join(out, "model.onnx"))):
        print("generating %s into %s ..." % (model, out), flush=True)
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([PYTHON, script, out], check=True)
        with open(stamp_file, "w") as f:
            f.write(stamp + "\n")
    return out


def input_names(mdir):
    return [i["name"] for i in json.load(open(os.path.join(mdir, "reference.json")))["inputs"]]


def load_arrays(mdir):
    return {n: np.load(os.path.join(mdir, "data", n + ".npy")) for n in input_names(mdir)}


def inspect_model(parallaxc, onnx_path, batch):
    out = subprocess.run([parallaxc, "inspect", onnx_path, "--batch", str(batch), "--ranks", "2",
                          "--format", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def sparse_inputs(info, inputs):
    """{sparse variable: [graph inputs whose values index it]}, traced
    through the folded graph; fails on index arithmetic it cannot follow."""
    producer = {o: n for n in info["nodes"] for o in n["outputs"]}
    sparse = {v["name"]: v for v in info["variables"] if v["class"] == "sparse"}
    found = {name: [] for name in sparse}
    for node in info["nodes"]:
        if node["op"] != "Gather" or node["inputs"][0] not in sparse:
            continue
        value = node["inputs"][1]
        while value not in inputs:
            src = producer.get(value)
            if src is None or src["op"] not in INDEX_RESHAPES:
                raise SystemExit("cannot trace the indices of %s back to an input" % node["name"])
            value = src["inputs"][0]
        found[node["inputs"][0]].append(value)
    return {name: (sparse[name], sorted(set(src))) for name, src in found.items()}


# ---------------------------------------------------------------- data order

def step_rows(n_samples, batch, ranks, step, rank):
    """Sample rows rank `rank` trains on at `step` (design.md §3, no shuffle)."""
    global_batch = batch * ranks
    start = (step * global_batch) % ((n_samples // global_batch) * global_batch)
    return slice(start + rank * batch, start + (rank + 1) * batch)


def minimum_sparse_bytes(arrays, sparse, batch, ranks, steps, warmup):
    """Per counted step, averaged: distinct rows per rank and variable times
    row bytes, both ways. Returns (min_wire, min_all_remote, detail)."""
    n = len(next(iter(arrays.values())))
    wire = remote = 0.0
    detail = {}
    for name, (var, srcs) in sparse.items():
        row_bytes = var["bytes"] // var["shape"][0]
        per_rank = np.zeros(ranks)
        for s in range(warmup, steps):
            for r in range(ranks):
                rows = step_rows(n, batch, ranks, s, r)
                ids = np.concatenate([arrays[src][rows].ravel() for src in srcs])
                per_rank[r] += len(np.unique(ids))
        per_rank /= steps - warmup
        detail[name] = {"row_bytes": row_bytes, "distinct_rows_per_rank": per_rank.tolist()}
        wire += 2 * row_bytes * per_rank[1:].sum()  # the shard lives on rank 0
        remote += 2 * row_bytes * per_rank.sum()
    return wire, remote, detail


# ---------------------------------------------------------------- Parallax

def compile_program(parallaxc, onnx_path, batch, mode, out):
    cmd = [parallaxc, "compile", onnx_path, "-o", out, "--batch", str(batch),
           "--optimizer", "sgd", "--lr", str(LR), "--comm", mode]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def run_parallax(prog, data, steps, warmup, work):
    stats = os.path.join(work, "stats.json")
    if os.path.exists(stats):
        os.remove(stats)
    losses = os.path.join(work, "losses.csv")
    cmd = ["mpirun", "--allow-run-as-root", "-np", "2", "--bind-to", "core", prog,
           "--data", data, "--steps", str(steps), "--warmup-steps", str(warmup),
           "--log-every", "0", "--stats", stats, "--losses", losses]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    st = json.load(open(stats))
    last_loss = float(open(losses).read().split()[-1].split(",")[1])
    return {"samples_per_second": st["samples_per_second"], "counted_seconds": st["counted_seconds"],
            "last_loss": last_loss,
            "sent": [r["bytes_sent_per_step"] for r in st["ranks"]],
            "received": [r["bytes_received_per_step"] for r in st["ranks"]],
            "stats": st}


# ---------------------------------------------------------------- PyTorch DDP

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DdpWorkers:
    """Two persistent worker processes of this script (rank 0 and 1, one
    gloo process group): started once, since importing torch and joining the
    group costs seconds; each run() builds a fresh model, DDP and optimizer
    in both and returns rank 0's measurement."""

    def __init__(self, procs=None):
        """procs: worker processes started elsewhere (bench/cluster/bench.py
        starts one per namespace) that speak the same one-line JSON protocol."""
        if procs is not None:
            self.procs = procs
            return
        port = str(free_port())
        self.procs = [subprocess.Popen([PYTHON, os.path.abspath(__file__), "--ddp-worker",
                                        str(rank), port],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                      for rank in range(2)]

    def run(self, model, mdir, sparse, batch, steps, warmup, hook=None):
        """hook: None, or "fp16": PyTorch's own fp16 compression of the
        gradient buckets (ddp_comm_hooks.default_hooks.fp16_compress_hook;
        dense gradients only)."""
        cmd = json.dumps({"model": model, "dir": mdir, "sparse": sparse, "batch": batch,
                          "steps": steps, "warmup": warmup, "hook": hook})
        for p in self.procs:
            p.stdin.write(cmd + "\n")
            p.stdin.flush()
        replies = [p.stdout.readline() for p in self.procs]
        if not all(replies):
            raise SystemExit("a DDP worker died running %s" % model)
        return json.loads(replies[0])

    def close(self):
        for p in self.procs:
            p.stdin.close()
        for p in self.procs:
            p.wait()


def torch_model_class(model):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    spec = importlib.util.spec_from_file_location("export_" + model, export_script(model))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import torch
    classes = [c for _, c in inspect.getmembers(mod, inspect.isclass)
               if issubclass(c, torch.nn.Module) and c.__module__ == mod.__name__
               and c.__name__.endswith("Loss")]
    if len(classes) != 1:
        raise SystemExit("cannot find the model class in %s" % mod.__file__)
    cls = classes[0]
    if example_of(model) != model and hasattr(mod, "LARGE"):
        # the LARGE configuration export.py OUT_DIR writes (constructor args only)
        params = inspect.signature(cls.__init__).parameters
        kwargs = {k: v for k, v in mod.LARGE.items() if k in params}
        return lambda: cls(**kwargs)
    return cls


def ddp_worker(rank, port):
    """Runs the commands (JSON lines) read from stdin; prints one JSON line each."""
    world = 2
    os.sched_setaffinity(0, {rank % os.cpu_count()})  # mpirun binds its ranks the same way
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank,
                            world_size=world)
    classes, datasets = {}, {}
    for line in sys.stdin:
        cfg = json.loads(line)
        if cfg["model"] not in classes:
            classes[cfg["model"]] = torch_model_class(cfg["model"])
            datasets[cfg["model"]] = (load_arrays(cfg["dir"]), input_names(cfg["dir"]))
        arrays, names = datasets[cfg["model"]]
        result = ddp_train(rank, world, classes[cfg["model"]], arrays, names, cfg)
        print(json.dumps(result), flush=True)
    dist.destroy_process_group()


def ddp_train(rank, world, model_class, arrays, names, cfg):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    net = model_class()
    for m in net.modules():
        if isinstance(m, torch.nn.Embedding):
            m.sparse = cfg["sparse"]
    net.train()
    ddp = DDP(net)
    if cfg.get("hook") == "fp16":
        # DDP's comm hooks take dense buckets only: a sparse embedding
        # gradient would fail in the hook.
        if cfg["sparse"]:
            raise SystemExit("DDP's fp16 compress hook wants dense gradients (sparse=False)")
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif cfg.get("hook"):
        raise SystemExit("unknown DDP comm hook %s" % cfg["hook"])
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    n = len(arrays[names[0]])
    batch, steps, warmup = cfg["batch"], cfg["steps"], cfg["warmup"]

    def step(s):
        rows = step_rows(n, batch, world, s, rank)
        loss = ddp(*[torch.from_numpy(arrays[k][rows]) for k in names])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss)

    for s in range(warmup):
        step(s)
    dist.barrier()
    t0 = time.perf_counter()
    for s in range(warmup, steps):
        loss = step(s)
    dist.barrier()
    seconds = time.perf_counter() - t0
    mean_loss = torch.tensor([loss], dtype=torch.float64)  # what Parallax logs: the mean over ranks
    dist.all_reduce(mean_loss)
    return {"samples_per_second": (steps - warmup) * batch * world / seconds,
            "counted_seconds": seconds, "last_loss": float(mean_loss[0]) / world}


# ---------------------------------------------------------------- report

def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_bytes(b):
    if b != b:
        return "-"
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return "%.1f %s" % (b / scale, unit)
    return "%.0f B" % b


class Bench:
    """One model's five configurations: how to run each, and the plan
    (warm-up, timed steps) each gets."""

    def __init__(self, args, workers, parallaxc, work, model, configs):
        self.args, self.workers, self.model, self.configs = args, workers, model, configs
        self.mdir = model_dir(model)
        self.onnx = os.path.join(self.mdir, "model.onnx")
        self.arrays = load_arrays(self.mdir)
        n = len(next(iter(self.arrays.values())))
        self.epoch_steps = n // (2 * args.batch)
        self.progs, self.compile_seconds = {}, {}
        for mode in [c for c in configs if c in MODES]:
            self.progs[mode] = os.path.join(work, "%s-%s" % (model, mode))
            self.compile_seconds[mode] = compile_program(parallaxc, self.onnx, args.batch, mode,
                                                         self.progs[mode])

    def run(self, config, warmup, timed):
        t0 = time.perf_counter()
        if config in MODES:
            r = run_parallax(self.progs[config], os.path.join(self.mdir, "data"), warmup + timed,
                             warmup, os.path.dirname(self.progs[config]))
        else:
            r = self.workers.run(self.model, self.mdir, config == "ddp_sparse", self.args.batch,
                                 warmup + timed, warmup)
        r.update(warmup=warmup, timed_steps=timed, wall_seconds=time.perf_counter() - t0,
                 step_seconds=r["counted_seconds"] / timed)
        return r

    def plan(self, config):
        """(warmup, timed steps, the run to keep or None, the probe).

        A probe (2 + 4 steps) finds configurations too slow for a full
        warm-up (dense gradients of a 1M-row table): the probe is their one
        measurement. The others warm up for an epoch (at least --warmup
        steps): a program that touches a table page only when a step first
        reads or writes a row on it pays page faults (~1 s on the 1M-row
        table on this VM, seen with an earlier runtime) that a steady-state
        rate must leave out; after one epoch (no shuffle) every row the data
        uses has been touched. A calibration run then sets the timed steps
        so that a run times about --seconds."""
        a = self.args
        probe = self.run(config, 2, 4)
        warmup = max(a.warmup, self.epoch_steps)
        if probe["step_seconds"] * (warmup + a.min_steps) > a.slow:
            return 2, 4, probe, probe
        cal = self.run(config, warmup, a.min_steps)
        timed = int(min(max(a.seconds / cal["step_seconds"], a.min_steps), a.max_steps))
        return warmup, timed, None, probe


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--ddp-worker":
        ddp_worker(int(sys.argv[2]), sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc")
    ap.add_argument("--batch", type=int, default=64, help="per-rank batch")
    ap.add_argument("--seconds", type=float, default=1.0, help="timed seconds per run (about)")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up steps, at least (see plan)")
    ap.add_argument("--min-steps", type=int, default=20)
    ap.add_argument("--max-steps", type=int, default=20000)
    ap.add_argument("--slow", type=float, default=12.0,
                    help="a configuration whose warm-up and --min-steps would take longer (s) "
                         "gets one short run")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--configs", default=",".join(MODES + DDP_VARIANTS),
                    help="subset of " + ",".join(MODES + DDP_VARIANTS))
    ap.add_argument("--json", help="write every measurement to this file")
    ap.add_argument("--quick", action="store_true", help="smoke run: 0.2 s runs, 1 repeat")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.repeat, args.min_steps = 0.2, 1, 10
    parallaxc = os.path.abspath(args.parallaxc)
    configs = [c for c in MODES + DDP_VARIANTS if c in args.configs.split(",")]
    work = tempfile.mkdtemp(prefix="pxdist-")
    results = {"batch_per_rank": args.batch, "ranks": 2, "seconds_per_run": args.seconds,
               "repeat": args.repeat, "loadavg_before": os.getloadavg(), "models": {}}
    t_start = time.perf_counter()
    workers = DdpWorkers()
    try:
        for model in args.models.split(","):
            b = Bench(args, workers, parallaxc, work, model, configs)
            info = inspect_model(parallaxc, b.onnx, args.batch)
            sparse = sparse_inputs(info, set(b.arrays))
            plans, runs, probe_loss = {}, {}, {}
            for c in configs:
                warmup, timed, kept, probe = b.plan(c)
                plans[c] = {"warmup": warmup, "timed_steps": timed, "one_run": kept is not None}
                runs[c] = [kept] if kept else []
                probe_loss[c] = probe["last_loss"]
            # Every probe trained the same 6 steps from the same weights: the
            # mean loss after them must agree, or the peers are not the same
            # training (model, data order, optimizer).
            ref = probe_loss[configs[0]]
            same = all(abs(x - ref) <= 1e-4 * max(1.0, abs(ref)) for x in probe_loss.values())
            if not same:
                print("warning: %s: the configurations disagree on the loss after 6 steps: %s"
                      % (model, probe_loss), flush=True)
            cold = None
            if "hybrid" in configs:  # the first epoch, first-touch page faults included
                cold = b.run("hybrid", 2, max(b.epoch_steps, args.min_steps))
            for rep in range(args.repeat):  # interleaved: machine drift hits all
                for c in configs:
                    if not plans[c]["one_run"]:
                        runs[c].append(b.run(c, plans[c]["warmup"], plans[c]["timed_steps"]))
                print("%s: repeat %d/%d done (%.0f s)" % (model, rep + 1, args.repeat,
                                                          time.perf_counter() - t_start), flush=True)
            m = {"sparse_variables": {k: v[1] for k, v in sparse.items()},
                 "compile_seconds": b.compile_seconds, "steps_per_epoch": b.epoch_steps,
                 "plans": plans, "loss_after_6_steps": probe_loss, "same_training": same,
                 "hybrid_first_epoch": cold,
                 "predicted_bytes_per_step": info.get("predicted_bytes_per_step"),
                 "samples_per_second": {c: median([r["samples_per_second"] for r in runs[c]])
                                        for c in runs},
                 "runs": {c: [{k: v for k, v in r.items() if k != "stats"} for r in runs[c]]
                          for c in runs},
                 "bytes_per_step": {}}
            # The minimum for the steps hybrid counted (the same rows each
            # rank of Parallax trained on in those steps).
            p = plans.get("hybrid", plans[configs[0]])
            wire, remote, detail = minimum_sparse_bytes(b.arrays, sparse, args.batch, 2,
                                                        p["warmup"] + p["timed_steps"], p["warmup"])
            m.update(min_sparse_bytes_wire=wire, min_sparse_bytes_all_remote=remote,
                     distinct_rows=detail)
            if "hybrid" in configs and runs["hybrid"][-1]["sent"][0]["ps_push"]:
                print("warning: rank 0 pushed rows: the shard is not (only) on rank 0, so "
                      "'min wire' does not apply", flush=True)
            for mode in [c for c in configs if c in MODES]:
                last = runs[mode][-1]  # traffic is deterministic: any repeat
                sent = sum(r["ps_pull"] + r["ps_push"] for r in last["sent"])
                m["bytes_per_step"][mode] = {"sent": last["sent"], "received": last["received"],
                                             "sparse_sent_all_ranks": sent}
            results["models"][model] = m
    finally:
        workers.close()
        shutil.rmtree(work, ignore_errors=True)
    results["seconds"] = time.perf_counter() - t_start
    results["loadavg_after"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    report(results)


def ratio(a, b):
    return a / b if a == a and b == b and b else float("nan")  # NaN: not measured


def report(res):
    nan = float("nan")
    print()
    print("2 ranks x 1 thread, batch %d per rank, SGD, ~%.1f s timed per run, median of %d "
          "(whole bench %.0f s; load average before/after %.1f/%.1f)"
          % (res["batch_per_rank"], res["seconds_per_run"], res["repeat"], res["seconds"],
             res["loadavg_before"][0], res["loadavg_after"][0]))
    cols = MODES + DDP_VARIANTS
    print("%-18s" % "samples/s" + "".join("%11s" % c for c in cols)
          + "%13s%12s%9s" % ("hyb/bestDDP", "hyb/allred", "hyb/ps"))
    for model, m in res["models"].items():
        sps = {c: m["samples_per_second"].get(c, nan) for c in cols}
        best_ddp = max((sps[c] for c in DDP_VARIANTS if sps[c] == sps[c]), default=nan)
        print("%-18s" % model + "".join("%11.0f" % sps[c] for c in cols)
              + "%13.2f%12.2f%9.2f" % (ratio(sps["hybrid"], best_ddp),
                                       ratio(sps["hybrid"], sps["allreduce"]),
                                       ratio(sps["hybrid"], sps["ps"])))
    print("warm-up + timed steps per run")
    for model, m in res["models"].items():
        print("%-18s" % model + "".join(
            "%11s" % ("%d+%d%s" % (m["plans"][c]["warmup"], m["plans"][c]["timed_steps"],
                                   "*" if m["plans"][c]["one_run"] else "")
                      if c in m["plans"] else "-") for c in cols))
    if any(p["one_run"] for m in res["models"].values() for p in m["plans"].values()):
        print("  *: too slow for a full warm-up; one short run")
    print("hybrid over the first epoch (2 warm-up steps; first touch of the tables included):")
    for model, m in res["models"].items():
        cold = m.get("hybrid_first_epoch")
        if cold:
            print("  %-18s %9.0f samples/s over %d steps (steady: %.0f)"
                  % (model, cold["samples_per_second"], cold["timed_steps"],
                     m["samples_per_second"]["hybrid"]))
    print("mean loss after 6 steps, every configuration: " + ", ".join(
        "%s %s" % (model, "%.6f, the same" % next(iter(m["loss_after_6_steps"].values()))
                   if m["same_training"] else "DIFFERENT %s" % m["loss_after_6_steps"])
        for model, m in res["models"].items()))
    if not any(m["bytes_per_step"] for m in res["models"].values()):
        return
    print()
    print("bytes sent per step, rank 0 / rank 1, by kind")
    print("%-18s %-10s %21s %21s %21s %21s" % ("model", "mode", "allreduce", "ps_pull", "ps_push", "other"))
    for model, m in res["models"].items():
        for mode, b in m["bytes_per_step"].items():
            print("%-18s %-10s" % (model, mode) + "".join(
                " %21s" % ("%s / %s" % (fmt_bytes(b["sent"][0][k]), fmt_bytes(b["sent"][1][k])))
                for k in ("allreduce", "ps_pull", "ps_push", "other")))
    print()
    print("sparse traffic per step, both ranks: ps_pull + ps_push sent, against the minimum")
    print("%-18s %12s %12s %14s %9s %14s" % ("model", "hybrid", "min wire", "min all-remote",
                                             "hyb/min", "ps (+dense)"))
    for model, m in res["models"].items():
        hyb = m["bytes_per_step"].get("hybrid", {}).get("sparse_sent_all_ranks", nan)
        ps = m["bytes_per_step"].get("ps", {}).get("sparse_sent_all_ranks", nan)
        wire = m["min_sparse_bytes_wire"]
        print("%-18s %12s %12s %14s %9.3f %14s" % (model, fmt_bytes(hyb), fmt_bytes(wire),
                                                   fmt_bytes(m["min_sparse_bytes_all_remote"]),
                                                   ratio(hyb, wire), fmt_bytes(ps)))


if __name__ == "__main__":
    main()
