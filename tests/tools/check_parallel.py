#!/usr/bin/python3
"""check_parallel.py FILE.json COMM

Structural checks of `parallaxc inspect --stage parallel --format json` for
--comm COMM (design.md §4), independent of the compiler's own code:
  - each variable's sync follows the mode (hybrid: sparse -> ps, dense ->
    allreduce; allreduce: all allreduce; ps: all ps); auto: any;
  - a parameter-server sparse variable is read by no Gather: each of its
    lookups is a PSPull(W, idx) -> (cache, remap) right before a
    Gather(cache, remap), the cache [n_idx, row dims] (one row per index,
    not the table) and the remap shaped and typed like idx; W itself is
    read only by its pulls and exactly one PSPush (the worker holds no
    full-size replica), and its row_cache_rows is the caches' rows (null
    for every replicated variable); a dense one has a PSPull(W) with no outputs before
    any node reads it and one PSPushDense;
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

values = {v["name"]: v for v in doc["values"]}
shapes = {v["name"]: v["shape"] for v in doc["variables"]}
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
        others = [nodes[i] for i in readers[name] if nodes[i]["op"] not in ("PSPull", "PSPush")]
        if others:
            problems.append("%s: read by %s besides its pulls and push: the worker would need "
                            "the full table" % (name, [n["op"] for n in others]))
        pulls = [i for i in readers[name] if nodes[i]["op"] == "PSPull"]
        if not pulls:
            problems.append("%s: no PSPull" % name)
        cache_rows = sum(values[nodes[i]["outputs"][0]]["shape"][0] for i in pulls
                         if len(nodes[i]["outputs"]) == 2 and nodes[i]["outputs"][0] in values)
        if v.get("row_cache_rows") != cache_rows:
            problems.append("%s: row_cache_rows %r, its pulls' caches hold %d rows" % (
                name, v.get("row_cache_rows"), cache_rows))
        for i in pulls:
            pull = nodes[i]
            if len(pull["inputs"]) != 2 or len(pull["outputs"]) != 2:
                problems.append("%s: PSPull %r is not (W, idx) -> (cache, remap)" % (name, pull["name"]))
                continue
            idx, (cache, remap) = pull["inputs"][1], pull["outputs"]
            nxt = nodes[i + 1] if i + 1 < len(nodes) else None
            if not nxt or nxt["op"] != "Gather" or nxt["inputs"] != [cache, remap]:
                problems.append("%s: PSPull %r not followed by Gather(cache, remap)" % (name, pull["name"]))
            w_shape, i_val = shapes.get(name), values.get(idx)
            c_val, r_val = values.get(cache), values.get(remap)
            if not (w_shape and i_val and c_val and r_val):
                problems.append("%s: PSPull %r: a value is missing from 'values'" % (name, pull["name"]))
                continue
            n_idx = 1
            for x in i_val["shape"]:
                n_idx *= x
            w_dtype = values[name]["dtype"] if name in values else None
            if c_val["shape"] != [n_idx] + w_shape[1:] or c_val["dtype"] != w_dtype:
                problems.append("%s: cache %r is %s %s, expected %s %s" % (
                    name, cache, c_val["dtype"], c_val["shape"], w_dtype, [n_idx] + w_shape[1:]))
            if r_val["shape"] != i_val["shape"] or r_val["dtype"] != i_val["dtype"]:
                problems.append("%s: remap %r is not shaped and typed like %r" % (name, remap, idx))
    if not (sync == "ps" and cls == "sparse") and v.get("row_cache_rows") is not None:
        problems.append("%s: row_cache_rows %r for a replicated variable" % (name, v["row_cache_rows"]))
    if sync == "ps" and cls == "sparse":
        pass
    elif sync == "ps":
        if up["op"] != "PSPushDense":
            problems.append("%s: %s instead of PSPushDense" % (name, up["op"]))
        pulls = [i for i in readers[name] if nodes[i]["op"] == "PSPull"]
        first = min(i for i in readers[name] if nodes[i]["op"] != "PSPull")
        if len(pulls) != 1 or pulls[0] > first or nodes[pulls[0]]["outputs"]:
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
