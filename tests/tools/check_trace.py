#!/usr/bin/python3
"""Checks a --trace file (tests/cli/train_trace.sh):

  check_trace.py TRACE.json RANKS SPAN_NAME...

- valid JSON: an object whose "traceEvents" is a list of events;
- one track per rank: pids are exactly 0..RANKS-1, each named "rank <pid>"
  by a process_name metadata event;
- every complete ("X") event has numeric ts >= 0 and dur >= 0, and per
  (pid, tid) the intervals nest properly: any two are disjoint or one
  contains the other (to the 1 ns the file rounds to); B/E events, if any,
  are matched per thread;
- every SPAN_NAME occurs on every rank.
Prints a one-line summary; exits 1 naming the first problem.
"""

import json
import sys
from collections import defaultdict

EPS = 0.002  # microseconds: ts and dur are printed to 1 ns each


def main():
    path, ranks, wanted = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    try:
        doc = json.load(open(path))
    except ValueError as e:
        sys.exit("FAIL %s is not valid JSON: %s" % (path, e))
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list) or not events:
        sys.exit("FAIL %s: no traceEvents list" % path)
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    pids = {e.get("pid") for e in events}
    if pids != set(range(ranks)):
        sys.exit("FAIL pids %s, expected one track per rank 0..%d" % (sorted(pids), ranks - 1))
    for r in range(ranks):
        if names.get(r) != "rank %d" % r:
            sys.exit("FAIL pid %d is named %r, expected 'rank %d'" % (r, names.get(r), r))
    spans = defaultdict(list)
    open_b = defaultdict(list)
    seen = defaultdict(set)
    for e in events:
        ph = e.get("ph")
        key = (e.get("pid"), e.get("tid"))
        if ph == "X":
            ts, dur = e.get("ts"), e.get("dur")
            if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or ts < 0 or dur < 0:
                sys.exit("FAIL bad ts/dur in %s" % e)
            spans[key].append((ts, ts + dur, e["name"]))
            seen[e["pid"]].add(e["name"])
        elif ph == "B":
            open_b[key].append(e)
        elif ph == "E":
            if not open_b[key]:
                sys.exit("FAIL an E event without its B on %s" % (key,))
            open_b[key].pop()
    for key, stack in open_b.items():
        if stack:
            sys.exit("FAIL %d unmatched B events on %s" % (len(stack), key))
    n = 0
    for key, ivs in spans.items():
        ivs.sort(key=lambda iv: (iv[0], -iv[1]))
        stack = []
        for start, end, name in ivs:
            while stack and stack[-1][1] <= start + EPS:
                stack.pop()
            if stack and end > stack[-1][1] + EPS:
                sys.exit("FAIL on pid %s tid %s: '%s' [%.3f, %.3f] overlaps '%s' [%.3f, %.3f] "
                         "without nesting" % (key[0], key[1], name, start, end, stack[-1][2],
                                              stack[-1][0], stack[-1][1]))
            stack.append((start, end, name))
            n += 1
    for r in range(ranks):
        missing = [w for w in wanted if w not in seen[r]]
        if missing:
            sys.exit("FAIL rank %d has no span %s (has %s)" % (r, missing, sorted(seen[r])))
    print("trace ok: %d spans on %d tracks, properly nested; spans: %s"
          % (n, ranks, ", ".join(sorted(set().union(*seen.values())))))


if __name__ == "__main__":
    main()
