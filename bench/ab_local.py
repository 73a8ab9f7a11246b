#!/usr/bin/python3
"""Training programs by turns on this machine: an A/B comparison of
programs built by two versions of parallaxc (e.g. two commits), in which
drift on the machine hits every configuration alike.

usage: bench/ab_local.py CONFIGS [--repeat 7] [--ranks 2] [--steps 300]
                         [--warmup 30] [--threads N]

CONFIGS is a file with one configuration per line,
    LABEL DATA_DIR PROGRAM [FLAGS...]
(# starts a comment). Each repeat runs every configuration once, in file
order, as `mpirun -np RANKS --bind-to core PROGRAM --data DATA_DIR --steps
STEPS --warmup-steps WARMUP --stats FILE [--threads N] FLAGS`. Reported per
configuration: the median samples/s of --stats (warm-up excluded) with its
min and max, the threads per rank the program ran (from --stats), and the
ratio of each configuration's median to the first one's. bench/cluster/ab.sh
does the same on the simulated cluster.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile


def read_configs(path):
    configs = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        words = shlex.split(line)
        if len(words) < 3:
            sys.exit("ab_local: '%s': expected LABEL DATA_DIR PROGRAM [FLAGS...]" % line)
        configs.append({"label": words[0], "data": words[1], "program": words[2],
                        "flags": words[3:], "rates": [], "threads": None})
    if not configs:
        sys.exit("ab_local: no configuration in %s" % path)
    return configs


def run_once(c, args, stats):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.ranks),
           "--bind-to", "core", c["program"], "--data", c["data"], "--steps", str(args.steps),
           "--warmup-steps", str(args.warmup), "--log-every", "0", "--stats", stats]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    r = subprocess.run(cmd + c["flags"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        sys.exit("ab_local: %s failed (exit %d):\n%s" % (c["label"], r.returncode, r.stderr))
    st = json.load(open(stats))
    c["threads"] = st.get("threads_per_rank")
    c["rates"].append(st["samples_per_second"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("configs")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--threads", type=int, default=0, help="threads per rank (default: the program's)")
    args = ap.parse_args()
    if args.repeat < 1 or args.steps <= args.warmup:
        sys.exit("ab_local: --repeat >= 1 and --steps > --warmup expected")
    configs = read_configs(args.configs)
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    with tempfile.TemporaryDirectory() as work:
        stats = os.path.join(work, "stats.json")
        for rep in range(args.repeat):
            for c in configs:
                run_once(c, args, stats)
            print("repeat %d/%d: %s" % (rep + 1, args.repeat, ", ".join(
                "%s %.0f" % (c["label"], c["rates"][-1]) for c in configs)), flush=True)
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    base = statistics.median(configs[0]["rates"])
    print("%-28s %12s %12s %12s %8s %8s" % ("configuration", "median/s", "min", "max",
                                            "threads", "ratio"))
    for c in configs:
        med = statistics.median(c["rates"])
        print("%-28s %12.0f %12.0f %12.0f %8s %8.3f" % (c["label"], med, min(c["rates"]),
                                                         max(c["rates"]), c["threads"], med / base))


if __name__ == "__main__":
    main()
