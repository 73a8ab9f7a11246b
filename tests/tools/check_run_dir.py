#!/usr/bin/python3
"""Checks a training program's --run-dir (docs/training.md, "Run directory").

    check_run_dir.py DIR INSPECT.json --ranks N --steps S --steps-per-epoch E
        --lr F [--cosine T] [--evals S1,S2,...] [--log-every K]

INSPECT.json: `parallaxc inspect --stage parallel --format json` of the same
model and flags (compile.json must list the same variables). The losses and
validations are the program's own (other tests check them against
PyTorch); here the files must agree with each other and with independent
computations: the lr column is --lr times the cosine schedule (when given),
progress.csv's loss_smoothed is the debiased exponential moving average of
losses.csv's losses over max(K, 20) steps, epochs count from 1. Exits 1 with
the reasons on a mismatch.
"""
import argparse
import csv
import json
import math
import os
import sys

import numpy as np

failures = []


def expect(ok, msg):
    if not ok:
        failures.append(msg)


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array([[float(v) for v in r] for r in rows[1:]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("inspect")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--steps-per-epoch", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--cosine", type=int, default=0)
    ap.add_argument("--evals", default="")
    ap.add_argument("--log-every", type=int, default=10)
    a = ap.parse_args()
    d = a.dir

    run = json.load(open(os.path.join(d, "run.json")))
    expect(run["format"] == "parallax-run" and run["version"] == 1, "run.json: format/version")
    expect(run["status"] == "finished", "run.json: status %r" % run["status"])
    expect(run["ranks"] == a.ranks, "run.json: ranks %r" % run["ranks"])
    expect(run["steps_done"] == a.steps and run["last_step"] == a.steps,
           "run.json: steps_done %r" % run["steps_done"])
    expect(run["steps_per_epoch"] == a.steps_per_epoch, "run.json: steps_per_epoch")
    expect(run["global_batch"] == run["batch_per_rank"] * a.ranks * run["accumulate"],
           "run.json: global_batch")
    expect(run["finished"] >= run["started"] > 0, "run.json: times")
    expect(run["optimizer"]["name"] == "momentum" and run["optimizer"]["lr"] == a.lr,
           "run.json: optimizer %r" % run["optimizer"])
    files = run["files"]
    for key in ("run", "compile", "losses", "progress", "stats"):
        expect(files[key] and os.path.exists(os.path.join(d, files[key])),
               "run.json: files.%s = %r" % (key, files[key]))
    expect((files["eval"] is not None) == bool(a.evals), "run.json: files.eval %r" % files["eval"])

    comp = json.load(open(os.path.join(d, "compile.json")))
    insp = json.load(open(a.inspect))
    expect([v["name"] for v in comp["variables"]] == [v["name"] for v in insp["variables"]],
           "compile.json: variables differ from inspect's")
    pred = comp["predicted_bytes_per_step"]
    expect([p["ranks"] for p in pred] == list(range(1, 65)), "compile.json: predicted ranks")
    expect(pred[0]["hybrid"] == insp["predicted_bytes_per_step"]["hybrid"],
           "compile.json: 1-rank prediction %r, inspect %r"
           % (pred[0], insp["predicted_bytes_per_step"]))
    expect(comp["optimizer"]["name"] == "momentum" and comp["batch_per_rank"] == run["batch_per_rank"],
           "compile.json: optimizer/batch")

    header, losses = read_csv(os.path.join(d, files["losses"]))
    expect(header == ["step", "loss", "lr"], "losses.csv header %r" % header)
    expect(losses.shape[0] == a.steps and list(losses[:, 0]) == list(range(1, a.steps + 1)),
           "losses.csv: %d rows" % losses.shape[0])
    s = np.arange(a.steps)
    want_lr = a.lr * (np.where(s < a.cosine, (1 + np.cos(np.pi * s / a.cosine)) / 2, 0)
                      if a.cosine else np.ones(a.steps))
    expect(np.allclose(losses[:, 2], want_lr, rtol=1e-7, atol=1e-12),
           "losses.csv lr %s, expected %s" % (losses[:5, 2], want_lr[:5]))

    header, prog = read_csv(os.path.join(d, files["progress"]))
    expect(header == ["step", "epoch", "elapsed_seconds", "samples_per_second", "loss_smoothed",
                      "lr"], "progress.csv header %r" % header)
    expect(prog.shape[0] == a.steps, "progress.csv: %d rows" % prog.shape[0])
    expect(list(prog[:, 1]) == list(s // a.steps_per_epoch + 1), "progress.csv epochs")
    expect(np.all(np.diff(prog[:, 2]) >= 0), "progress.csv: elapsed goes back")
    expect(np.all(prog[:2, 3] == 0) and np.all(prog[3:, 3] > 0),
           "progress.csv: samples_per_second %s (0 in warm-up only)" % prog[:4, 3])
    b = 1 - 2 / (max(a.log_every, 20) + 1)
    ema, want = 0.0, []
    for n, loss in enumerate(losses[:, 1], 1):
        ema = b * ema + (1 - b) * loss
        want.append(ema / (1 - b ** n))
    expect(np.allclose(prog[:, 4], want, rtol=1e-6), "progress.csv loss_smoothed %s, NumPy %s"
           % (prog[-3:, 4], want[-3:]))
    expect(np.array_equal(prog[:, 5], losses[:, 2]), "progress.csv lr differs from losses.csv")

    if a.evals:
        header, ev = read_csv(os.path.join(d, files["eval"]))
        expect(header == ["step", "loss"], "eval.csv header %r" % header)
        expect(list(ev[:, 0]) == [float(x) for x in a.evals.split(",")],
               "eval.csv steps %s" % ev[:, 0])
        expect(all(math.isfinite(x) for x in ev[:, 1]), "eval.csv: losses not finite")

    stats = json.load(open(os.path.join(d, files["stats"])))
    expect(stats["steps"] == a.steps and len(stats["ranks"]) == a.ranks,
           "stats.json: steps %r, %d ranks" % (stats["steps"], len(stats["ranks"])))

    for msg in failures:
        print("FAIL " + msg)
    if not failures:
        print("run directory ok: %d steps, %d ranks, %d files" % (a.steps, a.ranks, len(os.listdir(d))))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
