#!/usr/bin/python3
"""`parallaxc plan`'s predictions against measured runs on the simulated
cluster, and the relaxed settings' throughput and convergence side by side.

usage: bench/cluster/run.sh --hosts 4 --script bench/cluster/plan_check.py -- PARALLAXC
           [--model lm1b] [--batch 32] [--hosts-list 1,2,4] [--steps 300] [--warmup 5]
           [--repeat 3]
           [--settings "hybrid|hybrid --wire bf16|hybrid --sync-every 4|..."]
           [--cores-per-host C] [--ddp dense,sparse,fp16] [--ddp-steps 60]
           [--convergence-steps 0 [--convergence-only]] [--json FILE] [--svg FILE]
       bench/cluster/plan_check.py - --svg FILE --svg-from JSON   (redraw, no cluster)

Runs inside the cluster bench/cluster/run.sh sets up (PX_CLUSTER_* in the
environment), one rank per host, per-rank batch --batch, SGD lr 0.05.
For every setting ("MODE [RUN FLAGS]": MODE is the compile's --comm, the
rest the program's flags: --wire, --sync-every, --staleness) and every
host count H of --hosts-list:
  - measured: the program under mpirun across H hosts, --warmup + --steps
    steps, samples/s from its --stats (warm-up excluded), with --threads T
    (T printed: the cores the hosts share, divided among them, at least 1);
    --repeat rounds over the settings, interleaved, the median kept;
  - compute-only: H single-rank copies of the first setting's program at
    once (no network), sharing the cores as the cluster's ranks do, once
    per round, median kept;
  - PyTorch DDP (--ddp: dense, sparse, and dense with PyTorch's
    fp16_compress_hook) in the same rounds, --ddp-steps timed steps;
  - predicted, twice: `parallaxc plan MODEL --batch B --hosts H --link
    RATE --cores C --data DIR` (C: --cores-per-host, default this
    machine's cores divided by H, since the simulated hosts share them),
    "alone" with the plan's calibration (measured again in this run:
    --recalibrate), "shared" with --step-seconds set to the compute-only
    step (the data still gives the rows), for the same setting at H hosts.
It prints predicted against measured and their ratio (the issue's bound:
within 25%), each rank's CPU seconds per step and its communication
thread's (--stats), every setting against the best DDP, and, per host
count, whether each plan's recommendation is within 10% of the best
measured setting. The plan predicts --staleness S
from the rows it replays from the data (run plan with --staleness S; the
settings here use S = 2, the plan's default).

--convergence-steps N (0: off): each setting at the largest host count for N
steps; the mean loss of the last 50 steps against exact training's (the
first setting), relative, and whether it is within its bound (1%; 3% for
--sync-every). --convergence-only skips the throughput part, e.g.
  run.sh --hosts 4 --script bench/cluster/plan_check.py -- PARALLAXC --hosts-list 4
      --convergence-only --convergence-steps 500
      --settings "hybrid|hybrid --wire bf16|hybrid --staleness 2|hybrid --sync-every 4"

The machine has few cores: above them compute is oversubscribed and the
communication's CPU work competes with it; other processes disturb the
numbers. The figures are for this machine, with the threads printed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (cluster description, mpirun command line, model folders)


def parse_setting(text):
    words = text.split()
    if not words or words[0] not in ("hybrid", "allreduce", "ps", "auto"):
        raise SystemExit("--settings: '%s' must start with a --comm mode" % text)
    return {"name": text.strip(), "comm": words[0], "flags": words[1:]}


PLAN_FLAGS = ("--wire", "--sync-every", "--staleness")  # the planner's order


def plan_name(setting):
    """The planner's name of a setting (its flags in the planner's order,
    defaults left out), or None when it has no prediction."""
    flags, given = setting["flags"], {}
    if len(flags) % 2:
        return None
    for flag, value in zip(flags[::2], flags[1::2]):
        if flag not in PLAN_FLAGS:
            return None
        given[flag] = value
    default = {"--wire": "fp32", "--sync-every": "1", "--staleness": "0"}
    words = [setting["comm"]]
    for flag in PLAN_FLAGS:
        if flag in given and given[flag] != default[flag]:
            words += [flag, given[flag]]
    return " ".join(words)


def compile_prog(args, model, comm, work):
    prog = os.path.join(work, "prog-" + comm)
    subprocess.run([args.parallaxc, "compile", model, "-o", prog, "--batch", str(args.batch),
                    "--lr", "0.05", "--comm", comm], check=True, stdout=subprocess.DEVNULL)
    return prog


def machine_cores():
    return len(os.sched_getaffinity(0))


def run_mpi(cl, hosts, prog, data, steps, warmup, threads, flags, work, losses=None):
    stats = os.path.join(work, "stats.json")
    if os.path.exists(stats):
        os.remove(stats)
    cmd = bench.mpirun_cmd(cl, hosts, work) + [
        prog, "--data", data, "--steps", str(warmup + steps), "--warmup-steps", str(warmup),
        "--log-every", "0", "--stats", stats, "--threads", str(threads)] + flags
    if losses:
        cmd += ["--losses", losses]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.load(open(stats))


def plan(parallaxc, model, batch, hosts, rate, cores, data, step_seconds=None, recalibrate=False):
    """The plan at `hosts` hosts: compute calibrated alone (--data; measured
    again with recalibrate, so that it is of this run, not a cached
    moment), or the given step_seconds (--step-seconds; the data still gives
    the rows)."""
    cmd = [parallaxc, "plan", model, "--batch", str(batch), "--hosts", str(hosts), "--link", rate,
           "--cores", "%.6g" % cores, "--data", data, "--lr", "0.05", "--format", "json"]
    if step_seconds:
        cmd += ["--step-seconds", "%.6g" % step_seconds]
    if recalibrate:
        cmd.append("--recalibrate")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def tail_mean(path, n=50):
    losses = [float(line.split(",")[1]) for line in open(path) if line[0].isdigit()]
    tail = losses[-n:]
    return sum(tail) / len(tail)


def loss_bound(setting):
    """The convergence bound of a setting against exact training: 3% for
    local SGD (--sync-every K > 1), 1% for the others."""
    flags = setting["flags"]
    if "--sync-every" in flags and flags[flags.index("--sync-every") + 1] != "1":
        return 0.03
    return 0.01


def convergence(args, cl, h, settings, progs, data, work, results):
    """Each setting at h hosts for --convergence-steps steps from the same
    initial weights; the mean loss of the last 50 steps against the first
    setting's (exact training), with its bound."""
    threads = max(1, int(args.cores_per_host or machine_cores() / h))
    print("convergence at %d hosts, %d steps, %d thread%s per rank (mean loss of the last 50 "
          "steps; bound: within 1%%, --sync-every within 3%%):"
          % (h, args.convergence_steps, threads, "" if threads == 1 else "s"))
    ref = None
    for s in settings:
        losses = os.path.join(work, "losses.csv")
        run_mpi(cl, h, progs[s["comm"]], data, args.convergence_steps, 0, threads,
                s["flags"], work, losses)
        m = tail_mean(losses)
        ref = m if ref is None else ref
        rel, bound = (m - ref) / ref, loss_bound(s)
        verdict = "" if s is settings[0] else "  within %.0f%%: %s" % (
            100 * bound, "yes" if abs(rel) <= bound else "NO")
        print("  %-46s %.5f  (%+.3f%% of %s)%s" % (s["name"], m, 100 * rel, settings[0]["name"],
                                                   verdict), flush=True)
        results.setdefault("convergence", []).append(
            {"setting": s["name"], "hosts": h, "steps": args.convergence_steps, "loss_tail": m,
             "relative": rel, "bound": bound, "within": abs(rel) <= bound})


def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


def cpu_per_step(st):
    """Mean over ranks of the process's and the communication thread's CPU
    seconds per step (--stats)."""
    cpu = [r["cpu_seconds_per_step"] for r in st["ranks"] if r.get("cpu_seconds_per_step")]
    if not cpu:
        return None, None
    return (sum(c["process"] for c in cpu) / len(cpu), sum(c["comm_thread"] for c in cpu) / len(cpu))


def throughput(args, cl, h, model, mdir, data, settings, progs, work, rows, results):
    """Every setting (and the plans' recommendations) and the DDP peers at h
    hosts, --repeat interleaved rounds, medians; predicted against measured."""
    cores = args.cores_per_host or machine_cores() / h
    threads = max(1, int(cores))
    base = progs[settings[0]["comm"]]
    probe = bench.compute_only(h, base, data, args.warmup, min(args.steps, 60), work, threads)
    p_alone = plan(args.parallaxc, model, args.batch, h, cl["rate"], cores, data, recalibrate=True)
    p_probe = plan(args.parallaxc, model, args.batch, h, cl["rate"], cores, data, probe)
    # the plans' recommendations are measured too, listed or not
    here = list(settings)
    for p in (p_alone, p_probe):
        if p["recommended"]["name"] not in [s["name"] for s in here]:
            here.append(parse_setting(p["recommended"]["name"]))
    for s in here:
        if s["comm"] not in progs:
            progs[s["comm"]] = compile_prog(args, model, s["comm"], work)
    ddp = bench.ddp_cluster(cl, h) if args.ddp else None
    # --repeat rounds over the settings, interleaved (drift on the machine
    # hits all of them); the median rate is kept
    rates = {s["name"]: [] for s in here}
    cpus = {s["name"]: [] for s in here}
    ddp_rates = {v: [] for v in args.ddp}
    computes = []
    try:
        for _ in range(args.repeat):
            computes.append(bench.compute_only(h, base, data, args.warmup, args.steps, work, threads))
            for s in here:
                st = run_mpi(cl, h, progs[s["comm"]], data, args.steps, args.warmup, threads,
                             s["flags"], work)
                rates[s["name"]].append(st["samples_per_second"])
                cpus[s["name"]].append(cpu_per_step(st))
            for v in args.ddp:
                sparse, hook = bench.DDP_VARIANTS[v]
                r = ddp.run(args.model, mdir, sparse, args.batch, args.warmup + args.ddp_steps,
                            args.warmup, hook)
                ddp_rates[v].append(r["samples_per_second"])
    finally:
        if ddp:
            ddp.close()
    compute = median(computes)
    p_shared = plan(args.parallaxc, model, args.batch, h, cl["rate"], cores, data, compute)
    alone = {q["name"]: q["samples_per_second"][-1] for q in p_alone["settings"]}
    shared = {q["name"]: q["samples_per_second"][-1] for q in p_shared["settings"]}
    measured = {}
    for s in here:
        runs = sorted(rates[s["name"]])
        measured[s["name"]] = m = median(runs)
        cpu = [c for c in cpus[s["name"]] if c[0] is not None]
        proc, comm = (median([c[0] for c in cpu]), median([c[1] for c in cpu])) if cpu else (0, 0)
        name = plan_name(s)
        pa, ps = (alone.get(name), shared.get(name)) if name else (None, None)
        print("%-46s %5d %7d %10.1f %10s %6s %10s %6s %9.2f %9.2f   runs %s" % (
            s["name"], h, threads, m, "%.1f" % pa if pa else "-", "%.2f" % (pa / m) if pa else "-",
            "%.1f" % ps if ps else "-", "%.2f" % (ps / m) if ps else "-", 1e3 * proc, 1e3 * comm,
            " ".join("%.0f" % r for r in runs)), flush=True)
        results["points"].append({"setting": s["name"], "hosts": h, "threads_per_rank": threads,
                                  "cores_per_host": cores, "measured": m, "runs": runs,
                                  "predicted_alone": pa, "predicted_shared": ps,
                                  "ratio_alone": pa / m if pa else None,
                                  "ratio_shared": ps / m if ps else None,
                                  "cpu_seconds_per_step": proc, "comm_cpu_seconds_per_step": comm})
        if ps:
            rows.append(ps / m)
    best_ddp = None
    for v in args.ddp:
        m = median(ddp_rates[v])
        best_ddp = max(best_ddp or 0, m)
        print("%-46s %5d %7d %10.1f %10s %6s %10s %6s %9s %9s   runs %s" % (
            "PyTorch DDP " + v, h, threads, m, "-", "-", "-", "-", "-", "-",
            " ".join("%.0f" % r for r in sorted(ddp_rates[v]))), flush=True)
        results["points"].append({"setting": "ddp " + v, "hosts": h, "threads_per_rank": threads,
                                  "measured": m, "runs": sorted(ddp_rates[v])})
    print("  %d hosts: compute-only step %.2f ms (alone, calibrated: %.2f ms)" % (
        h, 1e3 * compute, 1e3 * p_alone["compute_seconds_per_step"]))
    if best_ddp:
        print("  %d hosts: against the best PyTorch DDP (%.1f samples/s): %s" % (
            h, best_ddp, ", ".join("%s %.2fx" % (k, v / best_ddp) for k, v in measured.items())))
    best = max(measured, key=measured.get)
    for label, p in (("alone", p_alone), ("shared", p_shared)):
        rec = p["recommended"]["name"]
        rec_measured = measured.get(rec)
        print("  %d hosts: plan (%s) recommends '%s' (measured %s); best measured '%s' %.1f%s" % (
            h, label, rec, "%.1f" % rec_measured if rec_measured else "not run", best,
            measured[best],
            ", within 10%%: %s" % ("yes" if rec_measured and rec_measured >= 0.9 * measured[best]
                                   else "no") if rec_measured else ""))
        results.setdefault("recommended", []).append(
            {"hosts": h, "plan": label, "recommended": rec, "measured": rec_measured,
             "best": best, "best_measured": measured[best]})
    results.setdefault("compute_only_seconds", {})[h] = compute


# As compiler/report/svg_chart.c: distinct colours for every series drawn
# (settings plus the DDP peers), not a repeat after ten.
SVG_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
              "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
              "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#000000",
              "#9c9ede")


def write_svg(path, results):
    """samples/s against hosts: each setting measured (solid, dots) and
    predicted with the compute of H copies (dashed), the DDP peers
    measured (thin)."""
    series = {}
    for pt in results["points"]:
        series.setdefault(pt["setting"], []).append(pt)
    hosts = sorted({pt["hosts"] for pt in results["points"]})
    top = max([pt["measured"] for pt in results["points"]] +
              [pt.get("predicted_shared") or 0 for pt in results["points"]]) * 1.1
    w, h, left, right, bottom, topm = 900, 440, 70, 340, 50, 30
    pw, ph = w - left - right, h - topm - bottom

    def xy(hh, v):
        i = hosts.index(hh)
        x = left + (pw * i / (len(hosts) - 1) if len(hosts) > 1 else pw / 2)
        return x, topm + ph * (1 - v / top)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="13">%s, %s links: measured (solid) and planned (dashed)'
           ' samples/s</text>' % (left, results["model"], results["rate"])]
    for k in range(6):
        v = top * k / 5
        _, y = xy(hosts[0], v)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (left, left + pw, y, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (left - 6, y + 4, v))
    for hh in hosts:
        x, _ = xy(hh, 0)
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x, topm + ph + 16, hh))
    out.append('<text x="%d" y="%d" text-anchor="middle">hosts</text>' % (left + pw / 2, h - 10))
    for i, (name, pts) in enumerate(series.items()):
        color = SVG_COLORS[i % len(SVG_COLORS)]
        pts = sorted(pts, key=lambda p: p["hosts"])
        ddp = name.startswith("ddp ")
        meas = " ".join("%.1f,%.1f" % xy(p["hosts"], p["measured"]) for p in pts)
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="%s"/>'
                   % (meas, color, "1" if ddp else "2"))
        for p in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (xy(p["hosts"], p["measured"]) + (color,)))
        pred = [p for p in pts if p.get("predicted_shared")]
        if pred:
            out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5" '
                       'stroke-dasharray="5,4"/>' % (" ".join(
                           "%.1f,%.1f" % xy(p["hosts"], p["predicted_shared"]) for p in pred), color))
        y = topm + 14 * i
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                   % (w - right + 10, w - right + 30, y, y, color))
        out.append('<text x="%d" y="%d">%s</text>' % (w - right + 35, y + 4,
                                                     name.replace("ddp ", "PyTorch DDP ")))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc")
    ap.add_argument("--model", default="lm1b")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--hosts-list", default="1,2,4")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--settings", default="hybrid|hybrid --wire bf16|hybrid --sync-every 4|"
                    "hybrid --wire bf16 --sync-every 4|allreduce|ps|hybrid --staleness 2")
    ap.add_argument("--cores-per-host", type=float, default=None)
    ap.add_argument("--ddp", default="dense,sparse,fp16",
                    help="PyTorch DDP variants measured in the same rounds (dense, sparse, fp16: "
                         "dense with its fp16 compress hook; none)")
    ap.add_argument("--ddp-steps", type=int, default=60, help="timed steps of a DDP run")
    ap.add_argument("--convergence-steps", type=int, default=0)
    ap.add_argument("--convergence-only", action="store_true",
                    help="only the convergence runs (at the largest --hosts-list count)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--svg", default=None,
                    help="also draw measured and planned samples/s against hosts into this file")
    ap.add_argument("--svg-from", default=None, metavar="JSON",
                    help="only draw --svg from a --json file an earlier run wrote (no cluster)")
    args = ap.parse_args()
    if args.svg_from:
        if not args.svg:
            ap.error("--svg-from wants --svg FILE")
        write_svg(args.svg, json.load(open(args.svg_from)))
        return
    args.ddp = [v for v in args.ddp.split(",") if v and v != "none"]
    bad = [v for v in args.ddp if v not in bench.DDP_VARIANTS]
    if bad:
        ap.error("--ddp: unknown variant(s) %s" % ",".join(bad))
    if args.convergence_only and not args.convergence_steps:
        ap.error("--convergence-only wants --convergence-steps N")
    cl = bench.cluster()
    hosts_list = [int(h) for h in args.hosts_list.split(",")]
    if max(hosts_list) > cl["n"]:
        raise SystemExit("--hosts-list asks for %d hosts; the cluster has %d" % (max(hosts_list), cl["n"]))
    settings = [parse_setting(s) for s in args.settings.split("|")]
    mdir = bench.model_dir(args.model)
    model, data = os.path.join(mdir, "model.onnx"), os.path.join(mdir, "data")
    work = tempfile.mkdtemp(prefix="pxplan.")
    progs = {}
    for s in settings:
        if s["comm"] not in progs:
            progs[s["comm"]] = compile_prog(args, model, s["comm"], work)
    rows, results = [], {"model": args.model, "batch": args.batch, "rate": cl["rate"], "points": []}
    print("model %s, per-rank batch %d, links %s, one rank per host, machine cores %d"
          % (args.model, args.batch, cl["rate"], machine_cores()))
    print("predicted: 'alone' calibrates the compute with one rank alone on the machine "
          "(plan --data); 'shared' takes the compute-only step of H single-rank copies run at "
          "once, as the cluster's ranks share the cores (plan --step-seconds T --data)")
    print("%-46s %5s %7s %10s %10s %6s %10s %6s %9s %9s" % (
        "setting", "hosts", "threads", "measured", "alone", "ratio", "shared", "ratio",
        "CPU ms", "comm CPU"))
    for h in ([] if args.convergence_only else hosts_list):
        throughput(args, cl, h, model, mdir, data, settings, progs, work, rows, results)
    if rows:
        within = sum(1 for r in rows if 0.75 <= r <= 1.25)
        print("predictions within 25%% of the measurement: %d of %d (ratios %.2f .. %.2f)"
              % (within, len(rows), min(rows), max(rows)))
    if args.convergence_steps:
        convergence(args, cl, max(hosts_list), settings, progs, data, work, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.svg and results["points"]:
        write_svg(args.svg, results)


if __name__ == "__main__":
    main()
