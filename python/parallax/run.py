"""parallax.read_run: what a training program wrote, as plain Python data.

A run directory holds the program's outputs under their usual names (what
`--run-dir DIR` writes, or files written with --losses, --eval-log, --stats
and --trace into one folder):
  losses.csv   step,loss[,other columns]   (--losses)
  eval.csv     step,loss[,metrics]         (--eval-log)
  stats.json                               (--stats)
  trace.json   Chrome trace events         (--trace)
Files that are not there read as empty ([] or None).
"""
import csv
import json
import os

LOSSES = "losses.csv"
EVAL = "eval.csv"
STATS = "stats.json"
TRACE = "trace.json"


def _number(text):
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() \
        else value


def read_csv(path):
    """A CSV with a header as a list of dicts, numbers converted."""
    with open(path, newline="") as f:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]


def summarize_trace(doc):
    """Per rank: the wall time the trace covers and, per thread and span name,
    the number of spans and their total milliseconds.

    [{"rank": r, "wall_ms": W, "threads": {"main": {"PS pull": {"count": n,
      "total_ms": t}, ...}, ...}}, ...]   sorted by rank.
    """
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    thread_names, ranks = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
    for e in events:
        if e.get("ph") != "X":
            continue
        pid, start, dur = e["pid"], float(e["ts"]), float(e.get("dur", 0))
        r = ranks.setdefault(pid, {"rank": pid, "start": start, "end": start + dur,
                                   "threads": {}})
        r["start"] = min(r["start"], start)
        r["end"] = max(r["end"], start + dur)
        thread = thread_names.get((pid, e["tid"]), "thread %d" % e["tid"])
        span = r["threads"].setdefault(thread, {}).setdefault(e["name"],
                                                              {"count": 0, "total_ms": 0.0})
        span["count"] += 1
        span["total_ms"] += dur / 1000.0
    out = []
    for pid in sorted(ranks):
        r = ranks[pid]
        out.append({"rank": r["rank"], "wall_ms": (r["end"] - r["start"]) / 1000.0,
                    "threads": r["threads"]})
    return out


def read_run(directory):
    """{"losses": [...], "eval": [...], "stats": {...} or None,
        "trace": summarize_trace(...) or None} for the run in directory."""
    if not os.path.isdir(directory):
        raise FileNotFoundError("run directory %s does not exist" % directory)

    def path(name):
        p = os.path.join(directory, name)
        return p if os.path.exists(p) else None

    run = {"losses": [], "eval": [], "stats": None, "trace": None}
    if path(LOSSES):
        run["losses"] = read_csv(path(LOSSES))
    if path(EVAL):
        run["eval"] = read_csv(path(EVAL))
    if path(STATS):
        with open(path(STATS)) as f:
            run["stats"] = json.load(f)
    if path(TRACE):
        with open(path(TRACE)) as f:
            run["trace"] = summarize_trace(json.load(f))
    return run


__all__ = ["read_run", "read_csv", "summarize_trace"]
