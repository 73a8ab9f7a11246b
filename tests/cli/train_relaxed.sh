#!/bin/bash
# Usage: train_relaxed.sh PARALLAXC SRCDIR
#
# The relaxed synchronization flags of compiled programs
# (docs/relaxed_sync.md), end to end under mpirun -np 2:
# - each mode against an independent PyTorch simulation of the ranks
#   (tests/tools/relaxed_reference.py): the program's losses and weights
#   must be within a tenth of the distance between the simulated mode and
#   simulated exact training: --wire bf16, --wire bf16 --wire-error-feedback
#   and --wire fp16 --wire-error-feedback (MLP, recursive doubling; fp16
#   within a quarter, see sim_check), --sync-every 3
#   --local-sgd-after 2 (MLP), --staleness 2 (recommender, parameter-server
#   tables), --sync-every 2 --staleness 1 together (recommender);
# - a run resumed from a checkpoint written under --wire bf16
#   --wire-error-feedback --staleness 2 --sync-every 3 continues byte for
#   byte; resuming under another mode is refused naming both modes, and
#   accepted with --allow-mode-change;
# - bad values are refused naming the flag (exit 2);
# - convergence: 4 ranks, per-rank batch 32, recommender, SGD lr 0.1,
#   shuffled, 200 steps: --wire bf16 and --staleness 2 end within 1% of
#   exact training's loss (mean of the last 50 steps), --sync-every 4
#   within 3%.
. "$(dirname "$0")/lib.sh" "$@"
ref=$src/tests/tools/relaxed_reference.py
mpi() { # RANKS PROG ARGS...
    local n=$1
    shift
    timeout 180 mpirun --allow-run-as-root --oversubscribe -np "$n" -x PX_ALLREDUCE=doubling "$@"
}
mlp=$src/examples/mlp
rec=$src/examples/recommender
steps=12
check "compile mlp" "$parallaxc" compile "$mlp/model.onnx" -o "$tmp/mlp" --batch 16 --lr 0.1
check "compile recommender" "$parallaxc" compile "$rec/model.onnx" -o "$tmp/rec" --batch 32 --lr 0.5

# CASE NAME PROG DATA FLAGS...: the program's run under mpirun -np 2, and a
# line for the simulation's job list.
jobs=$tmp/jobs.txt
: >"$jobs"
case_run() {
    local name=$1 prog=$2 ex=$3
    shift 3
    local lr=0.1 b=16
    [ "$prog" = rec ] && lr=0.5 b=32
    check "$name: program" mpi 2 "$tmp/$prog" --data "$ex/data" --steps $steps --log-every 0 \
        --losses "$tmp/$name.csv" --save "$tmp/$name.onnx" "$@"
    echo "$ex --ranks 2 --batch $b --steps $steps --lr $lr --out $tmp/sim-$name --parallaxc $parallaxc $*" \
        >>"$jobs"
}
case_run mlp-exact mlp "$mlp"
case_run mlp-bf16 mlp "$mlp" --wire bf16
case_run mlp-bf16-ef mlp "$mlp" --wire bf16 --wire-error-feedback
case_run mlp-fp16-ef mlp "$mlp" --wire fp16 --wire-error-feedback
case_run mlp-local mlp "$mlp" --sync-every 3 --local-sgd-after 2
case_run rec-exact rec "$rec" --no-overlap
case_run rec-stale rec "$rec" --no-overlap --staleness 2
case_run rec-local-stale rec "$rec" --no-overlap --sync-every 2 --staleness 1
# the simulation takes no --no-overlap: with --no-overlap each pull decides
# when it runs, the rule it models
sed -i 's/ --no-overlap//' "$jobs"
check "simulations" "$py" "$ref" runs "$jobs"
# sim_check NAME EXACT [FACTOR]: the program's run NAME against the
# simulation of its mode, scaled by the simulated mode's distance from EXACT.
# The program's and PyTorch's per-rank gradients differ in float32's last
# bits, which now and then rounds an element to the neighbouring 16-bit
# value: a floor of about 0.01 of bf16's effect and 0.06 of fp16's (whose
# effect is 8 times smaller), hence fp16's larger FACTOR.
sim_check() {
    local out
    if out=$("$py" "$ref" check "$tmp/$1.csv" "$tmp/$1.onnx" --sim "$tmp/sim-$1" \
        --exact "$tmp/sim-$2" --factor "${3:-0.1}" --label "$1" 2>"$tmp/cmp"); then
        pass "$1 against its simulation (loss, weight ratio: $out)"
    else
        fail "$1 against its simulation: $(cat "$tmp/cmp")"
    fi
}
# the exact runs against the exact simulation: the comparison's scale
if "$py" "$src/tests/tools/train_reference.py" compare --ref "$tmp/sim-mlp-exact" "$tmp/mlp-exact.csv" \
    "$tmp/mlp-exact.onnx" "$mlp/model.onnx" --loss-rtol 1e-5 >"$tmp/cmp" 2>&1; then
    pass "mlp exact against the simulation: $(cat "$tmp/cmp")"
else
    fail "mlp exact against the simulation: $(cat "$tmp/cmp")"
fi
sim_check mlp-bf16 mlp-exact
sim_check mlp-bf16-ef mlp-exact
sim_check mlp-fp16-ef mlp-exact 0.25
sim_check mlp-local mlp-exact
sim_check rec-stale rec-exact
sim_check rec-local-stale rec-exact

# ---- checkpoints under a relaxed mode
mode=(--wire bf16 --wire-error-feedback --staleness 2 --sync-every 3)
check "relaxed: 10 steps, checkpoint at 6" mpi 2 "$tmp/rec" --data "$rec/data" --steps 10 \
    --log-every 0 --losses "$tmp/full.csv" --save "$tmp/full.onnx" --checkpoint "$tmp/ckpt" \
    --checkpoint-every 6 "${mode[@]}"
check "relaxed: 6 steps + checkpoint" mpi 2 "$tmp/rec" --data "$rec/data" --steps 6 \
    --log-every 0 --losses "$tmp/part.csv" --checkpoint "$tmp/ckpt" "${mode[@]}"
check "relaxed: resume to 10" mpi 2 "$tmp/rec" --data "$rec/data" --steps 10 --log-every 0 \
    --losses "$tmp/part.csv" --resume "$tmp/ckpt" --save "$tmp/part.onnx" "${mode[@]}"
check "relaxed resume: same losses, byte for byte" cmp "$tmp/full.csv" "$tmp/part.csv"
check "relaxed resume: same model, byte for byte" cmp "$tmp/full.onnx" "$tmp/part.onnx"

# expect_refusal LABEL PATTERN RANKS PROG ARGS...: non-zero exit, PATTERN in the output
expect_refusal() {
    local label=$1 pattern=$2 n=$3
    shift 3
    local rc=0
    if [ "$n" -gt 1 ]; then mpi "$n" "$@" >"$tmp/out" 2>&1 || rc=$?; else timeout 60 "$@" >"$tmp/out" 2>&1 || rc=$?; fi
    if [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q -e "$pattern" "$tmp/out"; then
        pass "$label (exit $rc)"
    else
        fail "$label: exit $rc, output: $(head -c 400 "$tmp/out")"
    fi
}
expect_refusal "resume under --wire fp16 refused" "wire bf16" 2 "$tmp/rec" --data "$rec/data" \
    --steps 10 --log-every 0 --resume "$tmp/ckpt" --wire fp16 --staleness 2 --sync-every 3
expect_refusal "resume in exact mode refused" "allow-mode-change" 2 "$tmp/rec" --data "$rec/data" \
    --steps 10 --log-every 0 --resume "$tmp/ckpt"
check "resume under another mode with --allow-mode-change" mpi 2 "$tmp/rec" --data "$rec/data" \
    --steps 8 --log-every 0 --resume "$tmp/ckpt" --allow-mode-change --staleness 1

# ---- bad values name the flag
p=$tmp/mlp
d=(--data "$mlp/data" --steps 1 --log-every 0)
expect_status2() { # LABEL PATTERN ARGS...
    local label=$1 pattern=$2 rc=0
    shift 2
    timeout 60 "$p" "${d[@]}" "$@" >"$tmp/out" 2>&1 || rc=$?
    if [ $rc -eq 2 ] && grep -q -e "$pattern" "$tmp/out"; then
        pass "$label"
    else
        fail "$label: exit $rc, output: $(head -c 400 "$tmp/out")"
    fi
}
expect_status2 "--wire fp8 refused" "--wire" --wire fp8
expect_status2 "--wire without a value refused" "--wire" --wire
expect_status2 "--sync-every 0 refused" "--sync-every" --sync-every 0
expect_status2 "--sync-every x refused" "--sync-every" --sync-every x
expect_status2 "--staleness -1 refused" "--staleness" --staleness -1
expect_status2 "--local-sgd-after -3 refused" "--local-sgd-after" --local-sgd-after -3 --sync-every 2
expect_status2 "--wire-error-feedback without a 16-bit wire refused" "--wire-error-feedback" \
    --wire-error-feedback
expect_status2 "--local-sgd-after without --sync-every refused" "--local-sgd-after" --local-sgd-after 2

# ---- convergence
conv=(--data "$rec/data" --steps 200 --log-every 0 --lr 0.1 --shuffle 1)
tail_mean() { awk -F, 'NR > 1 { l[n++] = $2 } END { s = 0; for (i = n - 50; i < n; i++) s += l[i]; printf "%.6f", s / 50 }' "$1"; }
check "convergence: exact, 4 ranks" mpi 4 "$tmp/rec" "${conv[@]}" --losses "$tmp/conv-exact.csv"
exact_loss=$(tail_mean "$tmp/conv-exact.csv")
converges() { # NAME LIMIT FLAGS...
    local name=$1 limit=$2
    shift 2
    check "convergence: $name, 4 ranks" mpi 4 "$tmp/rec" "${conv[@]}" --losses "$tmp/conv.csv" "$@" ||
        return
    local got
    got=$(tail_mean "$tmp/conv.csv")
    if awk -v a="$got" -v e="$exact_loss" -v l="$limit" 'BEGIN { d = (a - e) / e; exit !(d <= l && d >= -l) }'; then
        pass "convergence: $name ends at $got, exact $exact_loss (limit $limit)"
    else
        fail "convergence: $name ends at $got, exact $exact_loss: more than $limit apart"
    fi
}
converges "--wire bf16" 0.01 --wire bf16
converges "--staleness 2" 0.01 --staleness 2
converges "--sync-every 4" 0.03 --sync-every 4

echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
