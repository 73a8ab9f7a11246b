"""parallax.read_run: what a training program wrote, as plain Python data.

A run directory is what `--run-dir DIR` writes (docs/training.md, "Run
directory"), or a folder the program's --losses, --eval-log, --stats and
--trace wrote into under these names:
  run.json      the run's configuration and outcome (--run-dir)
  compile.json  the compiler's record (--run-dir)
  losses.csv    step,loss[,other outputs][,lr]   (--losses)
  eval.csv      step,loss[,metrics]              (--eval-log)
  progress.csv  step,epoch,elapsed_seconds,samples_per_second,loss_smoothed,lr
  stats.json                                     (--stats)
  trace.json    Chrome trace events              (--trace)
When run.json's "files" says a file went elsewhere (a name inside DIR, or
another path as given; null: not written), that is where it is read.
Files that are not there read as empty ([] or None).
"""
import csv
import json
import os

FILES = {  # key in the result and in run.json's "files" -> usual name
    "run": "run.json",
    "compile": "compile.json",
    "losses": "losses.csv",
    "eval": "eval.csv",
    "progress": "progress.csv",
    "stats": "stats.json",
    "trace": "trace.json",
}


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


def _locate(directory, files, key):
    """Where the run's file `key` is, or None (run.json: not written)."""
    if key in files:
        where = files[key]
        if where is None:
            return None
        if where:
            return where if "/" in where else os.path.join(directory, where)
    return os.path.join(directory, FILES[key])


def read_run(directory):
    """{"run", "compile", "stats": dicts or None, "losses", "eval", "progress":
    lists of row dicts, "trace": summarize_trace(...) or None} for the run
    in directory."""
    if not os.path.isdir(directory):
        raise FileNotFoundError("run directory %s does not exist" % directory)
    run = {"run": None, "compile": None, "stats": None, "losses": [], "eval": [],
           "progress": [], "trace": None}
    run_json = os.path.join(directory, FILES["run"])
    if os.path.exists(run_json):
        with open(run_json) as f:
            run["run"] = json.load(f)
    files = (run["run"] or {}).get("files") or {}
    for key in FILES:
        if key == "run":
            continue
        path = _locate(directory, files, key)
        if path is None or not os.path.exists(path):
            continue
        if path.endswith(".csv"):
            run[key] = read_csv(path)
            continue
        with open(path) as f:
            doc = json.load(f)
        run[key] = summarize_trace(doc) if key == "trace" else doc
    return run


__all__ = ["read_run", "read_csv", "summarize_trace"]
