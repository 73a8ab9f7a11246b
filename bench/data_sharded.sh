#!/bin/bash
# Usage: bench/data_sharded.sh PARALLAXC [WORK_DIR] [GB] [BATCH]
#
# A sharded dataset of GB gigabytes (default 21) trained for one epoch
# under `mpirun -np 4`, each rank reading only its share:
# - the dataset: px_gen_criteo (synthetic Criteo TSV) piped into
#   `parallaxc data criteo -` (the TSV never touches the disk), 26 tables of
#   100,000 rows, shards of about 64 MiB;
# - the model: examples/criteo/make_model.py (DLRM-style, DIM 4), Adam,
#   batch BATCH per rank (default 1024), 4 ranks (2 parameter-server shards: --ranks-per-node
#   2), shards permuted (--shuffle 1 --shuffle-buffer 0);
# - what each rank read: counted by the program (--stats data_bytes_read)
#   and seen from outside (tests/tools/proc_io.py: /proc/PID/io rchar, bytes
#   returned by read calls, and read_bytes, bytes fetched from the disk),
#   against 1/4 of the dataset's files (samples, headers and checksum
#   tables) plus its largest shard;
# - start-up: each rank's seconds_to_first_step (--stats), at most 5 s,
#   and the seconds from the launch of mpirun to the first step's line
#   (timestamped output; reported, not checked: it adds mpirun's and the
#   wrappers' start);
# - the order: the first 200 steps' losses against the same program on a
#   single-folder copy of the samples those steps read, in their order
#   (tests/tools/lane_order.py), byte for byte.
# Needs GB + 1 GB free in WORK_DIR (default: a mktemp -d under /work or
# /tmp), removed at the end if the bench
# passes (kept for diagnosis if it fails).
set -u
parallaxc=$(realpath "$1")
src=$(cd "$(dirname "$0")/.." && pwd)
gen=$(dirname "$parallaxc")/../tools/px_gen_criteo
work=${2:-$(mktemp -d -p "$([ -d /work ] && echo /work || echo /tmp)")}
gb=${3:-21}
batch=${4:-1024}
py=/usr/bin/python3
mkdir -p "$work"
# Removed when the bench passes; kept (and named) when it fails, for diagnosis.
passed=0
trap 'if [ $passed = 1 ]; then rm -rf "$work"; else
    echo "data_sharded.sh failed: its work folder is kept for diagnosis: $work ($(du -sh "$work" 2>/dev/null |
        cut -f1)); remove it when done" >&2; fi' EXIT
df -h "$work" | tail -1
mpi=(mpirun --allow-run-as-root --oversubscribe -np 4)
flags=(--ranks-per-node 2 --shuffle 1 --shuffle-buffer 0)

t0=$(date +%s.%N)
"$gen" - --bytes $((gb * 1000000000)) --seed 3 --scale 0.01 |
    /usr/bin/time -f "convert: %e s wall, %U s user, %S s system, %M KiB peak RSS" \
        "$parallaxc" data criteo - -o "$work/ds" --table-rows 100000 || exit 1
echo "generate + convert: $(echo "$(date +%s.%N) - $t0" | bc) s"
$py "$src/examples/criteo/make_model.py" "$work/model" --table-rows 100000 --dim 4 >/dev/null &&
    "$parallaxc" compile "$work/model/model.onnx" -o "$work/train" --batch "$batch" --optimizer adam \
        --lr 0.001 || exit 1

# One epoch, each rank under proc_io.py, the output timestamped: seconds
# since the launch, taken as each line arrives by one process (a process per
# line would fall behind, and a full pipe would stall the training).
stamp='import sys, time
t0 = float(sys.argv[1])
for line in iter(sys.stdin.readline, ""):
    sys.stdout.write("%.3f %s" % (time.time() - t0, line))
    sys.stdout.flush()'
t0=$(date +%s.%N)
"${mpi[@]}" $py "$src/tests/tools/proc_io.py" "$work/io" "$work/train" --data "$work/ds" --epochs 1 \
    "${flags[@]}" --log-every 1 --losses "$work/sharded.csv" --stats "$work/stats.json" 2>&1 |
    $py -c "$stamp" "$t0" | tee "$work/epoch.log" | grep -E " (step 1/|step [0-9]*000/|trained)"
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1

# The first 200 steps on a single-folder copy in the same order.
steps=200
$py "$src/tests/tools/lane_order.py" "$work/ds" "$work/copy" --global-batch $((4 * batch)) --steps $steps \
    --shuffle 1 --shuffle-buffer 0 || exit 1
"${mpi[@]}" "$work/train" --data "$work/copy" --steps $steps --ranks-per-node 2 --log-every 0 \
    --losses "$work/folder.csv" || exit 1

$py - "$work" $steps $((4 * batch)) <<'PY'
import glob, json, os, re, sys
work, steps, global_batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stats = json.load(open(work + "/stats.json"))
total = stats["data_bytes"]  # the samples' bytes
# Every file a rank may read: the samples, the .npy headers and each
# shard's checksum table (8 bytes per input per block: 0.66% of Criteo's
# samples), which a rank reads for the shards it reads.
files = sum(os.path.getsize(f) for f in glob.glob(work + "/ds/shard-*/*.npy"))
shard = max(sum(os.path.getsize(f) for f in glob.glob(d + "/*.npy"))
            for d in glob.glob(work + "/ds/shard-*"))
first = min(float(l.split()[0]) for l in open(work + "/epoch.log") if re.search(r" step 1/", l))
print("dataset: %.2f GB of samples (%.2f GB of files with the checksum tables) in %d shards "
      "(largest %.1f MB); %d steps of %d samples at %.0f samples/s"
      % (total / 1e9, files / 1e9, len(glob.glob(work + "/ds/shard-*")), shard / 1e6,
         stats["steps"], global_batch, stats["samples_per_second"]))
print("launch of mpirun to the first step's line: %.2f s (mpirun, the proc_io.py wrappers, "
      "the programs' loading and start-up)" % first)
ok = True
limit = files / 4 + shard
for r in stats["ranks"]:
    io = json.load(open("%s/io.%d" % (work, r["rank"])))
    print("rank %d: read %.3f GB (%.2f%% of the samples' bytes, %.2f%% of the files'; limit 1/4 "
          "of the files + a shard: %.3f GB), /proc rchar %.3f GB, from disk %.3f GB; first step "
          "%.2f s after its start" % (
              r["rank"], r["data_bytes_read"] / 1e9, 100 * r["data_bytes_read"] / total,
              100 * r["data_bytes_read"] / files, limit / 1e9, io["rchar"] / 1e9,
              io["read_bytes"] / 1e9, r["seconds_to_first_step"]))
    ok &= r["data_bytes_read"] <= limit and io["rchar"] <= limit + 64e6
    ok &= r["seconds_to_first_step"] <= 5
a = open(work + "/sharded.csv").read().splitlines()[:steps + 1]
b = open(work + "/folder.csv").read().splitlines()[:steps + 1]
same = a == b and len(a) == steps + 1
print("losses of the first %d steps, shards vs a single folder in the same order: %s"
      % (steps, "identical" if same else "DIFFERENT"))
ok &= same
print("targets (each rank's start-up <= 5 s, each rank <= 1/4 + one shard, same losses): %s"
      % ("met" if ok else "NOT met"))
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] || exit 1
passed=1
