#!/bin/bash
# Usage: no_harm.sh PARALLAXC SRCDIR
#
# Nothing a user points Parallax at gets destroyed (docs/faults.md, "Outputs
# and inputs"):
#   - every output flag of a training program (--save-infer included), an
#     inference program and the compiler (compile, inspect, report), pointed
#     at every input of its run
#     (the program or parallaxc itself, the model and its external data, the
#     data and evaluation files, the checkpoint being resumed and its piece,
#     the runtime libraries), exits 2 with a message naming both, and every
#     input stays byte for byte as it was;
#   - every output flag pointed at a character device this test makes with
#     mknod (never the machine's own /dev/null) leaves it a device: /dev/null's
#     twin takes the output (status 0), /dev/full's reports "No space left on
#     device" (status 1); a checkpoint is refused on a device (status 2);
#   - a run that fails (NaN in its data) leaves the model --save-infer wrote
#     before byte for byte as it was, and no temporary beside it;
#   - outputs on a FIFO are refused, and a FIFO as a checkpoint piece or as
#     external data is refused, not waited on;
#   - NaN in the evaluation data stops the run with status 1, as NaN in the
#     training data does, and nothing non-finite reaches the eval log.
# The inputs are copies in a temporary folder, and parallaxc and the
# runtime libraries are reached through symbolic links there: were a check
# to fail, only those copies and links would be replaced.
# Prints PASS/FAIL lines, then "N passed, M failed".
. "$(dirname "$0")/../cli/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(cd "$tmp" && pwd -P) # messages name resolved paths
parallaxc=$(readlink -f "$parallaxc")
ex=$src/examples/mlp

# ---- the run's files -----------------------------------------------------------
mkdir -p "$tmp/m" "$tmp/data" "$tmp/eval" "$tmp/out"
cp "$ex"/data/*.npy "$tmp/data/" && cp "$ex"/data/*.npy "$tmp/eval/"
# The MLP with its weights as external data (model.onnx + model.onnx.data).
"$py" - "$ex/model.onnx" "$tmp/m/model.onnx" <<'PY' || exit 1
import sys
import numpy as np
for n, t in [("float", float), ("int", int), ("bool", bool), ("object", object)]:
    setattr(np, n, t)
import onnx
m = onnx.load(sys.argv[1])
onnx.save(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True,
          location="model.onnx.data", size_threshold=0)
PY
model=$tmp/m/model.onnx
"$parallaxc" compile "$model" -o "$tmp/train" --batch 8 >"$tmp/c.log" 2>&1 &&
    "$parallaxc" compile "$model" --infer --outputs loss -o "$tmp/infer" --batch 8 >>"$tmp/c.log" 2>&1 ||
    {
        cat "$tmp/c.log"
        exit 1
    }
"$tmp/train" --data "$tmp/data" --steps 2 --log-every 0 --checkpoint "$tmp/ck" >"$tmp/ck.log" 2>&1 ||
    {
        cat "$tmp/ck.log"
        exit 1
    }
piece=$(ls "$tmp"/ck.*.0)
inputs=("$tmp/train" "$model" "$model.data" "$tmp/data/x.npy" "$tmp/data/y.npy" "$tmp/eval/x.npy"
    "$tmp/ck" "$piece")
snapshot() { sha256sum "${inputs[@]}" "$tmp/infer" 2>&1; }
before=$(snapshot)
intact() { [ "$(snapshot)" = "$before" ]; }

# refused NAME WANT_STATUS FLAG TARGET CMD...: CMD ends with WANT_STATUS (at
# most 60 s), its message names FLAG and TARGET, and every input is intact.
refused() {
    local name=$1 want=$2 flag=$3 target=$4 rc
    shift 4
    timeout -k 5 60 "$@" >"$tmp/run.log" 2>&1 </dev/null
    rc=$?
    if [ $rc -ne "$want" ]; then
        fail "$name: status $rc (want $want): $(head -c 300 "$tmp/run.log")"
    elif ! grep -q -F -- "$flag" "$tmp/run.log" || ! grep -q -F -- "$target" "$tmp/run.log"; then
        fail "$name: the message does not name $flag and $target: $(head -c 300 "$tmp/run.log")"
    elif ! intact; then
        fail "$name: an input changed"
        before=$(snapshot)
    else
        pass "$name: $(grep -m1 -F -- "$flag" "$tmp/run.log" | head -c 200)"
    fi
}

# ---- a training program: every output flag against every input -------------------
run=("$tmp/train" --data "$tmp/data" --eval-data "$tmp/eval" --resume "$tmp/ck" --steps 4 --log-every 0)
for flag in --losses --stats --save --keep-best --checkpoint --eval-log --trace; do
    for input in "${inputs[@]}"; do
        # --checkpoint may be the checkpoint it continues (a new manifest and
        # pieces, the old ones removed once it is whole): not a clash.
        [ "$flag" = --checkpoint ] && [ "$input" = "$tmp/ck" ] && continue
        refused "train $flag at $(basename "$input")" 2 "$flag" "$input" "${run[@]}" "$flag" "$input"
    done
done
# --save-infer (a model to serve, of --outputs) against every input, and
# against the checkpoint the run writes.
for input in "${inputs[@]}"; do
    refused "train --save-infer at $(basename "$input")" 2 "--save-infer" "$input" "${run[@]}" \
        --outputs loss --save-infer "$input"
done
refused "train --save-infer at the run's own --checkpoint" 2 "--save-infer" "--checkpoint" \
    "${run[@]}" --outputs loss --checkpoint "$tmp/ck2" --save-infer "$tmp/ck2"
# A run that fails (NaN in its data stops it at step 1) leaves the model
# --save-infer wrote before as it was.
mkdir -p "$tmp/nan_data"
"$py" - "$tmp/data" "$tmp/nan_data" <<'PY' || fail "making NaN training data"
import sys
import numpy as np
x = np.load(sys.argv[1] + "/x.npy")
x[:, 0] = np.nan
np.save(sys.argv[2] + "/x.npy", x)
np.save(sys.argv[2] + "/y.npy", np.load(sys.argv[1] + "/y.npy"))
PY
"$tmp/train" --data "$tmp/data" --steps 2 --log-every 0 --outputs loss \
    --save-infer "$tmp/served.onnx" >"$tmp/run.log" 2>&1 || fail "--save-infer: $(head -c 300 "$tmp/run.log")"
served=$(sha256sum "$tmp/served.onnx" 2>&1)
timeout -k 5 60 "$tmp/train" --data "$tmp/nan_data" --steps 2 --log-every 0 --outputs loss \
    --save-infer "$tmp/served.onnx" >"$tmp/run.log" 2>&1 </dev/null
rc=$?
if [ $rc -eq 1 ] && [ "$(sha256sum "$tmp/served.onnx" 2>&1)" = "$served" ] &&
    [ -z "$(find "$tmp" -maxdepth 1 -name 'served.onnx.tmp*')" ]; then
    pass "a failed run leaves --save-infer's earlier model whole: status 1, $(grep -m1 -i "nan" "$tmp/run.log" | head -c 120)"
else
    fail "a failed run and --save-infer's earlier model: status $rc, $(head -c 300 "$tmp/run.log")"
fi

# The inference program: its outputs (OUT/<output>.npy) against its inputs;
# a link planted where an output goes leads to an input.
ln -s "$tmp/data/x.npy" "$tmp/out/loss.npy"
refused "infer --out at an input (through a link)" 2 "--out" "$tmp/data/x.npy" \
    "$tmp/infer" --data "$tmp/data" --out "$tmp/out"
rm -f "$tmp/out/loss.npy"
ln -s "$tmp/infer" "$tmp/out/loss.npy"
refused "infer --out at the program itself (through a link)" 2 "--out" "$tmp/infer" \
    "$tmp/infer" --data "$tmp/data" --out "$tmp/out"
rm -f "$tmp/out/loss.npy"

# ---- the compiler: every output against every input --------------------------------
# parallaxc and the runtime libraries through links in tmp (the same files;
# named .onnx, a format --emit-graph knows).
rt=$(cd "$(dirname "$parallaxc")/../runtime" && pwd -P)
ln -s "$parallaxc" "$tmp/parallaxc.onnx"
ln -s "$rt/libpx_runtime.a" "$tmp/runtime.onnx"
ln -s "$rt/libpx_main.a" "$tmp/main.onnx"
for input in "$model" "$model.data" "$tmp/parallaxc.onnx" "$tmp/runtime.onnx" "$tmp/main.onnx"; do
    real=$(readlink -f "$input")
    refused "compile -o at $(basename "$input")" 2 "-o" "$real" \
        "$parallaxc" compile "$model" -o "$input" --batch 8
    refused "compile --emit-graph at $(basename "$input")" 2 "--emit-graph" "$real" \
        "$parallaxc" compile "$model" -o "$tmp/p" --emit-graph "$input" --batch 8
    refused "compile PX_EMIT_LLVM at $(basename "$input")" 2 "PX_EMIT_LLVM" "$real" \
        env PX_EMIT_LLVM="$input" "$parallaxc" compile "$model" -o "$tmp/p" --batch 8
    # inspect reads no runtime library
    case $input in */runtime.onnx | */main.onnx) continue ;; esac
    refused "inspect -o at $(basename "$input")" 2 "-o" "$real" \
        "$parallaxc" inspect "$model" --format json -o "$input"
done
# --emit-graph with a format of its own (the extension) over the model's copy
cp "$model" "$tmp/m/copy.onnx"
refused "compile -o and --emit-graph on one file" 2 "--emit-graph" "$tmp/m/copy.onnx" \
    "$parallaxc" compile "$model" -o "$tmp/m/copy.onnx" --emit-graph "$tmp/m/copy.onnx" --batch 8
"$tmp/train" --data "$tmp/data" --steps 2 --log-every 0 --run-dir "$tmp/rd" >/dev/null 2>&1
refused "report -o at the run's losses.csv" 1 "-o" "$tmp/rd/losses.csv" \
    "$parallaxc" report "$tmp/rd" -o "$tmp/rd/losses.csv"

# ---- character devices, made here ----------------------------------------------------
is_device() { [ "$(stat -c %F "$1" 2>/dev/null)" = "character special file" ]; }
# device NAME WANT PATTERN NODE CMD...: CMD ends with WANT and a line matching
# PATTERN; NODE is still a character device.
device() {
    local name=$1 want=$2 pattern=$3 node=$4 rc
    shift 4
    timeout -k 5 60 "$@" >"$tmp/run.log" 2>&1 </dev/null
    rc=$?
    if ! is_device "$node"; then
        fail "$name: $node is no longer a device ($(stat -c %F "$node" 2>&1))"
    elif [ $rc -ne "$want" ]; then
        fail "$name: status $rc (want $want): $(head -c 300 "$tmp/run.log")"
    elif [ -n "$pattern" ] && ! grep -q -E -- "$pattern" "$tmp/run.log"; then
        fail "$name: no line matches /$pattern/: $(head -c 300 "$tmp/run.log")"
    elif [ -n "$(find "$tmp/dev" ! -type c ! -type d)" ]; then
        fail "$name: files were made next to the device: $(find "$tmp/dev" ! -type c ! -type d)"
    else
        pass "$name: status $rc, still a device"
    fi
}
mkdir -p "$tmp/dev"
made=1
for ext in "" .onnx .txt .html .ll; do
    mknod "$tmp/dev/null$ext" c 1 3 2>/dev/null && mknod "$tmp/dev/full$ext" c 1 7 2>/dev/null || made=0
done
if [ $made = 1 ]; then
    nospace="No space left on device"
    train=("$tmp/train" --data "$tmp/data" --eval-data "$tmp/eval" --steps 4 --log-every 0)
    device "train: every output on one null" 0 "" "$tmp/dev/null" "${train[@]}" \
        --losses "$tmp/dev/null" --stats "$tmp/dev/null" --save "$tmp/dev/null" \
        --keep-best "$tmp/dev/null" --eval-log "$tmp/dev/null" --trace "$tmp/dev/null" \
        --save-infer "$tmp/dev/null" --outputs loss
    for flag in --losses --stats --save --keep-best --eval-log --trace --save-infer; do
        extra=()
        [ $flag = --save-infer ] && extra=(--outputs loss)
        device "train $flag full" 1 "$nospace" "$tmp/dev/full" "${train[@]}" "$flag" "$tmp/dev/full" \
            "${extra[@]}"
    done
    device "train --checkpoint null: refused" 2 "--checkpoint .*character device" "$tmp/dev/null" \
        "${train[@]}" --checkpoint "$tmp/dev/null"
    device "train --save-external null: refused" 2 "--save .*character device" "$tmp/dev/null" \
        "${train[@]}" --save "$tmp/dev/null" --save-external
    # The printers of --emit-graph are inspect's: each format through inspect,
    # two through compile (the one writer of every output).
    device "compile: -o, --emit-graph and PX_EMIT_LLVM on nulls" 0 "" "$tmp/dev/null" \
        env PX_EMIT_LLVM="$tmp/dev/null.ll" "$parallaxc" compile "$model" -o "$tmp/dev/null" \
        --emit-graph "$tmp/dev/null.txt" --batch 8
    is_device "$tmp/dev/null.ll" && is_device "$tmp/dev/null.txt" &&
        pass "compile: the nulls of --emit-graph and PX_EMIT_LLVM are still devices" ||
        fail "compile: --emit-graph or PX_EMIT_LLVM replaced its null"
    device "compile --emit-graph null.onnx" 0 "" "$tmp/dev/null.onnx" \
        "$parallaxc" compile "$model" -o "$tmp/p" --emit-graph "$tmp/dev/null.onnx" --batch 8
    device "compile -o full" 1 "-o: .*$nospace" "$tmp/dev/full" \
        "$parallaxc" compile "$model" -o "$tmp/dev/full" --batch 8
    for ext in .onnx .txt; do
        device "compile --emit-graph full$ext" 1 "$nospace" "$tmp/dev/full$ext" \
            "$parallaxc" compile "$model" -o "$tmp/p" --emit-graph "$tmp/dev/full$ext" --batch 8
    done
    device "compile PX_EMIT_LLVM full" 1 "$nospace" "$tmp/dev/full.ll" \
        env PX_EMIT_LLVM="$tmp/dev/full.ll" "$parallaxc" compile "$model" -o "$tmp/p" --batch 8
    for fmt in text json dot onnx; do
        device "inspect --format $fmt -o null" 0 "" "$tmp/dev/null" \
            "$parallaxc" inspect "$model" --batch 8 --format "$fmt" -o "$tmp/dev/null"
        device "inspect --format $fmt -o full" 1 "$nospace" "$tmp/dev/full" \
            "$parallaxc" inspect "$model" --batch 8 --format "$fmt" -o "$tmp/dev/full"
    done
    device "report -o null" 0 "" "$tmp/dev/null.html" "$parallaxc" report "$tmp/rd" -o "$tmp/dev/null.html"
    device "report -o full" 1 "$nospace" "$tmp/dev/full.html" \
        "$parallaxc" report "$tmp/rd" -o "$tmp/dev/full.html"
else
    echo "skip devices: mknod is not allowed here (needs CAP_MKNOD); not run, not counted"
fi

# ---- FIFOs: refused as outputs, and as inputs never waited on -------------------------
mkfifo "$tmp/fifo"
for flag in --losses --stats --save --trace; do
    refused "train $flag on a FIFO" 2 "$flag" "$tmp/fifo" "$tmp/train" --data "$tmp/data" --steps 2 \
        "$flag" "$tmp/fifo"
done
refused "compile -o on a FIFO" 2 "-o" "$tmp/fifo" "$parallaxc" compile "$model" -o "$tmp/fifo" --batch 8
refused "inspect -o on a FIFO" 2 "-o" "$tmp/fifo" "$parallaxc" inspect "$model" -o "$tmp/fifo"
# A checkpoint whose piece is a FIFO, a model whose external data is one.
mkdir -p "$tmp/fifo_ck" "$tmp/fifo_m"
cp "$tmp/ck" "$tmp/fifo_ck/ck" && mkfifo "$tmp/fifo_ck/$(basename "$piece")"
refused "--resume with a FIFO piece" 1 "its piece" "$tmp/fifo_ck/$(basename "$piece")" \
    "$tmp/train" --data "$tmp/data" --steps 4 --log-every 0 --resume "$tmp/fifo_ck/ck"
cp "$model" "$tmp/fifo_m/model.onnx" && mkfifo "$tmp/fifo_m/model.onnx.data"
refused "--weights with FIFO external data" 1 "external data file" "$tmp/fifo_m/model.onnx.data" \
    "$tmp/train" --data "$tmp/data" --steps 2 --log-every 0 --weights "$tmp/fifo_m/model.onnx"
mkfifo "$tmp/fifo_m/fifo.onnx"
refused "--weights a FIFO" 1 "the model" "$tmp/fifo_m/fifo.onnx" \
    "$tmp/train" --data "$tmp/data" --steps 2 --log-every 0 --weights "$tmp/fifo_m/fifo.onnx"
intact && pass "every input is byte for byte as before" || fail "an input changed"

# ---- NaN in evaluation data: the run stops, as with NaN in training data ----------------
mkdir -p "$tmp/nan_eval"
"$py" - "$tmp/data" "$tmp/nan_eval" <<'PY' || fail "making NaN evaluation data"
import sys
import numpy as np
x = np.load(sys.argv[1] + "/x.npy")
x[5, 0] = np.nan
np.save(sys.argv[2] + "/x.npy", x)
np.save(sys.argv[2] + "/y.npy", np.load(sys.argv[1] + "/y.npy"))
PY
timeout -k 5 60 "$tmp/train" --data "$tmp/data" --eval-data "$tmp/nan_eval" --steps 2 --log-every 1 \
    --eval-log "$tmp/nan_eval.csv" >"$tmp/run.log" 2>&1 </dev/null
rc=$?
if [ $rc -eq 1 ] && grep -q -F "validation loss is NaN after step 2 (--eval-data $tmp/nan_eval" "$tmp/run.log" &&
    ! grep -q -i "nan" "$tmp/nan_eval.csv"; then
    pass "NaN in --eval-data: status 1, $(grep -m1 "validation loss" "$tmp/run.log" | head -c 150)"
else
    fail "NaN in --eval-data: status $rc: $(head -c 400 "$tmp/run.log"); eval log: $(cat "$tmp/nan_eval.csv")"
fi

echo "$passed passed, $failed failed"
[ $passed -gt 0 ] && [ $failed -eq 0 ]
