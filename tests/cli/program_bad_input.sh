#!/bin/bash
# Usage: program_bad_input.sh PARALLAXC SRCDIR
#
# A generated inference program given bad data exits non-zero with a message
# naming the input and the problem - never a crash or a silently wrong answer:
# missing file, wrong dtype, wrong per-sample shape, a partial last batch with a
# scalar output, inconsistent batch counts, corrupt and
# truncated .npy, Fortran order, garbage .pb, bad flags. The good case is
# checked too, so the script cannot pass by rejecting everything.
. "$(dirname "$0")/lib.sh" "$@"
passed=0
failed=0

model=$src/examples/mlp/model.onnx
if ! "$parallaxc" compile --infer "$model" --batch 4 -o "$tmp/prog" 2>"$tmp/err"; then
    echo "FAIL: cannot compile the MLP example: $(cat "$tmp/err")"
    echo "0 passed, 1 failed"
    exit 1
fi

# make_case NAME PYTHON: PYTHON writes x.npy / y.npy into the folder in $1.
make_case() {
    mkdir -p "$tmp/$1"
    "$py" - "$tmp/$1" <<PY
import sys, os
import numpy as np
d = sys.argv[1]
def save(name, a): np.save(os.path.join(d, name + ".npy"), a)
x = np.zeros((4, 784), np.float32); y = np.zeros((4,), np.int64)
$2
PY
}

# expect CASE STATUS PATTERN [ARGS...]: run the program on the case's folder.
expect() {
    local name=$1 want=$2 pattern=$3
    shift 3
    local args=("$@")
    # shellcheck disable=SC2206
    [ ${#args[@]} -eq 0 ] && args=(--data "$tmp/$name" --out "$tmp/$name.out")
    [ "${args[0]}" = NOARGS ] && args=()
    "$tmp/prog" "${args[@]}" >"$tmp/$name.log" 2>&1
    local rc=$?
    if [ "$rc" -ge 128 ]; then
        echo "FAIL $name: crashed (status $rc): $(head -c 300 "$tmp/$name.log")"
        failed=$((failed + 1))
    elif [ "$rc" -ne "$want" ] || { [ -n "$pattern" ] && ! grep -q -E "$pattern" "$tmp/$name.log"; }; then
        echo "FAIL $name: status $rc (want $want), output: $(head -c 300 "$tmp/$name.log")"
        failed=$((failed + 1))
    else
        echo "ok   $name: $(head -n 1 "$tmp/$name.log" | head -c 160)"
        passed=$((passed + 1))
    fi
}

make_case good 'save("x", x); save("y", y)'
expect good 0 ""
make_case two_batches 'save("x", np.zeros((8, 784), np.float32)); save("y", np.zeros((8,), np.int64))'
expect two_batches 0 ""
if ! "$py" -c "import numpy as np, sys; a=np.load('$tmp/two_batches.out/loss.npy'); sys.exit(a.shape != (2,))"; then
    echo "FAIL two_batches: loss.npy should hold one loss per batch"
    failed=$((failed + 1))
fi
make_case missing 'save("x", x)'
expect missing 1 "no data for input 'y'"
make_case wrong_dtype 'save("x", x.astype(np.float64)); save("y", y)'
expect wrong_dtype 1 "input 'x'.*float64.*expects float32"
make_case wrong_shape 'save("x", np.zeros((4, 783), np.float32)); save("y", y)'
expect wrong_shape 1 "input 'x'.*shape \[4,783\]"
make_case partial_batch 'save("x", np.zeros((6, 784), np.float32)); save("y", np.zeros((6,), np.int64))'
# a partial last batch is fine for per-sample outputs (tests/cli/infer_eval.sh);
# this model's one output is the scalar loss, which cannot be cut to 2 samples
expect partial_batch 1 "output 'loss'.*not one row per sample"
make_case batch_mismatch 'save("x", np.zeros((8, 784), np.float32)); save("y", y)'
expect batch_mismatch 1 "batches"
make_case fortran 'save("x", np.asfortranarray(np.zeros((4, 784), np.float32))); save("y", y)'
expect fortran 1 "Fortran"
make_case truncated 'save("x", x); save("y", y); p = os.path.join(d, "x.npy"); b = open(p, "rb").read(); open(p, "wb").write(b[:len(b) // 2])'
expect truncated 1 "truncated"
make_case garbage 'save("y", y); open(os.path.join(d, "x.npy"), "wb").write(b"not a numpy file at all")'
expect garbage 1 "not a .npy file"
make_case empty 'save("y", y); open(os.path.join(d, "x.npy"), "wb").close()'
expect empty 1 "x.npy"
make_case bad_pb 'save("y", y); open(os.path.join(d, "x.pb"), "wb").write(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")'
expect bad_pb 1 "x.pb"
expect unknown_flag 2 "unknown option '--bogus'" --bogus
expect missing_value 2 "needs a value" --data
expect no_args 2 "required" NOARGS
expect help 0 "usage" --help
expect bench_zero 2 "bench-steps" --data "$tmp/good" --out "$tmp/bench.out" --bench-steps 0
expect bench_word 2 "bench-steps" --data "$tmp/good" --out "$tmp/bench.out" --bench-steps many
expect bench_ok 0 "bench: 3 steps, median" --data "$tmp/good" --out "$tmp/bench.out" --bench-steps 3

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
