#!/usr/bin/python3
"""When to split: data parallelism against tensor (--tp) and pipeline (--pp)
parallelism on the simulated cluster, measured side by side, against what
`parallaxc plan --layouts` predicts for each, and whether the plan picks
the layout that measures fastest.

usage: bench/cluster/run.sh --hosts 2 --script bench/cluster/when_to_split.py -- PARALLAXC
           [--cases wide,narrow] [--seconds 8] [--warmup 3] [--repeat 3] [--json FILE]

Two MLPs (tests/tools/deep_mlp.py: Gemm + Relu layers, softmax
cross-entropy), random data, momentum SGD:
  wide    256-4096-256-10 at 16 samples per rank: dense-heavy, 2.1 M weights
          (8.4 MB) against 16 x 256 activations at the layer boundaries, so
          data parallelism's AllReduce of every weight costs more than the
          compute, while --tp 2 exchanges only a group sum of activations;
  narrow  128-128-128-128-128-10 at 512 samples per rank: 67 k weights,
          large activations: the AllReduce is cheap and the group sums
          (--tp) and the stage transfers plus the bubble (--pp) cost more.
Every layout of the plan (data parallel, --tp 2, --pp 2 --micro-batches M
on 2 hosts) is compiled with the flags the plan gives (the batch of a
group: tp x pp x the per-rank batch, so all train on the same global batch
and give the same numbers) and run under mpirun across the hosts, one rank
a host and one thread a rank, warm-up excluded, each about --seconds long;
--repeat rounds over the layouts, interleaved, the median kept.

Predicted, twice, `parallaxc plan MODEL --layouts --hosts H --link RATE
--cores C` (C: the machine's cores over the hosts, at least 1):
  shared  --step-seconds T, T the compute-only step of H single-rank copies
          of the data-parallel program run at once (they share the cores as
          the cluster's ranks do), measured in each round, median;
  alone   --data DIR --recalibrate: the plan's own calibration, one rank
          alone on the machine.
The load average is printed before and after: other processes on the
machine slow the ranks and the links' kernel work alike.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (cluster description, mpirun command line, compute-only runs)

CASES = {
    "wide": {"widths": "256,4096,256,10", "batch": 16,
             "what": "dense-heavy: 2.1 M weights, 16 x 256 activations per rank"},
    "narrow": {"widths": "128,128,128,128,128,10", "batch": 512,
               "what": "light: 67 k weights, 512 x 128 activations per rank"},
}
TRAIN = ["--optimizer", "momentum", "--lr", "0.01"]


def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


def make_case(name, case, work):
    d = os.path.join(work, name)
    os.makedirs(os.path.join(d, "data"))
    model = os.path.join(d, "model.onnx")
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests", "tools", "deep_mlp.py"), model,
                    case["widths"]], check=True)
    widths = [int(w) for w in case["widths"].split(",")]
    import numpy as np
    rng = np.random.RandomState(0)
    n = 8 * 4 * case["batch"]  # 8 global batches of up to 4 ranks
    np.save(os.path.join(d, "data", "x.npy"), rng.rand(n, widths[0]).astype(np.float32))
    np.save(os.path.join(d, "data", "y.npy"), rng.randint(0, widths[-1], size=n).astype(np.int64))
    return model, os.path.join(d, "data")


def plan(args, model, data, batch, hosts, cores, rate, step_seconds=None):
    cmd = [args.parallaxc, "plan", model, "--batch", str(batch), "--hosts", str(hosts), "--link",
           rate, "--cores", "%.6g" % cores, "--layouts", "--format", "json"] + TRAIN
    cmd += ["--step-seconds", "%.6g" % step_seconds] if step_seconds else [
        "--data", data, "--recalibrate"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_layout(cl, hosts, prog, data, steps, warmup, work):
    stats = os.path.join(work, "stats.json")
    if os.path.exists(stats):
        os.remove(stats)
    cmd = bench.mpirun_cmd(cl, hosts, work) + [
        prog, "--data", data, "--steps", str(warmup + steps), "--warmup-steps", str(warmup),
        "--log-every", "0", "--stats", stats, "--threads", "1"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.load(open(stats))


def bench_case(args, cl, name, case, work, results):
    hosts = cl["n"]
    cores = max(1.0, len(os.sched_getaffinity(0)) / hosts)
    model, data = make_case(name, case, work)
    b = case["batch"]
    base = plan(args, model, data, b, hosts, cores, cl["rate"], step_seconds=1.0)
    layouts = [l for l in base["layouts"] if l["predicted"]]
    progs = {}
    for l in layouts:
        prog = os.path.join(work, name, "prog-%d-%d" % (l["tp"], l["pp"]))
        r = subprocess.run([args.parallaxc, "compile", model, "-o", prog]
                           + l["compile_flags"].split() + TRAIN, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("compile %s: %s" % (l["compile_flags"], r.stderr[-2000:]))
        progs[l["name"]] = prog
    dp = progs["data parallel"]
    probe = bench.compute_only(hosts, dp, data, args.warmup, 20, work, 1)
    first = plan(args, model, data, b, hosts, cores, cl["rate"], step_seconds=probe)
    steps = {l["name"]: max(10, int(args.seconds / l["step_seconds"]))
             for l in first["layouts"] if l["predicted"]}
    rates = {n: [] for n in progs}
    computes = []
    for _ in range(args.repeat):
        computes.append(bench.compute_only(hosts, dp, data, args.warmup, steps["data parallel"],
                                           work, 1))
        for n, prog in progs.items():
            st = run_layout(cl, hosts, prog, data, steps[n], args.warmup, work)
            rates[n].append(st["samples_per_second"])
    compute = median(computes)
    shared = plan(args, model, data, b, hosts, cores, cl["rate"], step_seconds=compute)
    alone = plan(args, model, data, b, hosts, cores, cl["rate"])
    ps = {l["name"]: l for l in shared["layouts"] if l["predicted"]}
    pa = {l["name"]: l for l in alone["layouts"] if l["predicted"]}
    measured = {n: median(r) for n, r in rates.items()}
    dp_m, dp_s = measured["data parallel"], ps["data parallel"]["samples_per_second"]
    print("\n%s: %s, %s per rank x %d hosts (global batch %d), links %s, 1 thread a rank"
          % (name, case["widths"], b, hosts, b * hosts, cl["rate"]))
    print("  (%s; compute-only step %.2f ms shared, %.2f ms alone)"
          % (case["what"], 1e3 * compute, 1e3 * alone["compute_seconds_per_step"]))
    print("  %-28s %10s %10s %6s %10s %6s %9s %9s   %s" % (
        "layout", "measured", "shared", "ratio", "alone", "ratio", "vs DP", "pred. vs DP", "runs"))
    for n in progs:
        m, s, a = measured[n], ps[n]["samples_per_second"], pa[n]["samples_per_second"]
        print("  %-28s %10.1f %10.1f %6.2f %10.1f %6.2f %8.2fx %10.2fx   %s" % (
            n, m, s, s / m, a, a / m, m / dp_m, s / dp_s,
            " ".join("%.0f" % r for r in sorted(rates[n]))))
        results["points"].append({"case": name, "layout": n, "measured": m, "runs": rates[n],
                                  "predicted_shared": s, "predicted_alone": a,
                                  "steps": steps[n], "measured_vs_dp": m / dp_m,
                                  "predicted_vs_dp": s / dp_s, "shared": ps[n], "alone": pa[n]})
    best = max(measured, key=measured.get)
    split_best = max((n for n in measured if n != "data parallel"), key=measured.get)
    for label, p in (("shared", shared), ("alone", alone)):
        pick = p["fastest_layout"]
        print("  plan (%s) picks '%s'; measured fastest '%s': %s" % (
            label, pick, best, "right" if pick == best else "WRONG"))
        results["picks"].append({"case": name, "plan": label, "picked": pick, "measured_best": best,
                                 "right": pick == best})
    print("  best split layout '%s' measures %.2fx data parallelism: it %s" % (
        split_best, measured[split_best] / dp_m,
        "wins" if measured[split_best] > dp_m else "loses"))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc")
    ap.add_argument("--cases", default="wide,narrow")
    ap.add_argument("--seconds", type=float, default=8, help="predicted length of each run")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    cases = args.cases.split(",")
    bad = [c for c in cases if c not in CASES]
    if bad:
        ap.error("--cases: unknown %s (known: %s)" % (",".join(bad), ",".join(CASES)))
    cl = bench.cluster()
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    work = tempfile.mkdtemp(prefix="pxsplit.")
    results = {"rate": cl["rate"], "hosts": cl["n"], "points": [], "picks": [],
               "load_before": os.getloadavg()}
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    try:
        for c in cases:
            bench_case(args, cl, c, CASES[c], work, results)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["load_after"] = os.getloadavg()
    print("\nload average after: %.2f %.2f %.2f" % os.getloadavg())
    right = sum(p["right"] for p in results["picks"])
    print("the plan picked the measured winner in %d of %d predictions" % (right, len(results["picks"])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
