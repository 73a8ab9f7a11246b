#!/usr/bin/python3
"""check_parallel.py FILE.json COMM

Structural checks of `parallaxc inspect --stage parallel --format json` for
--comm COMM (design.md §4), independent of the compiler's own code:
  - each variable's sync follows the mode (hybrid: sparse -> ps, dense ->
    allreduce; allreduce: all allreduce; ps: all ps); auto: any;
  - a parameter-server sparse variable has one PSPull right before every Gather
    that reads it (same indices) and exactly one PSPush; a dense one a PSPull
    before any node reads it and one PSPushDense;
  - an allreduce variable has one Update (dense) or MaskedUpdate (sparse) whose
    gradient inputs are outputs of an AllReduceWait; every AllReduceWait has an
    AllReduceStart of the same bucket, with the same inputs, placed earlier,
    after the producers of those inputs;
  - no update reads a variable before its last forward/backward reader.
Prints one summary line; exits 1 listing the problems."""
import json
import sys

doc = json.load(open(sys.argv[1]))
comm = sys.argv[2]
nodes = doc["nodes"]
problems = []
producer = {}
for i, n in enumerate(nodes):
    for o in n["outputs"]:
        producer[o] = i
readers = {}
for i, n in enumerate(nodes):
    for x in n["inputs"]:
        readers.setdefault(x, []).append(i)

UPDATES = {"Update", "RowUpdate", "MaskedUpdate", "PSPush", "PSPushDense"}
waits = {}
starts = {}
for i, n in enumerate(nodes):
    if n["op"] == "AllReduceWait":
        waits[i] = n
    if n["op"] == "AllReduceStart":
        starts[i] = n
wait_outputs = {o for n in waits.values() for o in n["outputs"]}
for wi, w in waits.items():
    match = [si for si, s in starts.items() if s["inputs"] == w["inputs"]]
    if len(match) != 1:
        problems.append("AllReduceWait %r has %d matching starts" % (w["name"], len(match)))
        continue
    si = match[0]
    if si > wi:
        problems.append("AllReduceStart %r after its wait" % starts[si]["name"])
    for x in starts[si]["inputs"]:
        if producer.get(x, -1) > si:
            problems.append("AllReduceStart %r before the producer of %r" % (starts[si]["name"], x))

counts = {"ps": 0, "allreduce": 0}
for v in doc["variables"]:
    name, cls, sync = v["name"], v["class"], v["sync"]
    want = {"hybrid": "ps" if cls == "sparse" else "allreduce", "allreduce": "allreduce",
            "ps": "ps"}.get(comm)
    if want and sync != want:
        problems.append("%s (%s): sync %s, expected %s" % (name, cls, sync, want))
    users = [nodes[i] for i in readers.get(name, [])]
    ups = [(i, nodes[i]) for i in readers.get(name, []) if nodes[i]["op"] in UPDATES]
    if sync == "none":
        continue
    counts[sync] = counts.get(sync, 0) + 1
    if len(ups) != 1:
        problems.append("%s: %d update nodes" % (name, len(ups)))
        continue
    ui, up = ups[0]
    last_reader = max(i for i in readers[name] if nodes[i]["op"] not in UPDATES)
    if last_reader > ui:
        problems.append("%s: updated at node %d before its reader at %d" % (name, ui, last_reader))
    if sync == "ps" and cls == "sparse":
        if up["op"] != "PSPush":
            problems.append("%s: %s instead of PSPush" % (name, up["op"]))
        for i in readers[name]:
            if nodes[i]["op"] == "Gather":
                prev = nodes[i - 1]
                if prev["op"] != "PSPull" or prev["inputs"] != [name, nodes[i]["inputs"][1]]:
                    problems.append("%s: Gather %r not preceded by its PSPull" % (name, nodes[i]["name"]))
    elif sync == "ps":
        if up["op"] != "PSPushDense":
            problems.append("%s: %s instead of PSPushDense" % (name, up["op"]))
        pulls = [i for i in readers[name] if nodes[i]["op"] == "PSPull"]
        first = min(i for i in readers[name] if nodes[i]["op"] != "PSPull")
        if len(pulls) != 1 or pulls[0] > first:
            problems.append("%s: dense PS variable not pulled before its first reader" % name)
    else:
        want_op = "MaskedUpdate" if cls == "sparse" else "Update"
        if up["op"] != want_op:
            problems.append("%s: %s instead of %s" % (name, up["op"], want_op))
        for g in up["inputs"][1:]:
            if g not in wait_outputs:
                problems.append("%s: gradient %r does not come from an AllReduceWait" % (name, g))
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("%d ps, %d allreduce variables, %d buckets" % (counts.get("ps", 0), counts.get("allreduce", 0), len(waits)))
