#!/usr/bin/python3
"""Who waits for whom in a --pp program's --trace (docs/parallelism.md):

  pp_trace_waits.py TRACE.json MICRO_BATCHES [--skip STEPS]
                    [--check-progress|--check-no-progress FRACTION [MIN_SENDS]]

Ranks of one host share a clock: each rank's "clock_origin" metadata says
where its times count from, and the timelines are laid on one axis. Every
"pipeline receive" is matched with its "pipeline send" (the k-th receive of
a step on stage t from stage f with the k-th send of that step on f to t:
both follow the one order of the step's calls), and its wait is split at
the moment the send was posted (the end of the send's span):

  - before: the sender had not posted it yet (the sender was still
    computing: the schedule, or a slower stage);
  - after: both sides were there and the bytes were moving (the transfer,
    including a rendezvous that waits for its sender's next MPI call).

For each rank, over the steps after the first STEPS (default 2), it prints
its step, its idle (receives, the loss broadcast and the step-end loss
mean, over the mean step, as bench/pipeline_bubble.sh counts it), the
receives' wait split in two, the longest post-to-completion delay, and the
rank's own work per micro-batch (its step less those waits, over M): the
pace that the stages after and before it wait for.

--check-progress looks at the sends whose sender computed at least 1 ms
after the send was posted and its receive started (the sender's next MPI
call on its main thread came that much later), and at when the sender saw
each complete ("pipeline send done", on the track of the thread that saw
it): a send whose bytes move only inside its sender's MPI calls completes
at that next call or later, one driven meanwhile completes before it (0.05
ms before its start or earlier). It exits 1 unless more than FRACTION of
them completed before the next call, or with --check-no-progress, unless
at most FRACTION did; and when fewer than MIN_SENDS (default 10) were
found (nothing was tested). On a loaded host the thread that drives them
may not run for a scheduler tick or more, so a driven send can still
complete late: the fraction says how many did not.
"""

import collections
import json
import sys

WAITS = ("pipeline receive", "pipeline broadcast", "loss mean over ranks")
# the spans of a rank's main thread that are MPI calls
MPI_SPANS = WAITS + ("pipeline send", "AllReduce start", "AllReduce wait")
COMPUTING_MS = 1.0  # a sender computing this long after the post is a test case
AT_NEXT_CALL_MS = 0.05


def load(path):
    events = json.load(open(path))["traceEvents"]
    origin = {e["pid"]: e["args"]["monotonic_us"] for e in events
              if e.get("ph") == "M" and e.get("name") == "clock_origin"}
    spans = [e for e in events if e.get("ph") == "X"
             and (e.get("tid") == 0 or e.get("name") == "pipeline send done")]
    ranks = sorted({e["pid"] for e in spans})
    if set(origin) != set(ranks):
        sys.exit("FAIL %s: no clock_origin for ranks %s (a trace of an older program?)"
                 % (path, sorted(set(ranks) - set(origin))))
    base = min(origin.values())
    for e in spans:
        e["t0"] = (e["ts"] + origin[e["pid"]] - base) / 1e3  # ms on the shared clock
        e["t1"] = e["t0"] + e["dur"] / 1e3
    spans.sort(key=lambda e: e["t0"])
    return spans, ranks


def sends_done(spans):
    """{id(send span): the "pipeline send done" span of that send}: the k-th
    send of a rank to a stage with the k-th seen complete (sends to one
    stage complete in order)."""
    posted, done = collections.defaultdict(list), collections.defaultdict(list)
    for e in spans:
        if e["name"] == "pipeline send":
            posted[(e["pid"], e["args"]["to_stage"])].append(e)
        elif e["name"] == "pipeline send done":
            done[(e["pid"], e["args"]["to_stage"])].append(e)
    return {id(s): d for key in posted for s, d in zip(posted[key], done[key])}


def matched_receives(spans):
    """(receive, send) pairs: the k-th of a step between two stages."""
    sends, recvs = collections.defaultdict(list), collections.defaultdict(list)
    for e in spans:
        a = e["args"]
        if e["name"] == "pipeline send":
            sends[(e["pid"], a["to_stage"], a["step"])].append(e)
        elif e["name"] == "pipeline receive":
            recvs[(a["from_stage"], e["pid"], a["step"])].append(e)
    pairs = []
    for key, rl in recvs.items():
        sl = sends.get(key, [])
        if len(sl) != len(rl):
            sys.exit("FAIL step %d: %d receives on rank %d from stage %d, %d sends"
                     % (key[2], len(rl), key[1], key[0], len(sl)))
        pairs += zip(rl, sl)
    return pairs


def main():
    argv = sys.argv[1:]
    skip, check = 2, None
    if "--skip" in argv:
        i = argv.index("--skip")
        skip = int(argv[i + 1])
        del argv[i:i + 2]
    for flag in ("--check-progress", "--check-no-progress"):
        if flag in argv:
            i = argv.index(flag)
            rest = argv[i + 1:]
            check = (flag, float(rest[0]), int(rest[1]) if len(rest) > 1 else 10)
            del argv[i:]
    if len(argv) != 2:
        sys.exit(__doc__)
    spans, ranks = load(argv[0])
    m = int(argv[1])
    pairs = matched_receives(spans)
    mpi_starts = collections.defaultdict(list)
    for e in spans:
        if e["name"] in MPI_SPANS:
            mpi_starts[e["pid"]].append(e["t0"])

    for r in ranks:
        mine = [e for e in spans if e["pid"] == r and e["args"].get("step", 0) > skip]
        starts = [e["t0"] for e in mine if e["name"] == "data loading"]
        if len(starts) < 2:
            sys.exit("FAIL rank %d: fewer than 2 steps after the first %d" % (r, skip))
        lo, hi, n = starts[0], starts[-1], len(starts) - 1
        step = (hi - lo) / n
        inside = [e for e in mine if lo <= e["t0"] < hi]
        waited = sum(e["dur"] for e in inside if e["name"] in WAITS) / 1e3 / n
        before = after = longest = 0.0
        for rv, sd in pairs:
            if rv["pid"] != r or not lo <= rv["t0"] < hi:
                continue
            posted = sd["t1"]
            before += min(max(posted - rv["t0"], 0.0), rv["t1"] - rv["t0"])
            after += max(rv["t1"] - max(posted, rv["t0"]), 0.0)
            longest = max(longest, rv["t1"] - max(posted, rv["t0"]))
        print("rank %d: step %.4g ms, idle %.3f (%.3g ms); receives: %.3g ms before the send was "
              "posted, %.3g ms after (longest %.3g ms); its own work %.3g ms per micro-batch"
              % (r, step, waited / step, waited, before / n, after / n, longest,
                 (step - waited) / m))

    if check is None:
        return
    done = sends_done(spans)
    cases = early = 0
    for rv, sd in pairs:
        if rv["args"]["step"] <= skip or id(sd) not in done:
            continue
        ready = max(sd["t1"], rv["t0"])
        later = [t for t in mpi_starts[sd["pid"]] if t > sd["t1"]]
        if not later or later[0] - ready < COMPUTING_MS:
            continue
        cases += 1
        early += done[id(sd)]["t0"] < later[0] - AT_NEXT_CALL_MS
    print("%d sends whose sender computed %.3g ms or more after both sides were posted; %d of "
          "them completed before the sender's next MPI call" % (cases, COMPUTING_MS, early))
    flag, fraction, least = check
    if cases < least:
        sys.exit("FAIL fewer than %d such sends: nothing was tested" % least)
    if flag == "--check-progress" and early <= fraction * cases:
        sys.exit("FAIL %.0f%% or fewer of them completed before the sender's next MPI call"
                 % (100 * fraction))
    if flag == "--check-no-progress" and early > fraction * cases:
        sys.exit("FAIL more than %.0f%% of them completed before the sender's next MPI call"
                 % (100 * fraction))


if __name__ == "__main__":
    main()
