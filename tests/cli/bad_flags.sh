#!/bin/bash
# Usage: bad_flags.sh PARALLAXC SRCDIR
#
# Command-line errors of parallaxc: each bad flag, value or argument must exit
# with status 2 and a message on stderr that names the flag or value at fault
# (and never crash). Also checks --help/--version (exit 0, text on stdout) and
# that `compile` with valid flags is not rejected as a usage error.
# Prints PASS/FAIL lines, then "N passed, M failed"; exits non-zero on failure.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PARALLAXC SRCDIR" >&2
    exit 2
fi
parallaxc=$1
model=/usr/share/libonnx-testdata/data/node/test_add/model.onnx

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0

# run_case NAME STATUS NEEDLE ARGS... : parallaxc ARGS must exit STATUS and its
# stderr must contain NEEDLE (a fixed string); nothing may reach stdout on errors.
run_case() {
    local name=$1 want=$2 needle=$3
    shift 3
    "$parallaxc" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    local why=""
    if [ $rc -ne "$want" ]; then
        why="exit status $rc, expected $want"
    elif [ -n "$needle" ] && ! grep -qF -- "$needle" "$tmp/err"; then
        why="stderr does not mention: $needle"
    elif [ "$want" -ne 0 ] && [ -s "$tmp/out" ]; then
        why="an error wrote to stdout"
    fi
    if [ -z "$why" ]; then
        echo "PASS $name"
        passed=$((passed + 1))
    else
        echo "FAIL $name: $why"
        echo "    command: parallaxc $*"
        sed 's/^/    stderr: /' "$tmp/err" | head -n 5
        failed=$((failed + 1))
    fi
}
usage() { run_case "$1" 2 "$2" "${@:3}"; }

# ---- commands -------------------------------------------------------------------
usage "no arguments" "no command"
usage "unknown command" "'frob'" frob "$model"
usage "unknown top-level option" "'--frob'" --frob

# ---- generic option errors (inspect) ------------------------------------------------
usage "unknown flag" "'--bogus'" inspect "$model" --bogus
usage "unknown short flag" "'-x'" inspect "$model" -x
usage "missing value at the end" "--batch expects a value" inspect "$model" --batch
usage "flag taken as a missing value" "--batch expects a value" inspect "$model" --batch --ranks 2
usage "missing -o value" "-o expects a value" inspect "$model" -o
usage "empty -o value" "-o: empty" inspect "$model" -o ""
usage "value given to a switch" "--infer takes no value" compile "$model" -o prog --infer=yes
usage "flag repeated" "--batch is given more than once" inspect "$model" --batch 2 --batch 3
usage "compile flag to inspect" "--infer is a flag of 'parallaxc compile'" inspect "$model" --infer
usage "inspect flag to compile" "--stage is a flag of 'parallaxc inspect'" compile "$model" -o p --stage folded

# ---- numbers ----------------------------------------------------------------------------
usage "--batch 0" "--batch: '0' is out of range" inspect "$model" --batch 0
usage "--batch abc" "--batch: 'abc' is not an integer" inspect "$model" --batch abc
usage "--batch huge" "--batch: '99999999999999999999' is out of range" inspect "$model" --batch 99999999999999999999
usage "--batch negative" "--batch: '-3' is out of range" inspect "$model" --batch -3
usage "--batch empty" "--batch: empty value" inspect "$model" --batch ""
usage "--batch with suffix" "--batch: '8k' is not an integer" inspect "$model" --batch 8k
usage "--batch=value form" "--batch: 'x' is not an integer" inspect "$model" --batch=x
usage "--ranks 0" "--ranks: '0' is out of range" inspect "$model" --ranks 0
usage "--ranks abc" "--ranks: 'abc' is not an integer" inspect "$model" --ranks abc

# ---- --dim and --shape ------------------------------------------------------------------
usage "--dim without =" "--dim: expected NAME=N, got 'batch'" inspect "$model" --dim batch
usage "--dim without name" "--dim: expected NAME=N, got '=4'" inspect "$model" --dim =4
usage "--dim bad number" "--dim batch: 'abc' is not an integer" inspect "$model" --dim batch=abc
usage "--dim zero" "--dim batch: '0' is out of range" inspect "$model" --dim batch=0
usage "--dim twice" "--dim: 'batch' is bound twice" inspect "$model" --dim batch=2 --dim batch=3
usage "--shape without =" "--shape: expected INPUT=AxBxC, got 'x'" inspect "$model" --shape x
usage "--shape without dims" "--shape x: no dims" inspect "$model" --shape x=
usage "--shape empty dim" "--shape x: bad dims '2xx3'" inspect "$model" --shape x=2xx3
usage "--shape trailing x" "--shape x: bad dims '2x3x'" inspect "$model" --shape x=2x3x
usage "--shape zero dim" "--shape x: '0' is out of range" inspect "$model" --shape x=2x0
usage "--shape letters" "--shape x: 'a' is not an integer" inspect "$model" --shape x=2xa
usage "--shape huge dim" "--shape x: '99999999999999999999' is out of range" inspect "$model" --shape x=99999999999999999999x2
usage "--shape comma syntax" "--shape x: '2,3' is not an integer" inspect "$model" --shape x=2,3
usage "--shape twice" "--shape: input 'x' is given twice" inspect "$model" --shape x=3x4x5 --shape x=3x4x5
usage "--shape too many dims" "--shape x: more than 16 dims" inspect "$model" --shape x=1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1

# ---- --format and --stage -----------------------------------------------------------------
usage "unknown format" "--format: unknown value 'xml' (expected text|dot|json|onnx)" inspect "$model" --format xml
usage "unknown stage" "unknown stage 'bogus' (known stages: imported, folded, trained, parallel)" inspect "$model" --stage bogus
usage "--nesterov without momentum" "--nesterov applies to --optimizer momentum, not 'adam'" compile "$model" -o p --optimizer adam --nesterov
usage "--bucket-mb 0" "--bucket-mb: 0 is out of range" compile "$model" -o p --bucket-mb 0
usage "--freeze empty name" "--freeze: empty name in 'a,,b'" inspect "$model" --freeze a,,b

# ---- model arguments ------------------------------------------------------------------------
usage "missing model file" "$tmp/missing.onnx" inspect "$tmp/missing.onnx"
usage "model is a directory" "is a directory" inspect "$tmp"
usage "no model" "missing MODEL.onnx" inspect --format json
usage "two models" "two model files given: '$model' and 'other.onnx'" inspect "$model" other.onnx
usage "compile missing model file" "$tmp/missing.onnx" compile "$tmp/missing.onnx" -o prog

# ---- compile flags ----------------------------------------------------------------------------
usage "compile without -o" "missing -o PROGRAM" compile "$model"
usage "unknown optimizer" "--optimizer: unknown value 'lamb' (expected sgd|momentum|adam|adagrad|adamw|rmsprop)" compile "$model" -o p --optimizer lamb
usage "--lr negative" "--lr: -1 is out of range" compile "$model" -o p --lr -1
usage "--lr zero" "--lr: 0 is out of range" compile "$model" -o p --lr 0
usage "--lr nan" "--lr: 'nan' is not a finite number" compile "$model" -o p --lr nan
usage "--lr inf" "--lr: 'inf' is not a finite number" compile "$model" -o p --lr inf
usage "--lr text" "--lr: 'fast' is not a finite number" compile "$model" -o p --lr fast
usage "--lr trailing junk" "--lr: '0.1x' is not a finite number" compile "$model" -o p --lr 0.1x
usage "--momentum 1.5" "--momentum: 1.5 is out of range" compile "$model" -o p --optimizer momentum --momentum 1.5
usage "--momentum with sgd" "--momentum applies to --optimizer momentum" compile "$model" -o p --momentum 0.5
usage "--beta1 with sgd" "--beta1 applies to --optimizer adam or adamw" compile "$model" -o p --beta1 0.9
usage "--alpha with adam" "--alpha applies to --optimizer rmsprop, not 'adam'" compile "$model" -o p --optimizer adam --alpha 0.9
usage "--alpha 1" "--alpha: 1 is out of range" compile "$model" -o p --optimizer rmsprop --alpha 1
usage "--momentum with rmsprop" "--momentum applies to --optimizer momentum, not 'rmsprop'" compile "$model" -o p --optimizer rmsprop --momentum 0.9
usage "--no-decay without decay" "--no-decay excludes variables from weight decay, but there is none: give --weight-decay F" compile "$model" -o p --no-decay '*.bias'
usage "--no-decay empty pattern" "--no-decay: empty name in 'a,'" compile "$model" -o p --weight-decay 0.1 --no-decay a,
usage "--beta2 out of range" "--beta2: 1 is out of range" compile "$model" -o p --optimizer adam --beta2 1
usage "--epsilon with momentum" "--epsilon applies to --optimizer adam, adamw, adagrad or rmsprop" compile "$model" -o p --optimizer momentum --epsilon 1e-6
usage "--epsilon zero" "--epsilon: 0 is out of range" compile "$model" -o p --optimizer adam --epsilon 0
usage "--weight-decay negative" "--weight-decay: -0.1 is out of range" compile "$model" -o p --weight-decay -0.1
usage "unknown comm" "--comm: unknown value 'star' (expected hybrid|allreduce|ps|auto)" compile "$model" -o p --comm star
usage "--partitions 0" "--partitions: '0' is out of range" compile "$model" -o p --partitions 0
usage "--partitions text" "--partitions: 'many' is not an integer (expected 1..65536) or 'auto'" compile "$model" -o p --partitions many
usage "--partitions with allreduce" "--partitions applies to parameter-server variables" compile "$model" -o p --comm allreduce --partitions 4
usage "--emit-graph unknown extension" "--emit-graph: cannot tell the format of 'g.png'" compile "$model" -o p --emit-graph g.png
usage "--infer with --lr" "--lr applies to training; it cannot be combined with --infer" compile "$model" -o p --infer --lr 0.1
usage "compile --batch 0" "--batch: '0' is out of range" compile "$model" -o p --batch 0
usage "compile --loss empty" "--loss: empty" compile "$model" -o p --loss ""

# ---- --tp, --pp, --micro-batches: one rule for compile and inspect ------------------------------
# inspect builds and predicts the program compile would: what compile
# refuses, inspect refuses with the same message.
both() { # NAME NEEDLE FLAGS...
    usage "compile $1" "$2" compile "$model" -o p --batch 8 "${@:3}"
    usage "inspect $1" "$2" inspect "$model" --batch 8 --stage parallel "${@:3}"
}
both "--pp 2 without --micro-batches" "--pp 2 needs --micro-batches M" --pp 2
both "--micro-batches without --pp" "--micro-batches splits the batch of a pipeline" --micro-batches 2
both "--micro-batches 3 at --batch 8" "--micro-batches 3 does not divide the batch 8" --pp 2 --micro-batches 3
both "--tp 2 --comm ps" "--tp needs --comm hybrid or allreduce" --tp 2 --comm ps
both "--pp 2 --comm auto" "--pp needs --comm hybrid or allreduce" --pp 2 --micro-batches 2 --comm auto
both "--tp 2 with --sparsity" "--tp splits dense weights; it cannot be combined with --sparsity" --tp 2 --sparsity auto:0.5
both "--ranks 3 --tp 2" "--ranks 3 is not a multiple of --tp x --pp = 2 x 1 = 2" --ranks 3 --tp 2
both "--ranks 6 --tp 2 --pp 2" "--ranks 6 is not a multiple of --tp x --pp = 2 x 2 = 4" --ranks 6 --tp 2 --pp 2 --micro-batches 2

# ---- what works -----------------------------------------------------------------------------
run_case "--help" 0 "" --help
grep -q '^usage: parallaxc <command>' "$tmp/out" || { echo "FAIL --help text"; failed=$((failed + 1)); }
run_case "inspect --help" 0 "" inspect --help
grep -q -- '--stage S' "$tmp/out" || { echo "FAIL inspect --help text"; failed=$((failed + 1)); }
run_case "compile --help" 0 "" compile --help
grep -q -- '--optimizer NAME' "$tmp/out" || { echo "FAIL compile --help text"; failed=$((failed + 1)); }
run_case "--version" 0 "" --version
grep -q '^parallaxc [0-9]' "$tmp/out" || { echo "FAIL --version text"; failed=$((failed + 1)); }
# Valid compile flags get past option parsing: whatever compile then does with
# this model (it may not support training yet), it is not a usage error. The
# unknown --freeze names make a working compile stop early, too.
"$parallaxc" compile "$model" -o "$tmp/prog" --batch 4 --dim seq=16 --shape x=3x4x5 \
    --optimizer adam --lr 1e-3 --beta1 0.8 --beta2 0.99 --epsilon 1e-7 --weight-decay 0.01 \
    --freeze no_such_a,no_such_b --comm hybrid --partitions auto --emit-graph "$tmp/g.json" \
    --loss sum >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] || [ $rc -gt 1 ] || grep -q "Try 'parallaxc" "$tmp/err"; then
    echo "FAIL compile with valid flags: status $rc"
    sed 's/^/    stderr: /' "$tmp/err" | head -n 5
    failed=$((failed + 1))
else
    echo "PASS compile with valid flags is not a usage error (status $rc)"
    passed=$((passed + 1))
fi
run_case "-- ends options" 0 "" inspect --format json -- "$model"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
