#!/usr/bin/python3
"""check_memory.py expect FOLDED.json PARALLEL.json RANKS RANKS_PER_NODE PARTITIONS OPTIMIZER
       check_memory.py compare INSPECT.json STATS.json [held-only]
       check_memory.py rss STATS.json SLACK_MIB
       check_memory.py within INSPECT.json STATS.json PERCENT

expect: computes the memory per rank independently of parallaxc's memory
model, from the folded stage's variables table (shapes, bytes, classes,
sync, Gather indices) and the optimizer, and compares it with the
"predicted_memory_per_rank" of PARALLEL.json (inspect --stage parallel with
the same flags). The rules, from the runtime:
  - shards: one per node of RANKS_PER_NODE consecutive ranks (0: one node),
    the node's lowest rank;
  - each parameter-server variable in PARTITIONS balanced row ranges (auto:
    one per shard), at most one per row; partition p of P of a variable on
    shard (floor(p * shards / P) + offset) % shards (shard-contiguous), the
    offset of each variable in order the one leaving the most loaded shard
    least loaded (ties: the lowest);
  - optimizer state: sgd 0, momentum 1, adam 2, adagrad 1 slots per float;
  - row cache: per Gather of a sparse PS variable, one row (dim floats) and
    one remap index per index read;
  - dense replicas: every variable but the sparse PS ones, the optimizer
    slots of the variables off the parameter servers, the AllReduce bucket
    (one bucket here: the dense variables fit in 4 MiB) and the ring's
    scratch, one chunk of it (ceil(floats / ranks) floats);
  - frozen weights: none (every float initializer of the example is trained);
  - activations: the parallel stage's buffer plan ("memory"."arena_bytes").

compare: every rank's "predicted_memory_bytes" of the program's --stats
equals inspect's prediction for the same flags, and the shards together
hold exactly the bytes of the parameter-server tables. held-only: only the
latter (automatic partitions: the search may keep another count than
inspect assumes).

rss: every rank's measured peak RSS is at least its predicted total (with
SGD every predicted byte is written: rows read from the model, replicas,
the zeroed arena) and at most SLACK_MIB above it (the process baseline:
binary, MPI, BLAS, data set; no second copy of anything).

within: every rank's measured peak RSS (--stats) is within PERCENT of the
total inspect predicts for it (INSPECT.json: inspect --stage parallel
--format json with the program's flags and rank count)."""
import json
import sys

SLOTS = {"sgd": 0, "momentum": 1, "adam": 2, "adagrad": 1}
DTYPE_BYTES = {"int64": 8, "int32": 4}
KEYS = ["shard_rows", "optimizer_state", "row_cache", "dense_replicas", "frozen_weights",
        "activations", "total"]


def part_row0(rows, parts, p):
    q, m = divmod(rows, parts)
    return p * q + min(p, m)


def place(ps_vars, shards):
    """ps_vars: [(var index, rows, row_bytes, parts)] in order -> bytes per shard."""
    load = [0] * shards
    for _, rows, row_bytes, parts in ps_vars:
        parts = min(parts, rows)
        add = [0] * shards
        for p in range(parts):
            add[p * shards // parts] += (part_row0(rows, parts, p + 1)
                                         - part_row0(rows, parts, p)) * row_bytes
        offset = min(range(shards), key=lambda o: (
            max(load[(s + o) % shards] + add[s] for s in range(shards)), o))
        for s in range(shards):
            load[(s + offset) % shards] += add[s]
    return load


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def expect(folded_path, parallel_path, ranks, per_node, partitions, optimizer):
    folded = json.load(open(folded_path))
    parallel = json.load(open(parallel_path))
    values = {v["name"]: v for v in folded["values"]}
    slots = SLOTS[optimizer]
    k = per_node if 0 < per_node < ranks else ranks
    shards = (ranks + k - 1) // k
    ps_vars, cache, dense, ar_bytes = [], 0, 0, 0
    # The data's inputs: values no node produces that are not variables
    # (the recommender has no other constants a Gather reads).
    produced = {o for n in folded["nodes"] for o in n["outputs"]}
    variables = {v["name"] for v in folded["variables"]}
    graph_inputs = {name for name in values if name not in produced and name not in variables}
    for i, v in enumerate(folded["variables"]):
        rows, nbytes = v["shape"][0], v["bytes"]
        row_bytes = nbytes // rows
        if v["sync"] == "ps":
            ps_vars.append((i, rows, row_bytes, partitions if partitions > 0 else shards))
        if v["class"] == "sparse" and v["sync"] == "ps":
            gathers = [n for n in folded["nodes"]
                       if n["op"] == "Gather" and n["inputs"][0] == v["name"]]
            for n in gathers:
                idx = values[n["inputs"][1]]
                cache += numel(idx["shape"]) * (row_bytes + DTYPE_BYTES[idx["dtype"]])
            # Indices straight from the data: the next step's rows are
            # prefetched, two requests at a time, each into a buffer of one
            # row per index and one for fix-ups (a row and an int64 each).
            if all(n["inputs"][1] in graph_inputs for n in gathers):
                cache += 2 * sum(numel(values[n["inputs"][1]]["shape"]) * (2 * row_bytes + 8)
                                 for n in gathers)
            # With more than one rank the push hands a copy of its row set
            # (an int64 index and a row per gathered index) to the comm thread.
            if ranks > 1:
                cache += sum(numel(values[n["inputs"][1]]["shape"]) for n in gathers) * (
                    8 + row_bytes)
        else:
            dense += nbytes
        if v["sync"] != "ps":
            dense += slots * nbytes
        if v["sync"] == "allreduce":
            ar_bytes += nbytes
    assert ar_bytes <= 4 << 20, "more than one AllReduce bucket: not modelled here"
    dense += ar_bytes + 4 * (-(-(ar_bytes // 4) // ranks))
    load = place(ps_vars, shards)
    arena = parallel["memory"]["arena_bytes"]
    got = parallel["predicted_memory_per_rank"]
    ok = len(got) == ranks
    for r in range(ranks):
        shard_rows = load[r // k] if r % k == 0 else 0
        want = {"shard_rows": shard_rows, "optimizer_state": slots * shard_rows,
                "row_cache": cache, "dense_replicas": dense, "frozen_weights": 0,
                "activations": arena}
        want["total"] = (want["shard_rows"] + want["optimizer_state"] + dense + arena)
        have = {key: got[r][key] for key in KEYS} if r < len(got) else None
        if have != want:
            print("rank %d: inspect %s, expected %s" % (r, have, want))
            ok = False
    print("%d ranks, %d shards: shard rows %s, row cache %d, dense replicas %d, arena %d"
          % (ranks, shards, load, cache, dense, arena))
    return ok


def compare(inspect_path, stats_path, held_only):
    pred = json.load(open(inspect_path))
    stats = json.load(open(stats_path))
    ranks = stats["ranks"]
    table_bytes = sum(v["bytes"] for v in pred["variables"] if v["sync"] == "ps")
    ok = len(ranks) == len(pred["predicted_memory_per_rank"])
    held = 0
    for r, (run, want) in enumerate(zip(ranks, pred["predicted_memory_per_rank"])):
        have = run["predicted_memory_bytes"]
        held += have["shard_rows"]
        diff = [] if held_only else [k for k in KEYS if have[k] != want[k]]
        rss = run["peak_rss_bytes"]
        print("rank %d: predicted %d bytes (shard %d, state %d), peak RSS %d%s"
              % (r, have["total"], have["shard_rows"], have["optimizer_state"], rss,
                 "" if not diff else "; differs from inspect in " + ", ".join(
                     "%s: %d vs %d" % (k, have[k], want[k]) for k in diff)))
        ok = ok and not diff and rss > 0
    if held != table_bytes:
        print("the shards hold %d bytes of rows, the tables have %d" % (held, table_bytes))
        ok = False
    return ok


def rss(stats_path, slack_mib):
    ok = True
    for r in json.load(open(stats_path))["ranks"]:
        want, got = r["predicted_memory_bytes"]["total"], r["peak_rss_bytes"]
        good = want <= got <= want + slack_mib * 2**20
        print("rank %d: predicted %.1f MiB, peak RSS %.1f MiB (%+.1f MiB)%s"
              % (r["rank"], want / 2**20, got / 2**20, (got - want) / 2**20,
                 "" if good else ": outside [predicted, predicted + %d MiB]" % slack_mib))
        ok = ok and good
    return ok


def within(inspect_path, stats_path, percent):
    pred = json.load(open(inspect_path))["predicted_memory_per_rank"]
    ranks = json.load(open(stats_path))["ranks"]
    ok = len(ranks) == len(pred)
    for r, want in zip(ranks, pred):
        want, got = want["total"], r["peak_rss_bytes"]
        off = 100.0 * (got - want) / want
        good = abs(off) <= percent
        print("rank %d: inspect predicts %.1f MiB, peak RSS %.1f MiB (%+.1f%%)%s"
              % (r["rank"], want / 2**20, got / 2**20, off,
                 "" if good else ": more than %g%% off" % percent))
        ok = ok and good
    return ok


def main():
    if len(sys.argv) == 8 and sys.argv[1] == "expect":
        ok = expect(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                    int(sys.argv[6]), sys.argv[7])
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "compare":
        if len(sys.argv) == 5 and sys.argv[4] != "held-only":
            raise SystemExit(__doc__)
        ok = compare(sys.argv[2], sys.argv[3], len(sys.argv) == 5)
    elif len(sys.argv) == 5 and sys.argv[1] == "within":
        ok = within(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "rss":
        ok = rss(sys.argv[2], int(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
