#!/bin/bash
# Usage: examples/criteo/run.sh [WORK_DIR]
#
# The Criteo pipeline from raw click logs to AUC, on synthetic data:
#   px_gen_criteo (synthetic Criteo-format TSV) -> parallaxc data criteo
#   (sharded train/eval datasets) -> make_model.py (a DLRM-style ONNX model
#   with tables of --table-rows rows) -> parallaxc compile -> mpirun
#   training, validated every EVAL_EVERY steps with --eval-metrics
#   auc,logloss,accuracy -> the AUC curve (WORK_DIR/eval.csv) and what each
#   rank read (WORK_DIR/stats.json).
# Settings (environment): LINES (default 2000000), RANKS (2), BATCH (256 per
# rank), TABLE_ROWS (100000: one count for all 26 tables, or 26), DIM (16),
# EPOCHS (1), EVAL_EVERY (200), LR (0.001, Adam), SCALE (0.01: the synthetic
# cardinalities as a fraction of Criteo's), PARALLAXC, GEN (the tools, found
# in ./build by default). WORK_DIR defaults to a fresh folder under /tmp,
# kept.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d /tmp/criteo.XXXXXX)}
parallaxc=${PARALLAXC:-$src/build/compiler/parallaxc}
gen=${GEN:-$src/build/tools/px_gen_criteo}
lines=${LINES:-2000000}
ranks=${RANKS:-2}
batch=${BATCH:-256}
rows=${TABLE_ROWS:-100000}
dim=${DIM:-16}
epochs=${EPOCHS:-1}
eval_every=${EVAL_EVERY:-200}
lr=${LR:-0.001}
scale=${SCALE:-0.01}
mkdir -p "$work"
cd "$work"
step() { printf '\n== %s\n' "$*"; }

step "synthetic click logs: $lines lines"
/usr/bin/time -f "%e s wall, %U s user" "$gen" day_0.tsv --lines "$lines" --seed 1 --scale "$scale"
ls -l day_0.tsv

step "parallaxc data criteo -> train/ and eval/"
rm -rf data
/usr/bin/time -f "%e s wall, %U s user, %M KiB peak RSS" \
    "$parallaxc" data criteo day_0.tsv -o data --table-rows "$rows" --split train=0.9,eval=0.1

step "a DLRM-style model: 26 tables of $rows rows x $dim"
/usr/bin/python3 "$src/examples/criteo/make_model.py" model --table-rows "$rows" --dim "$dim"
"$parallaxc" compile model/model.onnx -o train --batch "$batch" --optimizer adam --lr "$lr"

step "training on $ranks ranks, batch $batch per rank"
mpirun --allow-run-as-root --oversubscribe -np "$ranks" ./train --data data/train \
    --epochs "$epochs" --shuffle 1 --log-every 100 --eval-data data/eval --eval-every "$eval_every" \
    --eval-metrics auc,logloss,accuracy --eval-log eval.csv --losses losses.csv --stats stats.json

step "AUC on the evaluation split (eval.csv)"
column -s, -t eval.csv
/usr/bin/python3 - stats.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("%.0f samples/s; the dataset's files: %d bytes" % (s["samples_per_second"], s["data_bytes"]))
for r in s["ranks"]:
    print("rank %d read %d bytes (%.1f%%), first step after %.2f s" % (
        r["rank"], r["data_bytes_read"], 100.0 * r["data_bytes_read"] / s["data_bytes"],
        r["seconds_to_first_step"]))
PY
echo "work folder: $work"
