#!/bin/bash
# Usage: bench/big_model.sh PARALLAXC [WORK_DIR] [ROWS]
#
# Measures issue 9's "Done when" on a model with >= 6 GiB of embedding
# tables (default 2 x 25,000,000 x 32 floats = 6.4 GB, ONNX external data,
# written by examples/big_recommender/generate.py): compile time and program
# size; 4 ranks, 4 shards (mpirun -np 4 --ranks-per-node 1) training 20 SGD
# steps with each rank's peak RSS measured from outside
# (tests/tools/peak_rss.py) against 1.15 x (its shard's rows + optimizer
# state) + dense replicas + 512 MiB, its shard's bytes taken from its
# checkpoint piece; the losses and the --save (external data, automatic above
# 2 GiB) against the NumPy reference (tests/tools/big_reference.py);
# checkpoint at step 10 + resume to 20 against the uninterrupted run, byte
# for byte; bytes per rank per step (--stats); peak RSS with --partitions 4.
# Needs ~20 GB free in WORK_DIR (default: a mktemp -d under /tmp), which is
# removed at the end.
set -u
parallaxc=$(realpath "$1")
src=$(cd "$(dirname "$0")/.." && pwd)
work=${2:-$(mktemp -d)}
rows=${3:-25000000}
py=/usr/bin/python3
dim=32
batch=64
steps=20
mib=1048576
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
df -h "$work" | tail -1
run4() { # PREFIX ARGS...: 4 ranks, 4 shards, peak RSS per rank in PREFIX.<rank>
    local prefix=$1
    shift
    mpirun --allow-run-as-root --oversubscribe -np 4 "$py" "$src/tests/tools/peak_rss.py" \
        "$prefix" "$work/prog" --data "$work/m/data" --ranks-per-node 1 --log-every 0 "$@"
}
t0=$(date +%s.%N)
"$py" "$src/examples/big_recommender/generate.py" "$work/m" --rows $rows --dim $dim \
    --samples 8192 || exit 1
t1=$(date +%s.%N)
echo "generate: $(echo "$t1 - $t0" | bc) s, $(du -b "$work/m/model.onnx.data" | cut -f1) bytes of external data"
t0=$(date +%s.%N)
"$parallaxc" compile "$work/m/model.onnx" -o "$work/prog" --batch $batch --optimizer sgd \
    --lr 0.5 || exit 1
t1=$(date +%s.%N)
echo "compile: $(echo "$t1 - $t0" | bc) s, program $(stat -c %s "$work/prog") bytes"

mkdir -p "$work/end" "$work/a" "$work/b"
t0=$(date +%s.%N)
run4 "$work/rss" --steps $steps --losses "$work/full.csv" --stats "$work/stats.json" \
    --save "$work/a/out.onnx" --checkpoint "$work/end/ck" || exit 1
t1=$(date +%s.%N)
echo "train $steps steps + checkpoint + save: $(echo "$t1 - $t0" | bc) s"
ls -l "$work/a"
"$py" - "$work" "$mib" <<'PY'
import glob, json, os, sys
work, mib = sys.argv[1], int(sys.argv[2])
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    hasattr(np, a) or setattr(np, a, t)
import onnx
m = onnx.load(os.path.join(work, "m/model.onnx"), load_external_data=False)
dense = sum(4 * int(np.prod(t.dims)) for t in m.graph.initializer
            if t.data_location != onnx.TensorProto.EXTERNAL and t.data_type == 1)
stats = json.load(open(os.path.join(work, "stats.json")))
print("rank  shard rows (ckpt piece)  dense  peak RSS  predicted (--stats)  bound  bytes sent/recv per step (pull+push+allreduce)")
for r in range(4):
    piece = glob.glob(os.path.join(work, "end", "ck.*.%d" % r))
    shard = os.path.getsize(piece[0]) if piece else 0  # SGD: no optimizer state
    rss = int(open(os.path.join(work, "rss.%d" % r)).read())
    bound = 1.15 * shard + dense + 512 * mib
    s = stats["ranks"][r]
    sent = sum(s["bytes_sent_per_step"][k] for k in ("allreduce", "ps_pull", "ps_push"))
    recv = sum(s["bytes_received_per_step"][k] for k in ("allreduce", "ps_pull", "ps_push"))
    pred = s["predicted_memory_bytes"]["total"]
    print("%d  %8.1f MiB  %6.3f MiB  %8.1f MiB  %8.1f MiB (%+.1f)  %8.1f MiB  %s  %d / %d" % (
        r, shard / mib, dense / mib, rss / mib, pred / mib, (rss - pred) / mib, bound / mib,
        "OK" if rss <= bound else "OVER", sent, recv))
print("samples/s %.1f, partitions chosen %s" % (stats["samples_per_second"],
                                                stats.get("partitions_chosen")))
PY
rm -rf "$work/end"
"$py" "$src/tests/tools/big_reference.py" "$work/m" --batch $((4 * batch)) --steps $steps \
    --lr 0.5 --losses "$work/full.csv" --saved "$work/a/out.onnx"
"$py" "$src/tests/tools/onnx_check.py" "$work/a/out.onnx" 2>&1 | tail -1

mkdir -p "$work/ck"
run4 "$work/rss_part" --steps $((steps / 2)) --losses "$work/res.csv" --checkpoint "$work/ck/ck" ||
    exit 1
rm -f "$work/a/out.onnx.data.tmp"
run4 "$work/rss_res" --steps $steps --losses "$work/res.csv" --resume "$work/ck/ck" \
    --save "$work/b/out.onnx" || exit 1
cmp "$work/full.csv" "$work/res.csv" && echo "resume: losses identical"
cmp "$work/a/out.onnx" "$work/b/out.onnx" && cmp "$work/a/out.onnx.data" "$work/b/out.onnx.data" &&
    echo "resume: --save identical (model and external data)"
for r in 0 1 2 3; do
    echo "rank $r peak RSS: checkpointing run $(($(cat "$work/rss_part.$r") / mib)) MiB," \
        "resumed run $(($(cat "$work/rss_res.$r") / mib)) MiB"
done
# Fixed partitions, one per shard and table: nothing moves between shards.
run4 "$work/rss_p4" --steps $steps --partitions 4 --losses "$work/p4.csv" || exit 1
cmp "$work/full.csv" "$work/p4.csv" && echo "--partitions 4: the same losses as auto"
for r in 0 1 2 3; do
    echo "rank $r peak RSS with --partitions 4: $(($(cat "$work/rss_p4.$r") / mib)) MiB"
done
