#!/bin/bash
# Usage: data_sharded.sh PARALLAXC SRCDIR
# Sharded datasets (docs/data.md) read by a training program: the
# recommender example's data converted by `parallaxc data csv` into KB-sized
# shards, trained under 2 ranks:
# - the order: byte-identical losses to a single-folder copy whose plain
#   order tests/tools/lane_order.py computed from the definition (NumPy,
#   its own generator), unshuffled, shuffled with a buffer (2 and 4
#   ranks), shards only;
#   1 rank at the global batch follows 2 ranks; validation on shards gives
#   the folder copy's loss; --accumulate on shards reads the copy's order;
# - resume mid-epoch, shuffled: byte-identical losses and model;
# - what each rank read: counted by the program (--stats data_bytes_read)
#   <= half the bytes + one shard, and checked from outside (/proc/PID/io
#   rchar: the sharded run's minus the same run's on the folder copy);
# - damage: a shard missing, truncated, altered; a manifest from another
#   dataset; an altered manifest; an unfinished conversion; a bad flag.
. "$(dirname "$0")/lib.sh" "$@"
mpi() { timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$@"; }
ex=$src/examples/recommender
steps=150 # past two epochs of 64 steps (512 samples, global batch 8)

# The example's data as CSV, converted into 6 shards of 100 rows (the last 12).
"$py" - "$ex/data" "$tmp" <<'PY' || exit 1
import os, sys
import numpy as np
src, out = sys.argv[1], sys.argv[2]
names = ["category", "dense", "history", "item", "label", "user"]
arrays = [np.load(os.path.join(src, n + ".npy")) for n in names]
schema = []
for n, a in zip(names, arrays):
    kind = "float32" if a.dtype == np.float32 else "int64"
    schema.append(n + ":" + kind + (":%d" % a.shape[1] if a.ndim > 1 else ""))
with open(os.path.join(out, "schema"), "w") as f:
    f.write(",".join(schema))
with open(os.path.join(out, "rec.csv"), "w") as f:
    for i in range(len(arrays[0])):
        f.write(",".join(repr(float(v)) if a.dtype == np.float32 else str(int(v))
                         for a in arrays for v in a[i].reshape(-1)) + "\n")
PY
check "csv into shards" "$parallaxc" data csv "$tmp/rec.csv" --schema "$(cat "$tmp/schema")" \
    -o "$tmp/sh" --shard-rows 100 --block-rows 8 --quiet
check "compile (batch 4)" "$parallaxc" compile "$ex/model.onnx" -o "$tmp/p4" --batch 4 \
    --optimizer adam --lr 0.01
check "compile (batch 2)" "$parallaxc" compile "$ex/model.onnx" -o "$tmp/p2" --batch 2 \
    --optimizer adam --lr 0.01
check "compile (batch 8)" "$parallaxc" compile "$ex/model.onnx" -o "$tmp/p8" --batch 8 \
    --optimizer adam --lr 0.01

order_case() { # LABEL RANKS ORDER-FLAGS...: RANKS x batch 8/RANKS
    local label=$1 n=$2
    shift 2
    local prog=$tmp/p$((8 / n))
    rm -rf "$tmp/copy"
    check "$label: lane_order.py copy" "$py" "$src/tests/tools/lane_order.py" "$tmp/sh" \
        "$tmp/copy" --global-batch 8 --steps $steps "$@" || return
    check "$label: $n ranks on shards" mpi $n "$prog" --data "$tmp/sh" --steps $steps \
        --log-every 0 --losses "$tmp/shards.csv" "$@" || return
    check "$label: $n ranks on the copy" mpi $n "$prog" --data "$tmp/copy" --steps $steps \
        --log-every 0 --losses "$tmp/copy.csv" || return
    check "$label: same losses, byte for byte" cmp "$tmp/shards.csv" "$tmp/copy.csv"
}
order_case "in order" 2
order_case "shuffled, buffer 40" 2 --shuffle 5 --shuffle-buffer 40
order_case "shuffled, buffer 40, 4 ranks" 4 --shuffle 5 --shuffle-buffer 40
order_case "shards permuted only" 2 --shuffle 7 --shuffle-buffer 0

check "1 rank at batch 8" timeout 60 "$tmp/p8" --data "$tmp/sh" --steps $steps --log-every 0 \
    --losses "$tmp/one.csv" --shuffle 7 --shuffle-buffer 0
check "1 rank at batch 8 follows 2 ranks at 4" "$py" - "$tmp/one.csv" "$tmp/shards.csv" <<'PY'
import sys
import numpy as np
a, b = (np.loadtxt(p, delimiter=",", skiprows=1)[:, 1] for p in sys.argv[1:])
err = np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-3))
sys.exit(0 if len(a) == 150 and err < 1e-5 else "relative error %g" % err)
PY

# --accumulate 2 on shards: micro-batch m of a rank reads slot m * ranks +
# rank of the global batch, as on a single folder (the last copy: global
# batch 8, shards permuted with seed 7).
for data in sh copy; do
    check "--accumulate 2 at batch 4, 1 rank, on the $data" timeout 60 "$tmp/p4" \
        --data "$tmp/$data" --steps $steps --log-every 0 --accumulate 2 \
        --losses "$tmp/acc_$data.csv" $([ $data = sh ] && echo --shuffle 7 --shuffle-buffer 0)
done
check "--accumulate 2 on shards: the copy's losses, byte for byte" cmp "$tmp/acc_sh.csv" \
    "$tmp/acc_copy.csv"

# Validation reads shards too: the same loss as the folder copy's (the same
# samples, grouped into other batches).
check "validation on shards and on the copy" bash -c "
    mpi() { timeout 120 mpirun --allow-run-as-root --oversubscribe -np \"\$@\"; }
    mpi 2 '$tmp/p4' --data '$tmp/sh' --steps 3 --log-every 0 --eval-data '$tmp/sh' \
        --eval-log '$tmp/ev_sh.csv' &&
    mpi 2 '$tmp/p4' --data '$tmp/sh' --steps 3 --log-every 0 --eval-data '$ex/data' \
        --eval-log '$tmp/ev_dir.csv' &&
    '$py' -c \"
import sys, numpy as np
a, b = (np.loadtxt(p, delimiter=',', skiprows=1)[1] for p in sys.argv[1:])
sys.exit(0 if abs(a - b) <= 1e-6 * abs(b) else 'eval loss %r vs %r' % (a, b))\" \
        '$tmp/ev_sh.csv' '$tmp/ev_dir.csv'"

# Resume mid-epoch (step 37 of 64), shuffled through the buffers.
flags=(--shuffle 3 --shuffle-buffer 100 --log-every 0)
check "resume: uninterrupted" mpi 2 "$tmp/p4" --data "$tmp/sh" --steps 100 "${flags[@]}" \
    --losses "$tmp/full.csv" --save "$tmp/full.onnx"
check "resume: 37 steps + checkpoint" mpi 2 "$tmp/p4" --data "$tmp/sh" --steps 37 \
    "${flags[@]}" --losses "$tmp/part.csv" --checkpoint "$tmp/ck"
check "resume: to 100" mpi 2 "$tmp/p4" --data "$tmp/sh" --steps 100 "${flags[@]}" \
    --losses "$tmp/part.csv" --resume "$tmp/ck" --save "$tmp/part.onnx"
check "resume: same losses, byte for byte" cmp "$tmp/full.csv" "$tmp/part.csv"
check "resume: same model, byte for byte" cmp "$tmp/full.onnx" "$tmp/part.onnx"
if mpi 2 "$tmp/p4" --data "$tmp/sh" --steps 100 --shuffle 3 --shuffle-buffer 99 --log-every 0 \
    --resume "$tmp/ck" >"$tmp/refused.log" 2>&1; then
    fail "resume with another --shuffle-buffer is refused"
else
    check "resume with another --shuffle-buffer is refused" grep -q "shuffle-buffer 100" \
        "$tmp/refused.log"
fi

# What each rank read in one epoch: counted, and seen from outside.
io() { # PREFIX DATA STATS
    mpi 2 "$py" "$src/tests/tools/proc_io.py" "$1" "$tmp/p4" --data "$2" --epochs 1 \
        --log-every 0 --stats "$3"
}
check "one epoch on shards, /proc/PID/io" io "$tmp/io_sh" "$tmp/sh" "$tmp/st_sh.json"
check "one epoch on the copy, /proc/PID/io" io "$tmp/io_dir" "$tmp/copy" "$tmp/st_dir.json"
check "each rank read its half and one shard at most" "$py" - "$tmp" <<'PY'
import glob, json, os, sys
tmp = sys.argv[1]
stats = json.load(open(tmp + "/st_sh.json"))
total = stats["data_bytes"]
# a shard: its files, the checksum table included
shard = max(sum(os.path.getsize(f) for f in glob.glob(d + "/*.npy"))
            for d in glob.glob(tmp + "/sh/shard-*"))
for r in stats["ranks"]:
    rank, counted = r["rank"], r["data_bytes_read"]
    seen = [json.load(open("%s/io_%s.%d" % (tmp, kind, rank)))["rchar"] for kind in ("sh", "dir")]
    outside = seen[0] - seen[1]  # the folder copy is mapped, not read
    print("rank %d: counted %d, outside %d, limit %d" % (rank, counted, outside,
                                                         total // 2 + shard))
    if not counted <= total // 2 + shard or abs(outside - counted) > 2048:
        sys.exit("rank %d read too much, or counts what it did not read" % rank)
PY

# Damage: every case fails naming what is wrong, before or as it is read.
refused() { # LABEL PATTERN DATA [FLAGS...]
    local label=$1 pattern=$2 data=$3
    shift 3
    if mpi 2 "$tmp/p4" --data "$data" --steps 100 --log-every 0 "$@" >"$tmp/log" 2>&1; then
        fail "$label: accepted"
    elif grep -q -- "$pattern" "$tmp/log"; then
        pass "$label: refused"
    else
        fail "$label: message: $(head -c 600 "$tmp/log")"
    fi
}
damaged() { # NAME: a fresh copy of the shards
    rm -rf "$tmp/$1"
    cp -r "$tmp/sh" "$tmp/$1"
}
damaged missing
rm -r "$tmp/missing/shard-00004"
refused "a shard missing" "shard-00004/.*missing" "$tmp/missing"
damaged trunc
truncate -s -8 "$tmp/trunc/shard-00002/dense.npy"
refused "a shard truncated" "shard-00002/dense.npy holds" "$tmp/trunc"
damaged altered
printf '\x7f' | dd of="$tmp/altered/shard-00003/user.npy" bs=1 seek=200 conv=notrunc status=none
refused "a shard altered" "shard-00003/user.npy: rows .* do not match their checksum" \
    "$tmp/altered"
check "another dataset (shards of 60 rows)" "$parallaxc" data csv "$tmp/rec.csv" \
    --schema "$(cat "$tmp/schema")" -o "$tmp/other" --shard-rows 60 --block-rows 8 --quiet
damaged foreign
cp "$tmp/other/manifest.txt" "$tmp/foreign/manifest.txt"
refused "a manifest from another dataset" "belongs to another dataset" "$tmp/foreign"
damaged edited
sed -i 's/^samples 512$/samples 511/' "$tmp/edited/manifest.txt"
refused "an altered manifest" "does not match its checksum" "$tmp/edited"
damaged unfinished
rm "$tmp/unfinished/manifest.txt"
touch "$tmp/unfinished/.parallax-convert"
refused "an unfinished conversion" "unfinished conversion" "$tmp/unfinished"
# An output never replaces a file of the sharded dataset it reads.
cp "$tmp/sh/manifest.txt" "$tmp/manifest.before"
cp "$tmp/sh/shard-00001/dense.npy" "$tmp/dense.before"
refused "--losses at the manifest" "is one of the inputs" "$tmp/sh" --losses "$tmp/sh/manifest.txt"
refused "--save at a shard's file" "is one of the inputs" "$tmp/sh" \
    --save "$tmp/sh/shard-00001/dense.npy"
check "the manifest unchanged" cmp "$tmp/sh/manifest.txt" "$tmp/manifest.before"
check "the shard's file unchanged" cmp "$tmp/sh/shard-00001/dense.npy" "$tmp/dense.before"
refused "--shuffle-buffer on a folder" "applies to sharded datasets" "$ex/data" --shuffle 1 \
    --shuffle-buffer 8
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
