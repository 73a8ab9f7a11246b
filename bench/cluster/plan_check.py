#!/usr/bin/python3
"""`parallaxc plan`'s predictions against measured runs on the simulated
cluster, and the relaxed settings' throughput and convergence side by side.

usage: bench/cluster/run.sh --hosts 4 --script bench/cluster/plan_check.py -- PARALLAXC
           [--model lm1b] [--batch 32] [--hosts-list 1,2,4] [--steps 300] [--warmup 5]
           [--repeat 3]
           [--settings "hybrid|hybrid --wire bf16|hybrid --sync-every 4|..."]
           [--cores-per-host C] [--convergence-steps 0] [--json FILE]

Runs inside the cluster bench/cluster/run.sh sets up (PX_CLUSTER_* in the
environment), one rank per host, per-rank batch --batch, SGD lr 0.05.
For every setting ("MODE [RUN FLAGS]": MODE is the compile's --comm, the
rest the program's flags: --wire, --sync-every, --staleness) and every
host count H of --hosts-list:
  - measured: the program under mpirun across H hosts, --warmup + --steps
    steps, samples/s from its --stats (warm-up excluded), with --threads T
    (T printed: the cores the hosts share, divided among them, at least 1);
    --repeat rounds over the settings, interleaved, the median kept;
  - predicted: `parallaxc plan MODEL --batch B --hosts H --link RATE
    --cores C` (C: --cores-per-host, default this machine's cores divided
    by H, since the simulated hosts share them; the plan calibrates its
    compute here, cached) for the same setting at H hosts.
It prints predicted against measured and their ratio (the issue's bound:
within 25%), and, per host count, whether the plan's recommendation is
within 10% of the best measured setting. The plan predicts --staleness S
from the rows it replays from the data (run plan with --staleness S; the
settings here use S = 2, the plan's default).

--convergence-steps N (0: off): each setting at the largest host count for N
steps; the mean loss of the last 50 steps against exact training's (the
first setting), relative.

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


def plan(parallaxc, model, batch, hosts, rate, cores, data):
    out = subprocess.run([parallaxc, "plan", model, "--batch", str(batch), "--hosts", str(hosts),
                          "--link", rate, "--cores", "%.6g" % cores, "--data", data,
                          "--lr", "0.05", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def tail_mean(path, n=50):
    losses = [float(line.split(",")[1]) for line in open(path) if line[0].isdigit()]
    tail = losses[-n:]
    return sum(tail) / len(tail)


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
    ap.add_argument("--convergence-steps", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
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
    print("%-36s %5s %7s %10s %10s %7s" % ("setting", "hosts", "threads", "measured", "predicted",
                                          "pred/meas"))
    for h in hosts_list:
        cores = args.cores_per_host or machine_cores() / h
        threads = max(1, int(cores))
        p = plan(args.parallaxc, model, args.batch, h, cl["rate"], cores, data)
        predicted = {q["name"]: q["samples_per_second"][-1] for q in p["settings"]}
        # the plan's recommendation is measured too, listed or not
        here = list(settings)
        if p["recommended"]["name"] not in [s["name"] for s in here]:
            here.append(parse_setting(p["recommended"]["name"]))
        for s in here:
            if s["comm"] not in progs:
                progs[s["comm"]] = compile_prog(args, model, s["comm"], work)
        # --repeat rounds over the settings, interleaved (drift on the
        # machine hits all of them); the median rate is kept
        rates = {s["name"]: [] for s in here}
        for _ in range(args.repeat):
            for s in here:
                st = run_mpi(cl, h, progs[s["comm"]], data, args.steps, args.warmup, threads,
                             s["flags"], work)
                rates[s["name"]].append(st["samples_per_second"])
        measured = {}
        for s in here:
            runs = sorted(rates[s["name"]])
            measured[s["name"]] = m = runs[(len(runs) - 1) // 2]
            name = plan_name(s)
            pred = predicted.get(name) if name else None
            ratio = pred / m if pred else None
            print("%-36s %5d %7d %10.1f %10s %7s   runs %s" % (
                s["name"], h, threads, m, "%.1f" % pred if pred else "-",
                "%.2f" % ratio if ratio else "-", " ".join("%.0f" % r for r in runs)), flush=True)
            results["points"].append({"setting": s["name"], "hosts": h, "threads_per_rank": threads,
                                      "cores_per_host": cores, "measured": m, "runs": runs,
                                      "predicted": pred, "ratio": ratio})
            if ratio:
                rows.append(ratio)
        rec = p["recommended"]["name"]
        best = max(measured, key=measured.get)
        rec_measured = measured.get(rec)
        print("  %d hosts: plan recommends '%s' (measured %s); best measured '%s' %.1f%s" % (
            h, rec, "%.1f" % rec_measured if rec_measured else "not run", best, measured[best],
            ", within 10%%: %s" % ("yes" if rec_measured and rec_measured >= 0.9 * measured[best]
                                   else "no") if rec_measured else ""))
        results.setdefault("recommended", []).append(
            {"hosts": h, "recommended": rec, "measured": rec_measured, "best": best,
             "best_measured": measured[best]})
    if rows:
        within = sum(1 for r in rows if 0.75 <= r <= 1.25)
        print("predictions within 25%% of the measurement: %d of %d (ratios %.2f .. %.2f)"
              % (within, len(rows), min(rows), max(rows)))
    if args.convergence_steps:
        h = max(hosts_list)
        threads = max(1, int(args.cores_per_host or machine_cores() / h))
        print("convergence at %d hosts, %d steps (mean loss of the last 50 steps):" % (h, args.convergence_steps))
        ref = None
        for s in settings:
            losses = os.path.join(work, "losses.csv")
            run_mpi(cl, h, progs[s["comm"]], data, args.convergence_steps, 0, threads,
                    s["flags"], work, losses)
            m = tail_mean(losses)
            ref = m if ref is None else ref
            print("  %-36s %.5f  (%+.2f%% of %s)" % (s["name"], m, 100 * (m - ref) / ref, settings[0]["name"]))
            results.setdefault("convergence", []).append({"setting": s["name"], "loss_tail": m})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
