#!/bin/bash
# Usage: faults.sh PARALLAXC SRCDIR FAULTS_BIN_DIR
#
# The fault catalogue (issue 13): hostile models and files, bad flags,
# interrupted writes, killed and stopped ranks, damaged checkpoints. Every
# case must end within seconds with a message and an ordinary exit status
# (1 bad model/data/run, 2 bad command line; a job whose rank was killed
# ends non-zero with the rank named), never a signal, a hang, a read past a
# mapping or a write through a planted symlink; no process and no temporary
# file may be left behind, and the last good checkpoint stays intact.
# Prints ok/FAIL lines, then "N passed, M failed".
if [ $# -ne 3 ]; then
    echo "usage: $0 PARALLAXC SRCDIR FAULTS_BIN_DIR" >&2
    exit 2
fi
fbin=$3
# parallaxc, src, py, tmp (removed at exit), the counts, pass and fail
. "$(dirname "$0")/../cli/lib.sh" "$1" "$2"
rbin=$(cd "$(dirname "$parallaxc")/../tests/runtime" && pwd)
prog=$rbin/px_fake_train_adam # a linear model + embedding on parameter servers
mpirun=(mpirun --allow-run-as-root --oversubscribe)
for f in "$prog" "$fbin/px_gen_chain" "$fbin/px_atomic_interrupt"; do
    [ -x "$f" ] || {
        echo "FAIL: $f is not built"
        echo "0 passed, 1 failed"
        exit 1
    }
done
# A private copy: the process checks below (pgrep -f) must see only this
# test's processes, not those of another test running the same program.
cp "$prog" "$tmp/px_faults_train"
prog=$tmp/px_faults_train

# expect NAME STATUS PATTERN CMD...: ends within 30 s with STATUS and a
# line matching PATTERN; no process of it left, no temporary file in $tmp.
expect() {
    local name=$1 want=$2 pattern=$3
    shift 3
    timeout -k 5 30 "$@" >"$tmp/$name.log" 2>&1 </dev/null
    local rc=$?
    local left
    left=$(find "$tmp" -name '*.tmp.*' 2>/dev/null | head -n 3)
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        fail "$name: still running after 30 s"
    elif [ "$rc" -ne "$want" ]; then
        fail "$name: status $rc (want $want): $(head -c 400 "$tmp/$name.log")"
    elif [ -n "$pattern" ] && ! grep -q -E -- "$pattern" "$tmp/$name.log"; then
        fail "$name: no line matches /$pattern/: $(head -c 400 "$tmp/$name.log")"
    elif grep -q $'\x7fELF' "$tmp/$name.log"; then
        fail "$name: the message shows bytes from outside the file"
    elif [ -n "$left" ]; then
        fail "$name: temporary files left: $left"
    else
        pass "$name: status $rc $(grep -m1 -E -- "${pattern:-.}" "$tmp/$name.log" | head -c 160)"
    fi
}

no_leftover_processes() { # NAME PROGRAM
    sleep 0.5
    if pgrep -f "^$2" >/dev/null; then
        fail "$1: processes of $2 are left: $(pgrep -f "^$2" | tr '\n' ' ')"
        pkill -KILL -f "^$2" 2>/dev/null
    else
        pass "$1: no process left"
    fi
}

# ---- hostile models ------------------------------------------------------------
m=$tmp/models
mkdir -p "$m/ext"
"$py" - "$m" <<'PY' || exit 1
import sys, os
import numpy as np
for n, t in [("float", float), ("int", int), ("bool", bool), ("object", object)]:
    setattr(np, n, t)
import onnx
from onnx import helper, TensorProto
d = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
def model(nodes, opset, inits=(), outputs=(y,)):
    g = helper.make_graph(nodes, "g", [x], list(outputs), list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return m.SerializeToString()
relu = [helper.make_node("Relu", ["x"], ["y"])]
for v in (99, 10**12):
    open(f"{d}/opset_{v}.onnx", "wb").write(model(relu, v))
open(f"{d}/layernorm_opset1.onnx", "wb").write(model(
    [helper.make_node("HardSwish", ["x"], ["y"])], 1))
# A foldable node declaring more outputs than its op has (libFuzzer's find).
for op in ("Shape", "Size"):
    n = helper.make_node(op, ["x"], ["s", "extra1", "extra2"])
    idn = helper.make_node("Relu", ["x"], ["y"])
    open(f"{d}/extra_outputs_{op}.onnx", "wb").write(model(
        [n, idn], 13, outputs=(y, helper.make_tensor_value_info("extra2", TensorProto.INT64, None))))
# External data whose location hides a NUL byte ("w.bin\0../../etc/passwd").
def ext_tensor():
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend([4])
    return t
w = ext_tensor()
w.data_location = TensorProto.EXTERNAL
e = w.external_data.add(); e.key = "location"; e.value = "w.bin"
add = [helper.make_node("Add", ["x", "w"], ["y"])]
raw = model(add, 13, inits=[w])
raw = raw.replace(b"\x05w.bin", b"\x05w.bi\x00")
open(f"{d}/nul_location.onnx", "wb").write(raw)
open(f"{d}/w.bi", "wb").write(np.zeros(4, np.float32).tobytes())
# External data that is a FIFO.
w2 = ext_tensor()
w2.data_location = TensorProto.EXTERNAL
e = w2.external_data.add(); e.key = "location"; e.value = "fifo.bin"
open(f"{d}/ext/fifo_data.onnx", "wb").write(model(add, 13, inits=[w2]))
# Nesting: types 5,000 deep and If subgraphs 20,000 deep, on the wire.
def varint(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        out += bytes([b | (0x80 if v else 0)])
        if not v: return out
def wrap(b, field): return varint(field << 3 | 2) + varint(len(b)) + b
t = b""
for _ in range(5000): t = wrap(wrap(t, 1), 4)
open(f"{d}/types_5000_deep.onnx", "wb").write(wrap(wrap(wrap(t, 2), 11), 7))
s = wrap(b"If", 4)
for _ in range(20000): s = wrap(b"If", 4) + wrap(wrap(wrap(s, 1), 6), 5)
open(f"{d}/if_20000_deep.onnx", "wb").write(wrap(wrap(s, 1), 7))
PY
mkfifo "$m/fifo.onnx" "$m/ext/fifo.bin"

expect opset_99 1 "imports opset 99 of domain 'ai.onnx'; this compiler implements opsets 1 to 21" \
    "$parallaxc" inspect "$m/opset_99.onnx"
expect opset_1e12 1 "imports opset 1000000000000" "$parallaxc" inspect "$m/opset_1000000000000.onnx"
expect op_newer_than_opset 1 "needs opset 14 or newer" "$parallaxc" inspect "$m/layernorm_opset1.onnx"
for op in Shape Size; do
    expect "extra_outputs_$op" 1 "value 'extra1' has an unknown dtype" \
        "$parallaxc" inspect "$m/extra_outputs_$op.onnx" --batch 2
done
expect nul_in_location 1 "contains a NUL byte" "$parallaxc" inspect "$m/nul_location.onnx"
expect types_5000_deep 1 "nests messages more than 160 levels deep" \
    "$parallaxc" inspect "$m/types_5000_deep.onnx"
expect if_20000_deep 1 "nests messages more than 160 levels deep" \
    "$parallaxc" compile "$m/if_20000_deep.onnx" -o "$tmp/never"
expect fifo_model 2 "is not a regular file" "$parallaxc" inspect "$m/fifo.onnx"
expect fifo_external_data 1 "is not a regular file" "$parallaxc" inspect "$m/ext/fifo_data.onnx"

# ---- hostile data files --------------------------------------------------------
data() { # NAME [PYTHON]: 64 samples, then PYTHON edits the folder d
    mkdir -p "$tmp/$1"
    "$py" "$src/tests/runtime/train_check.py" data "$tmp/$1" 64 4 1 || exit 1
    if [ -n "${2:-}" ]; then
        "$py" - "$tmp/$1" <<PY || exit 1
import sys, os
import numpy as np
d = sys.argv[1]
$2
PY
    fi
}
data good
data npy_overflow '
h = "{'"'"'descr'"'"': '"'"'<i8'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (144115188075855872, 16), }"
h = h + " " * (118 - len(h)) + "\n"
open(os.path.join(d, "cat.npy"), "wb").write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + b"\x7fELF" * 16)'
expect npy_size_overflow 1 "cat.npy: .npy shape describes more bytes than memory can address" \
    "$prog" --data "$tmp/npy_overflow" --steps 1
data fortran 'x = np.load(os.path.join(d, "x.npy")); np.save(os.path.join(d, "x.npy"), np.asfortranarray(x))'
expect fortran_order 1 "Fortran .*np.ascontiguousarray" "$prog" --data "$tmp/fortran" --steps 1
data fifo_npy 'os.remove(os.path.join(d, "x.npy")); os.mkfifo(os.path.join(d, "x.npy"))'
expect fifo_npy 1 "x.npy is not a regular file" "$prog" --data "$tmp/fifo_npy" --steps 1
data fifo_pb 'os.remove(os.path.join(d, "y.npy")); os.mkfifo(os.path.join(d, "y.pb"))'
expect fifo_pb 1 "y.pb is not a regular file" "$prog" --data "$tmp/fifo_pb" --steps 1
data empty_pb 'os.remove(os.path.join(d, "y.npy")); open(os.path.join(d, "y.pb"), "wb").close()'
expect empty_pb 1 "y.pb is empty" "$prog" --data "$tmp/empty_pb" --steps 1

# ---- flags ---------------------------------------------------------------------
g=$tmp/good
expect data_empty 2 "--data needs a folder, not ''" "$prog" --data "" --steps 1
expect save_is_checkpoint 2 "--checkpoint .* and --save .* name the same file" \
    "$prog" --data "$g" --steps 1 --save "$tmp/x" --checkpoint "$tmp/x"
expect losses_is_stats 2 "--losses .* and --stats .* name the same file" \
    "$prog" --data "$g" --steps 1 --losses "$tmp/y" --stats "$tmp/./y"
expect save_is_resume 2 "--resume .* and --save .* name the same file" \
    "$prog" --data "$g" --steps 1 --resume "$tmp/z" --save "$tmp/z"
expect stall_tiny 2 "--stall-timeout needs a number of seconds from 0.1" \
    "$prog" --data "$g" --steps 1 --stall-timeout 1e-300
mkfifo "$tmp/fifo.ckpt"
expect resume_fifo 2 "--resume .*fifo.ckpt is not a regular file" \
    "$prog" --data "$g" --steps 1 --resume "$tmp/fifo.ckpt"
expect stall_nan 2 "--stall-timeout needs" "$prog" --data "$g" --steps 1 --stall-timeout nan

# ---- writes: planted symlinks, interrupted writes ------------------------------
mkdir -p "$tmp/out"
ln -s "$tmp/victim" "$tmp/out/ck.tmp"
ln -s "$tmp/victim" "$tmp/out/model.onnx.tmp"
expect planted_symlinks 0 "" "$prog" --data "$g" --steps 2 --log-every 0 \
    --checkpoint "$tmp/out/ck" --save "$tmp/out/model.onnx" --stats "$tmp/out/stats.json"
if [ -e "$tmp/victim" ] || [ -L "$tmp/out/ck" ] || [ -L "$tmp/out/model.onnx" ]; then
    fail "planted symlinks: a write went through a planted link"
else
    pass "planted symlinks: the targets are untouched, the outputs are plain files"
fi
rm -f "$tmp/out/ck.tmp" "$tmp/out/model.onnx.tmp"
# A temporary left by a writer killed with SIGKILL (its pid gone) is removed
# by the next write of the same file; a live writer's is not touched.
sleep 60 &
alive=$!
dead=$(sh -c 'echo $$') # a pid that has just exited
: >"$tmp/out/ck.tmp.$dead.AbCdEf"
: >"$tmp/out/ck.tmp.$alive.AbCdEf"
"$prog" --data "$g" --steps 1 --log-every 0 --checkpoint "$tmp/out/ck" >/dev/null 2>&1
if [ -e "$tmp/out/ck.tmp.$dead.AbCdEf" ] || [ ! -e "$tmp/out/ck.tmp.$alive.AbCdEf" ]; then
    fail "stale temporaries: $(ls "$tmp/out" | tr '\n' ' ')"
else
    pass "stale temporaries: a dead writer's is removed, a live writer's kept"
fi
kill "$alive"
rm -f "$tmp/out/ck.tmp.$alive.AbCdEf"
for mode in term int fail; do
    echo "previous" >"$tmp/out/atomic_$mode"
    "$fbin/px_atomic_interrupt" "$tmp/out/atomic_$mode" "$mode" >"$tmp/atomic_$mode.log" 2>&1
    rc=$?
    left=$(find "$tmp/out" -name "atomic_$mode.tmp.*")
    if [ -n "$left" ] || [ "$(cat "$tmp/out/atomic_$mode")" != "previous" ]; then
        fail "interrupted write ($mode, status $rc): temporary left or file changed: $left"
    elif ! grep -q "temporary .*atomic_$mode.tmp." "$tmp/atomic_$mode.log"; then
        fail "interrupted write ($mode): the temporary was never made"
    else
        pass "interrupted write ($mode, status $rc): temporary removed, previous file intact"
    fi
done

# ---- checkpoints: damaged, truncated, foreign; the last good one intact ---------
ck=$tmp/out/good.ckpt
expect checkpoint_written 0 "" "$prog" --data "$g" --steps 3 --log-every 0 --checkpoint "$ck"
cp "$ck" "$tmp/out/pristine.ckpt"
size=$(stat -c %s "$ck")
head -c $((size / 2)) "$ck" >"$tmp/out/truncated.ckpt"
cp "$ck" "$tmp/out/flipped.ckpt"
printf '\xff' | dd of="$tmp/out/flipped.ckpt" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
mkdir -p "$tmp/d5" && "$py" "$src/tests/runtime/train_check.py" data "$tmp/d5" 64 5 1
"$rbin/px_fake_train_adam_d5" --data "$tmp/d5" --steps 2 --log-every 0 \
    --checkpoint "$tmp/out/foreign.ckpt" >/dev/null 2>&1
expect checkpoint_truncated 1 "checkpoint .*truncated.ckpt" \
    "$prog" --data "$g" --steps 5 --resume "$tmp/out/truncated.ckpt"
expect checkpoint_bit_flip 1 "checkpoint .*flipped.ckpt" \
    "$prog" --data "$g" --steps 5 --resume "$tmp/out/flipped.ckpt"
expect checkpoint_foreign 1 "written for another model" \
    "$prog" --data "$g" --steps 5 --resume "$tmp/out/foreign.ckpt"
# Resuming the good file while data is bad: the run fails, the file stays.
expect resume_then_fail 1 "x.npy is not a regular file" \
    "$prog" --data "$tmp/fifo_npy" --steps 5 --resume "$ck" --checkpoint "$ck"
if cmp -s "$ck" "$tmp/out/pristine.ckpt"; then
    pass "the last good checkpoint is intact after the failures"
else
    fail "the last good checkpoint changed"
fi

# ---- a full disk: every writer fails with the reason, nothing saved is lost ------
# A 256 KiB tmpfs, filled up, gives a real ENOSPC. Mounting needs root with
# CAP_SYS_ADMIN; where that is missing the cases are reported as skipped and
# not counted. (RLIMIT_FSIZE is no substitute: it also limits MPI's own
# shared-memory files, and MPI's start-up then hangs.)
full=$tmp/full
mkdir -p "$full"
if mount -t tmpfs -o size=256k tmpfs "$full" 2>/dev/null; then
    trap 'umount "$full" 2>/dev/null; rm -rf "$tmp"' EXIT
    # The earlier run's files, written while there is room.
    "$prog" --data "$g" --steps 2 --log-every 0 --checkpoint "$full/ck" --losses "$full/l.csv" \
        --stats "$full/s.json" --save "$full/m.onnx" >/dev/null 2>&1 || fail "full disk: the first run failed"
    mkdir -p "$tmp/full_before"
    cp -a "$full/." "$tmp/full_before/"
    dd if=/dev/zero of="$full/fill" bs=4k 2>/dev/null
    nospace="No space left on device"
    expect full_checkpoint 1 "cannot write .*$nospace.*checkpoint .*ck is unchanged" \
        "$prog" --data "$g" --steps 4 --log-every 0 --resume "$full/ck" --checkpoint "$full/ck"
    expect full_save 1 "cannot write .*m.onnx: $nospace" \
        "$prog" --data "$g" --steps 4 --log-every 0 --save "$full/m.onnx"
    expect full_stats 1 "cannot write .*s.json: $nospace" \
        "$prog" --data "$g" --steps 4 --log-every 0 --stats "$full/s.json"
    expect full_losses_resumed 1 "--losses: cannot write .*l.csv: $nospace \(the file is unchanged\)" \
        "$prog" --data "$g" --steps 4 --log-every 0 --resume "$full/ck" --losses "$full/l.csv"
    rm -f "$full/fill"
    if diff -r "$tmp/full_before" "$full" >/dev/null; then
        pass "full disk: the earlier checkpoint, model, stats and losses are intact"
    else
        fail "full disk: files changed: $(diff -rq "$tmp/full_before" "$full" | head -c 300)"
    fi
    umount "$full"
else
    echo "skip full disk: cannot mount a tmpfs here (needs CAP_SYS_ADMIN); 5 cases not run, not counted"
fi

# ---- ranks: different data, killed, stopped ---------------------------------------
# One byte changed in the middle of a 4 MiB input: the old 64-piece sample missed it.
data big '
x = np.random.default_rng(1).standard_normal((262144, 4)).astype(np.float32)
np.save(os.path.join(d, "x.npy"), x)
for name in ("cat", "sample_id"): np.save(os.path.join(d, name + ".npy"), np.zeros(262144, np.int64))
np.save(os.path.join(d, "y.npy"), np.zeros(262144, np.float32))'
cp -r "$tmp/big" "$tmp/big2"
"$py" - "$tmp/big2/x.npy" <<'PY'
import sys, numpy as np
x = np.load(sys.argv[1]); x[131071, 1] += 1.0; np.save(sys.argv[1], x)
PY
expect ranks_different_data 1 "rank 1 reads different data for input 'x'" \
    "${mpirun[@]}" -np 1 "$prog" --data "$tmp/big" --steps 2 : -np 1 "$prog" --data "$tmp/big2" --steps 2
no_leftover_processes "different data" "$prog"

# start_job NP ARGS...: a long run in the background (pid in $job).
start_job() {
    local np=$1 t0=$SECONDS
    shift
    "${mpirun[@]}" -np "$np" "$prog" "$@" >"$tmp/job.log" 2>&1 &
    job=$!
    # Wait (on a loaded machine, mpirun may take seconds) until every rank
    # runs, then a little more so that training is under way.
    while [ "$(pgrep -f "^$prog" | wc -l)" -lt "$np" ] && [ $((SECONDS - t0)) -lt 30 ] &&
        kill -0 "$job" 2>/dev/null; do sleep 0.2; done
    sleep 1.5
}
end_job() { # kills what is left of the job (after a failed check)
    kill -KILL "$job" 2>/dev/null
    pkill -KILL -f "^$prog" 2>/dev/null
    wait "$job" 2>/dev/null
}
pid_of_rank() {
    local pid r
    for pid in $(pgrep -f "^$prog"); do
        r=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
        [ "$r" = "$1" ] && echo "$pid"
    done
}
wait_job() { # NAME: the job must end within 30 s
    local t0=$SECONDS
    while kill -0 "$job" 2>/dev/null && [ $((SECONDS - t0)) -lt 30 ]; do sleep 0.2; done
    if kill -0 "$job" 2>/dev/null; then
        fail "$1: the job still runs after 30 s"
        end_job
        return 1
    fi
    wait "$job"
    jobrc=$?
    return 0
}

# A stopped rank in parameter-server mode (3 ranks, a shard each): the first
# error line must blame it, not a healthy rank that waits for a waiting one.
for victim in 1 2; do
    start_job 3 --data "$g" --steps 100000000 --log-every 0 --ranks-per-node 1 --stall-timeout 2 \
        --checkpoint "$tmp/out/stop$victim.ckpt" --checkpoint-every 1000
    pid=$(pid_of_rank "$victim")
    if [ -z "$pid" ]; then
        fail "stopped rank $victim: rank not found (job ended early: $(head -c 300 "$tmp/job.log"))"
        end_job
        continue
    fi
    kill -STOP "$pid"
    if wait_job "stopped rank $victim"; then
        first=$(grep -m1 '^error' "$tmp/job.log")
        if [ "$jobrc" -ne 0 ] && echo "$first" | grep -q "rank $victim stopped first"; then
            pass "stopped rank $victim: exit $jobrc, first line: $(echo "$first" | head -c 150)"
        else
            fail "stopped rank $victim: exit $jobrc, first line: $first"
        fi
    fi
    no_leftover_processes "stopped rank $victim" "$prog"
    left=$(find "$tmp/out" -name '*.tmp.*')
    [ -z "$left" ] && pass "stopped rank $victim: no temporary file left" ||
        fail "stopped rank $victim: temporaries left: $left"
done

# A rank killed with SIGKILL while checkpoints are written every few steps: the
# job ends naming it, and the last checkpoint resumes.
start_job 2 --data "$g" --steps 100000000 --log-every 0 --checkpoint "$tmp/out/kill.ckpt" \
    --checkpoint-every 500
pid=$(pid_of_rank 1)
[ -n "$pid" ] && kill -KILL "$pid"
if wait_job "killed rank"; then
    if [ "$jobrc" -ne 0 ] && grep -q -E "rank 1 .*(signal 9|Killed)" "$tmp/job.log"; then
        pass "killed rank: exit $jobrc, rank 1 named"
    else
        fail "killed rank: exit $jobrc: $(head -c 300 "$tmp/job.log")"
    fi
fi
no_leftover_processes "killed rank" "$prog"
if [ -f "$tmp/out/kill.ckpt" ]; then
    # The step is the 7th 8-byte field of the header (checkpoint.h).
    step=$(od -An -t d8 -j 48 -N 8 "$tmp/out/kill.ckpt" | tr -d ' ')
    expect resume_after_kill 0 "" "$prog" --data "$g" --resume "$tmp/out/kill.ckpt" \
        --steps $((step + 2)) --log-every 0
else
    fail "killed rank: no checkpoint was written before the kill"
fi
left=$(find "$tmp/out" -name '*.tmp.*')
[ -z "$left" ] && pass "killed rank: no temporary file left" || fail "killed rank: temporaries left: $left"

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
