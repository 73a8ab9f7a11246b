#!/bin/bash
# Usage: train_runtime.sh PARALLAXC SRCDIR
#
# The training main of generated programs (runtime/program/train*.c), driven
# through the fake training programs of tests/runtime (a hand-written linear
# model linked with px_main like a compiled one):
#   flags and their errors (status 2), data errors (status 1) naming the file,
#   the data order of design.md §3 (re-implemented in train_check.py),
#   shuffling, partial batches, --epochs, losses and weights against a numpy
#   reference, --save loading in onnx with the trained values, --stats,
#   checkpoint + resume equal to an uninterrupted run bit for bit, damaged or
#   foreign checkpoints, a NaN loss; under mpirun -np 2: each rank's rows,
#   the mean loss, resume, a 2-rank checkpoint continued on 1 rank, ranks
#   reading different data.
. "$(dirname "$0")/lib.sh" "$@"
check=$src/tests/runtime/train_check.py
bin=$(cd "$(dirname "$parallaxc")/../tests/runtime" 2>/dev/null && pwd)

for p in sgd sgd_b2 adam adam_d5; do
    if [ ! -x "$bin/px_fake_train_$p" ]; then
        echo "FAIL: $bin/px_fake_train_$p is not built (target px_fake_train_$p)"
        echo "0 passed, 1 failed"
        exit 1
    fi
done
sgd=$bin/px_fake_train_sgd
adam=$bin/px_fake_train_adam

# data NAME N [D] [PYTHON]: a data folder of N samples; PYTHON then edits it
# (d is the folder, np numpy).
data() {
    mkdir -p "$tmp/$1"
    "$py" "$check" data "$tmp/$1" "$2" "${3:-4}" 1 || exit 1
    if [ -n "${4:-}" ]; then
        "$py" - "$tmp/$1" <<PY || exit 1
import sys, os
import numpy as np
d = sys.argv[1]
def save(name, a): np.save(os.path.join(d, name + ".npy"), a)
$4
PY
    fi
}

# expect NAME STATUS PATTERN PROGRAM ARGS...: status and a pattern in the output.
expect() {
    local name=$1 want=$2 pattern=$3
    shift 3
    "$@" >"$tmp/$name.log" 2>&1
    local rc=$?
    if [ "$rc" -ne "$want" ] || { [ -n "$pattern" ] && ! grep -q -E -- "$pattern" "$tmp/$name.log"; }; then
        fail "$name: status $rc (want $want), output: $(head -c 400 "$tmp/$name.log")"
    else
        pass "$name: $(grep -m1 -E -- "${pattern:-.}" "$tmp/$name.log" | head -c 150)"
    fi
}

# pycheck NAME ARGS...: a train_check.py check.
pycheck() {
    local name=$1
    shift
    if "$py" "$check" "$@" >"$tmp/$name.check" 2>&1; then
        pass "$name: $(tail -n 1 "$tmp/$name.check" | head -c 200)"
    else
        fail "$name: $(head -c 600 "$tmp/$name.check")"
    fi
}

same() { # same NAME FILE1 FILE2: byte-identical files
    if cmp -s "$2" "$3"; then pass "$1"; else fail "$1: $2 and $3 differ"; fi
}

data d10 10
data d9 9
data d3 3
data d5 10 5

# ---- flags -------------------------------------------------------------------
expect help 0 "sample/id .*DIR/sample_id.npy" "$adam" --help
expect help_model 0 "optimizer: adam, lr 0.05" "$adam" --help
expect help_vars 0 "trainable variables: 3 .*1 on parameter servers" "$adam" --help
expect no_data 2 "--data DIR is required" "$adam"
expect unknown 2 "unknown option '--bogus'" "$adam" --data "$tmp/d10" --bogus
expect no_value 2 "'--steps' needs a value" "$adam" --data "$tmp/d10" --steps
expect steps_zero 2 "--steps needs a whole number of at least 1, not '0'" "$adam" --data "$tmp/d10" --steps 0
expect steps_word 2 "--steps needs a whole number" "$adam" --data "$tmp/d10" --steps ten
expect steps_and_epochs 2 "--steps or --epochs, not both" "$adam" --data "$tmp/d10" --steps 2 --epochs 1
expect ckpt_every_alone 2 "--checkpoint-every needs --checkpoint" "$adam" --data "$tmp/d10" --checkpoint-every 2
expect shuffle_negative 2 "--shuffle needs a whole number from 0" "$adam" --data "$tmp/d10" --shuffle -1
expect stall_negative 2 "--stall-timeout needs a number of seconds" "$adam" --data "$tmp/d10" --stall-timeout -1
expect twice 2 "'--steps' is given twice" "$adam" --data "$tmp/d10" --steps 1 --steps 2
expect log_negative 2 "--log-every needs a whole number of at least 0" "$adam" --data "$tmp/d10" --log-every -1
expect partitions_zero 2 "--partitions needs" "$adam" --data "$tmp/d10" --partitions 0
expect equals_form 0 "step 1/1" "$adam" --data="$tmp/d10" --steps=1 --log-every=1 --stall-timeout 0 --no-local-aggregation --partitions 1 --ranks-per-node 1 --dropout-seed 5 --warmup-steps 0
expect save_folder 1 "folder '$tmp/nowhere' does not exist" "$adam" --data "$tmp/d10" --save "$tmp/nowhere/m.onnx"

# ---- data errors -------------------------------------------------------------
data missing 10 4 'os.remove(os.path.join(d, "y.npy"))'
expect missing 1 "no data for input 'y': expected $tmp/missing/y.npy" "$adam" --data "$tmp/missing"
data dtype 10 4 'save("x", np.load(os.path.join(d, "x.npy")).astype(np.float64))'
expect dtype 1 "input 'x' \($tmp/dtype/x.npy\) holds float64 data, the model expects float32" "$adam" --data "$tmp/dtype"
data int32 10 4 'save("cat", np.zeros(10, np.int32))'
expect int32 1 "input 'cat' .* holds int32 data, the model expects int64" "$adam" --data "$tmp/int32"
data shape 10 3
expect shape 1 "input 'x' \($tmp/shape/x.npy\) has shape \[10,3\]; the model expects \[N,4\] \(N samples of shape \[4\]\)" "$adam" --data "$tmp/shape"
data rank 10 4 'save("y", np.zeros((10, 1), np.float32))'
expect rank 1 "input 'y' .* has shape \[10,1\]; the model expects \[N\]" "$adam" --data "$tmp/rank"
data count 10 4 'save("y", np.zeros(9, np.float32))'
expect count 1 "input 'y' .* holds 9 samples but 'x' .* holds 10" "$adam" --data "$tmp/count"
expect few 1 "holds 3 samples, fewer than one global batch of 4 \(1 rank x batch 4\)" "$adam" --data "$tmp/d3"
data pb 10 4 'open(os.path.join(d, "cat.pb"), "wb").write(b"\xff\xff\xff"); os.remove(os.path.join(d, "cat.npy"))'
expect bad_pb 1 "cat.pb" "$adam" --data "$tmp/pb"
expect no_dir 1 "no data for input 'x'" "$adam" --data "$tmp/absent"

# ---- data order --------------------------------------------------------------
# 10 samples, global batch 4: 2 steps per epoch, samples 8 and 9 never read.
rm -f "$tmp/tr_plain".*
PX_FAKE_TRACE=$tmp/tr_plain "$sgd" --data "$tmp/d10" --steps 5 --log-every 0 >/dev/null 2>&1
pycheck order_plain order "$tmp/tr_plain" 1 4 5 10
if grep -q -E ' (8|9)( |$)' "$tmp/tr_plain.0"; then fail "partial_batch: samples 8/9 were read"; else pass "partial_batch: samples 8 and 9 dropped"; fi
rm -f "$tmp/tr_ep".*
PX_FAKE_TRACE=$tmp/tr_ep "$sgd" --data "$tmp/d9" --epochs 3 --losses "$tmp/ep.csv" --log-every 0 >/dev/null 2>&1
pycheck epochs order "$tmp/tr_ep" 1 4 6 9
rm -f "$tmp/tr_sh" "$tmp/tr_sh".* "$tmp/tr_sh2".* "$tmp/tr_sh3".*
PX_FAKE_TRACE=$tmp/tr_sh "$sgd" --data "$tmp/d10" --steps 10 --shuffle 42 --log-every 0 >/dev/null 2>&1
pycheck shuffle_order order "$tmp/tr_sh" 1 4 10 10 42
PX_FAKE_TRACE=$tmp/tr_sh2 "$sgd" --data "$tmp/d10" --steps 10 --shuffle 42 --log-every 0 >/dev/null 2>&1
same shuffle_repeatable "$tmp/tr_sh.0" "$tmp/tr_sh2.0"
PX_FAKE_TRACE=$tmp/tr_sh3 "$sgd" --data "$tmp/d10" --steps 10 --shuffle 43 --log-every 0 >/dev/null 2>&1
if cmp -s "$tmp/tr_sh.0" "$tmp/tr_sh3.0"; then fail "shuffle_seed: seeds 42 and 43 gave the same order"; else pass "shuffle_seed: another seed, another order"; fi

# ---- numbers: losses and weights against numpy -------------------------------
"$sgd" --data "$tmp/d10" --steps 12 --losses "$tmp/sgd.csv" --save "$tmp/sgd.onnx" --log-every 5 >"$tmp/sgd.log" 2>&1 ||
    fail "sgd_run: $(cat "$tmp/sgd.log")"
pycheck sgd_reference reference sgd "$tmp/d10" 12 4 "$tmp/sgd.csv" "$tmp/sgd.onnx"
pycheck save_onnx onnx "$tmp/sgd.onnx"
if grep -q "step 5/12  loss" "$tmp/sgd.log" && grep -q "step 12/12  loss" "$tmp/sgd.log" &&
    ! grep -q "step 6/12" "$tmp/sgd.log"; then pass "log_every: steps 5, 10 and the last"; else fail "log_every: $(cat "$tmp/sgd.log")"; fi
"$adam" --data "$tmp/d10" --steps 12 --shuffle 5 --losses "$tmp/adam.csv" --save "$tmp/adam.onnx" \
    --stats "$tmp/adam.json" --checkpoint "$tmp/adam.ck" --log-every 0 >"$tmp/adam.log" 2>&1 ||
    fail "adam_run: $(cat "$tmp/adam.log")"
pycheck adam_reference reference adam "$tmp/d10" 12 4 "$tmp/adam.csv" "$tmp/adam.onnx" 5
pycheck stats stats "$tmp/adam.json" 12 1
pycheck checkpoint_format ckpt "$tmp/adam.ck" "$tmp/adam.onnx" 12
if [ -s "$tmp/adam.log" ]; then fail "quiet: --log-every 0 printed: $(head -c 200 "$tmp/adam.log")"; else pass "quiet: --log-every 0 prints nothing"; fi
if ls "$tmp"/*.tmp* >/dev/null 2>&1; then fail "atomic: temporary files left: $(ls "$tmp"/*.tmp*)"; else pass "atomic: no .tmp files left"; fi

# ---- checkpoint and resume ---------------------------------------------------
# A checkpoint is a manifest plus its pieces (FILE.<nonce>.<rank>): each run
# writes into its own folder under the same name, so whole checkpoints
# compare byte for byte; a copy is the folder.
same_ckpt() { # same_ckpt NAME DIR1 DIR2: manifest and pieces byte-identical
    if diff -r "$2" "$3" >/dev/null && [ -s "$2/ck" ]; then pass "$1"; else fail "$1: $2 and $3 differ: $(ls "$2" "$3")"; fi
}
mkdir -p "$tmp/full" "$tmp/part" "$tmp/every" "$tmp/nan"
# Uninterrupted 10 steps vs 5 + resume to 10: the same losses file and weights.
run_adam() { "$adam" --data "$tmp/d10" --shuffle 3 --log-every 0 "$@"; }
run_adam --steps 10 --losses "$tmp/full.csv" --save "$tmp/full.onnx" --checkpoint "$tmp/full/ck"
run_adam --steps 5 --losses "$tmp/part.csv" --checkpoint "$tmp/part/ck"
cp -r "$tmp/part" "$tmp/at5"
run_adam --steps 10 --resume "$tmp/part/ck" --losses "$tmp/part.csv" --save "$tmp/part.onnx" --checkpoint "$tmp/part/ck"
same resume_losses "$tmp/full.csv" "$tmp/part.csv"
same resume_weights "$tmp/full.onnx" "$tmp/part.onnx"
same_ckpt resume_checkpoint "$tmp/full" "$tmp/part"
if [ "$(find "$tmp/part" -type f | wc -l)" -eq 2 ]; then pass "ckpt_superseded: the step-5 piece is removed"; else fail "ckpt_superseded: $(ls "$tmp/part")"; fi
# --checkpoint-every, then a NaN loss at step 7: the error names the step,
# the losses so far are there, the step-5 checkpoint is kept, nothing saved.
PX_FAKE_NAN_AT=7 expect nan_loss 1 "the loss is nan at step 7" run_adam --steps 10 \
    --checkpoint-every 5 --checkpoint "$tmp/every/ck" --losses "$tmp/nan.csv" --save "$tmp/nan.onnx"
same_ckpt nan_keeps_checkpoint "$tmp/every" "$tmp/at5"
if [ "$(wc -l <"$tmp/nan.csv")" -eq 7 ] && [ ! -e "$tmp/nan.onnx" ]; then pass "nan_outputs: 6 losses, no model"; else fail "nan_outputs: $(cat "$tmp/nan.csv"), $(ls "$tmp"/nan*)"; fi
run_adam --steps 10 --resume "$tmp/every/ck" --losses "$tmp/nan.csv" --save "$tmp/every.onnx"
same resume_after_nan "$tmp/full.onnx" "$tmp/every.onnx"
same resume_after_nan_losses "$tmp/full.csv" "$tmp/nan.csv"
expect resume_done 0 "nothing to train" run_adam --steps 5 --resume "$tmp/at5/ck" --save "$tmp/at5.onnx"
pycheck resume_done_save ckpt "$tmp/at5/ck" "$tmp/at5.onnx" 5

# Damaged and foreign checkpoints: a clear error, the files left as they were.
"$py" -c "
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[len(b) // 2] ^= 0x10
open(sys.argv[2], 'wb').write(b)
open(sys.argv[3], 'wb').write(b[:len(b) - 100])
open(sys.argv[4], 'wb').write(b'hello, world: not a checkpoint at all')
" "$tmp/at5/ck" "$tmp/at5/flipped.ck" "$tmp/at5/short.ck" "$tmp/at5/text.ck"
for f in flipped short text; do cp "$tmp/at5/$f.ck" "$tmp/$f.orig"; done
expect ckpt_flipped 1 "checkpoint $tmp/at5/flipped.ck is damaged \(checksum mismatch\)" run_adam --steps 10 --resume "$tmp/at5/flipped.ck" --checkpoint "$tmp/at5/flipped.ck"
expect ckpt_short 1 "checkpoint $tmp/at5/short.ck is truncated" run_adam --steps 10 --resume "$tmp/at5/short.ck" --checkpoint "$tmp/at5/short.ck"
expect ckpt_text 1 "$tmp/at5/text.ck is not a Parallax checkpoint" run_adam --steps 10 --resume "$tmp/at5/text.ck" --checkpoint "$tmp/at5/text.ck"
for f in flipped short text; do same "ckpt_${f}_intact" "$tmp/at5/$f.ck" "$tmp/$f.orig"; done
rm -f "$tmp/at5/flipped.ck" "$tmp/at5/short.ck" "$tmp/at5/text.ck"
expect ckpt_missing 1 "cannot open checkpoint $tmp/none.ck" run_adam --steps 10 --resume "$tmp/none.ck"
# A piece flipped, cut short or missing: refused, naming the piece.
for f in pflip pshort pgone; do cp -r "$tmp/at5" "$tmp/$f"; done
"$py" -c "
import glob, sys
p = glob.glob(sys.argv[1] + '/ck.*.0')[0]
b = bytearray(open(p, 'rb').read())
b[len(b) // 3] ^= 0x01
open(p, 'wb').write(b)
q = glob.glob(sys.argv[2] + '/ck.*.0')[0]
open(q, 'wb').write(b[:len(b) - 4])
" "$tmp/pflip" "$tmp/pshort"
rm -f "$tmp"/pgone/ck.*.0
expect ckpt_piece_flipped 1 "checkpoint $tmp/pflip/ck is damaged: its piece ck\.[0-9a-f]{16}\.0 does not match its checksum \(variable '[a-z]+', rows" run_adam --steps 10 --resume "$tmp/pflip/ck"
expect ckpt_piece_short 1 "checkpoint $tmp/pshort/ck is damaged: its piece .*ck\.[0-9a-f]{16}\.0 has [0-9]+ bytes, the manifest lists" run_adam --steps 10 --resume "$tmp/pshort/ck"
expect ckpt_piece_missing 1 "checkpoint $tmp/pgone/ck is incomplete: its piece .*ck\.[0-9a-f]{16}\.0 cannot be opened" run_adam --steps 10 --resume "$tmp/pgone/ck"
expect ckpt_optimizer 1 "holds adam optimizer state; this program \(fake_linear.onnx\) trains with sgd" "$sgd" --data "$tmp/d10" --shuffle 3 --resume "$tmp/at5/ck"
expect ckpt_shape 1 "its variable 0 is 'w' \[4\], this program's \(fake_linear.onnx\) is 'w' \[5\]" "$bin/px_fake_train_adam_d5" --data "$tmp/d5" --shuffle 3 --resume "$tmp/at5/ck"
expect ckpt_shuffle 1 "written by a run with --shuffle 3: resume with the same setting" "$adam" --data "$tmp/d10" --resume "$tmp/at5/ck"
expect ckpt_dropout 1 "--dropout-seed 20190325; this run uses 9" run_adam --dropout-seed 9 --resume "$tmp/at5/ck"
expect ckpt_other_data 0 "note: checkpoint .* other data" "$adam" --data "$tmp/d9" --shuffle 3 --steps 6 --resume "$tmp/at5/ck"

# ---- under MPI ---------------------------------------------------------------
if command -v mpirun >/dev/null; then
    mpi() { timeout 120 mpirun --allow-run-as-root -np 2 "$@"; }
    b2=$bin/px_fake_train_sgd_b2
    rm -f "$tmp/tr_mpi".*
    PX_FAKE_TRACE=$tmp/tr_mpi mpi -x PX_FAKE_TRACE "$b2" --data "$tmp/d10" --steps 6 --shuffle 11 \
        --losses "$tmp/mpi.csv" --save "$tmp/mpi.onnx" --stats "$tmp/mpi.json" --log-every 0 >"$tmp/mpi.log" 2>&1 ||
        fail "mpi_run: $(head -c 600 "$tmp/mpi.log")"
    pycheck mpi_order order "$tmp/tr_mpi" 2 2 6 10 11
    pycheck mpi_reference reference sgd "$tmp/d10" 6 4 "$tmp/mpi.csv" "$tmp/mpi.onnx" 11
    pycheck mpi_stats stats "$tmp/mpi.json" 6 2
    # Bit-exact resume with 2 ranks; a 2-rank checkpoint continues on 1 rank.
    mpi "$b2" --data "$tmp/d10" --steps 6 --shuffle 11 --log-every 0 --save "$tmp/mpi_full.onnx" >/dev/null 2>&1
    mpi "$b2" --data "$tmp/d10" --steps 3 --shuffle 11 --log-every 0 --checkpoint "$tmp/mpi3.ck" >/dev/null 2>&1
    mpi "$b2" --data "$tmp/d10" --steps 6 --shuffle 11 --log-every 0 --resume "$tmp/mpi3.ck" --save "$tmp/mpi_res.onnx" >/dev/null 2>&1
    same mpi_resume "$tmp/mpi_full.onnx" "$tmp/mpi_res.onnx"
    "$sgd" --data "$tmp/d10" --steps 6 --shuffle 11 --log-every 0 --resume "$tmp/mpi3.ck" \
        --losses "$tmp/one.csv" --save "$tmp/one.onnx" >/dev/null 2>&1
    pycheck mpi_to_one_rank reference sgd "$tmp/d10" 6 4 "$tmp/one.csv" "$tmp/one.onnx" 11
    # Ranks that read different data are stopped, naming the rank and the input.
    data d10b 10 4 'x = np.load(os.path.join(d, "x.npy")); x[7, 2] += 1; save("x", x)'
    rm -rf "$tmp/d100" "$tmp/d101" && cp -r "$tmp/d10" "$tmp/d100" && cp -r "$tmp/d10b" "$tmp/d101"
    expect mpi_data_mismatch 1 "rank 1 reads different data for input 'x'" \
        mpi bash -c 'exec "$0" --data "$1$OMPI_COMM_WORLD_RANK" --steps 2' "$b2" "$tmp/d10"
    expect mpi_bad_flag 2 "unknown option '--bogus'" mpi "$b2" --data "$tmp/d10" --bogus
else
    fail "mpirun: not found (Debian package openmpi-bin)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
