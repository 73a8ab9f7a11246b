#!/bin/bash
# Usage: train_schedules.sh PARALLAXC SRCDIR
#
# Run-time training settings of a compiled program against PyTorch:
#   --lr F (overriding the compiled rate), --lr-schedule constant|step|cosine|
#   linear with --lr-warmup K (torch's StepLR, or a LambdaLR with the same
#   lambda), --clip-grad-norm F (torch.nn.utils.clip_grad_norm_).
# Each case trains 20 steps and is checked by tests/tools/train_reference.py:
# every step's loss within 1e-4 relative and every trained weight within 1% of
# its update. The clipping cases use a norm that clips (the reference's
# unclipped norms exceed it at some steps, checked). Then data parallelism with
# clipping and a schedule: 2 ranks at batch b against 1 rank at 2b in every
# --comm mode (hybrid, allreduce, ps), losses within 1e-5, and both against
# PyTorch at the global batch (including the DLRM example, nn.EmbeddingBag,
# with cosine:20, warm-up 3 and --clip-grad-norm 1.0).
. "$(dirname "$0")/lib.sh" "$@"
ref=$src/tests/tools/train_reference.py
steps=20
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe -np 2)

# name | example | batch | compile flags | run-time flags (the reference gets both;
# a run-time --lr comes last and wins there as in the program)
cases=(
    "mlp-lr|mlp|8|--optimizer sgd --lr 0.5|--lr 0.05"
    "mlp-momentum-step|mlp|8|--optimizer momentum --lr 0.02 --momentum 0.9|--lr-schedule step:5:0.5"
    "mlp-adam-cosine-clip|mlp|8|--optimizer adam --lr 0.01|--lr 0.003 --lr-schedule cosine:20 --lr-warmup 3 --clip-grad-norm 0.5"
    "rec-sgd-cosine-clip|recommender|8|--optimizer sgd --lr 0.1|--lr 0.3 --lr-schedule cosine:20 --lr-warmup 3 --clip-grad-norm 0.35"
    "rec-adam-linear-clip|recommender|8|--optimizer adam --lr 0.01 --weight-decay 0.01|--lr-schedule linear:20 --lr-warmup 2 --clip-grad-norm 0.3"
    "rec-adagrad-step-warm|recommender|8|--optimizer adagrad --lr 0.1|--lr-schedule step:4:0.7 --lr-warmup 2 --clip-grad-norm 0.3"
)
# example | per-rank batch | compile flags | run-time flags: every --comm mode
parallel_cases=(
    "mlp|4|--optimizer momentum --lr 0.02 --momentum 0.9|--lr-schedule cosine:20 --lr-warmup 3 --clip-grad-norm 0.5"
    "recommender|4|--optimizer adam --lr 0.01|--lr 0.02 --lr-schedule linear:20 --lr-warmup 2 --clip-grad-norm 0.3"
    "dlrm|4|--optimizer sgd --lr 0.1|--lr-schedule cosine:20 --lr-warmup 3 --clip-grad-norm 1.0"
)
comms=(hybrid allreduce ps)

jobs=$tmp/jobs.txt
: >"$jobs"
for c in "${cases[@]}"; do
    IFS='|' read -r name ex b cflags rflags <<<"$c"
    echo "$src/examples/$ex --batch $b --steps $steps --parallaxc $parallaxc $cflags $rflags --out $tmp/$name.ref" >>"$jobs"
done
for c in "${parallel_cases[@]}"; do
    IFS='|' read -r ex b cflags rflags <<<"$c"
    echo "$src/examples/$ex --batch $((2 * b)) --steps $steps --parallaxc $parallaxc $cflags $rflags --out $tmp/$ex-parallel.ref" >>"$jobs"
done
"$py" "$ref" runs "$jobs" >"$tmp/ref.log" 2>&1 &
ref_pid=$!

failed=0

# run_case NAME EXAMPLE BATCH RANKS COMM "COMPILE FLAGS" "RUN FLAGS"
run_case() {
    local name=$1 ex=$2 b=$3 ranks=$4 comm=$5 cflags=$6 rflags=$7
    local dir=$src/examples/$ex launch=()
    # shellcheck disable=SC2086 # flags are words
    if ! "$parallaxc" compile "$dir/model.onnx" -o "$tmp/$name.prog" --batch "$b" --comm "$comm" \
        $cflags >"$tmp/$name.log" 2>&1; then
        fail "$name: compile: $(head -c 800 "$tmp/$name.log")"
        return 1
    fi
    [ "$ranks" -gt 1 ] && launch=("${mpirun_cmd[@]}")
    # shellcheck disable=SC2086
    if ! timeout 120 "${launch[@]}" "$tmp/$name.prog" --data "$dir/data" --steps "$steps" \
        --losses "$tmp/$name.csv" --save "$tmp/$name.onnx" --log-every 0 $rflags \
        >"$tmp/$name.log" 2>&1; then
        fail "$name: run ($ranks rank(s)): $(tail -c 800 "$tmp/$name.log")"
        return 1
    fi
}

compare() { # NAME LABEL EXAMPLE RTOL REF_ARGS...
    local name=$1 label=$2 ex=$3 rtol=$4 out
    shift 4
    if out=$("$py" "$ref" compare "$@" "$tmp/$name.csv" "$tmp/$name.onnx" \
        "$src/examples/$ex/model.onnx" --loss-rtol "$rtol" --label "$label" 2>"$tmp/$name.cmp"); then
        printf '%-44s %s ok\n' "$label" "$out"
    else
        fail "$(cat "$tmp/$name.cmp")"
    fi
}

# clips REF MAX_NORM: the reference's unclipped norm exceeded MAX_NORM at some step.
clips() {
    "$py" -c 'import json,sys; n=json.load(open(sys.argv[1]))["grad_norms"]; m=float(sys.argv[2])
k=sum(x > m for x in n); print("  clipped at %d of %d steps" % (k, len(n))); sys.exit(0 if k else 1)' "$1" "$2"
}

ran=()
for c in "${cases[@]}"; do
    IFS='|' read -r name ex b cflags rflags <<<"$c"
    run_case "$name" "$ex" "$b" 1 hybrid "$cflags" "$rflags" && ran+=("$c")
done
ran_parallel=()
ran_two=()
for c in "${parallel_cases[@]}"; do
    IFS='|' read -r ex b cflags rflags <<<"$c"
    for comm in "${comms[@]}"; do
        one=$ex-$comm-1x$((2 * b))
        two=$ex-$comm-2x$b
        run_case "$one" "$ex" $((2 * b)) 1 "$comm" "$cflags" "$rflags" || continue
        ran_parallel+=("$ex|$comm|$((2 * b))|$rflags")
        run_case "$two" "$ex" "$b" 2 "$comm" "$cflags" "$rflags" || continue
        compare "$two" "$ex $comm 2x$b vs 1x$((2 * b))" "$ex" 1e-5 --ref-run "$tmp/$one.csv" "$tmp/$one.onnx"
        ran_two+=("$ex|$comm|$b")
    done
done

if ! wait "$ref_pid"; then
    fail "PyTorch reference: $(tail -c 1500 "$tmp/ref.log")"
fi
for c in "${ran[@]}"; do
    IFS='|' read -r name ex b cflags rflags <<<"$c"
    compare "$name" "$name vs torch" "$ex" 1e-4 --ref "$tmp/$name.ref"
    if [[ $rflags =~ --clip-grad-norm\ ([0-9.]+) ]]; then
        clips "$tmp/$name.ref.json" "${BASH_REMATCH[1]}" || fail "$name: the norm never clips"
    fi
done
for r in "${ran_parallel[@]}"; do
    IFS='|' read -r ex comm b rflags <<<"$r"
    compare "$ex-$comm-1x$b" "$ex $comm 1x$b vs torch" "$ex" 1e-4 --ref "$tmp/$ex-parallel.ref"
done
# The 2-rank runs against PyTorch at the global batch directly, too.
for r in "${ran_two[@]}"; do
    IFS='|' read -r ex comm b <<<"$r"
    compare "$ex-$comm-2x$b" "$ex $comm 2x$b vs torch" "$ex" 1e-4 --ref "$tmp/$ex-parallel.ref"
done
for c in "${parallel_cases[@]}"; do
    IFS='|' read -r ex b cflags rflags <<<"$c"
    [[ $rflags =~ --clip-grad-norm\ ([0-9.]+) ]] && { clips "$tmp/$ex-parallel.ref.json" "${BASH_REMATCH[1]}" || fail "$ex parallel: the norm never clips"; }
done

# A resumed run continues the schedule and the clipping bit for bit.
prog=$tmp/rec-sgd-cosine-clip.prog
rflags="--lr 0.3 --lr-schedule cosine:20 --lr-warmup 3 --clip-grad-norm 0.35 --log-every 0"
data=$src/examples/recommender/data
# shellcheck disable=SC2086
if "$prog" --data "$data" --steps 9 --checkpoint "$tmp/ck.bin" $rflags >"$tmp/r1.log" 2>&1 &&
    "$prog" --data "$data" --steps "$steps" --resume "$tmp/ck.bin" --losses "$tmp/resumed.csv" \
        --save "$tmp/resumed.onnx" $rflags >"$tmp/r2.log" 2>&1; then
    tail -n +11 "$tmp/rec-sgd-cosine-clip.csv" >"$tmp/want.csv"
    tail -n +2 "$tmp/resumed.csv" >"$tmp/got.csv"
    if cmp -s "$tmp/want.csv" "$tmp/got.csv" && cmp -s "$tmp/resumed.onnx" "$tmp/rec-sgd-cosine-clip.onnx"; then
        echo "resume with a schedule and clipping: steps 10..20 and the weights bit-identical"
    else
        fail "resumed run differs: $(diff "$tmp/want.csv" "$tmp/got.csv" | head -5)"
    fi
else
    fail "resume: $(tail -c 600 "$tmp/r1.log" "$tmp/r2.log")"
fi

# Bad values are refused with the flag named (exit 2).
prog=$tmp/mlp-lr.prog
for bad in "--lr 0" "--lr -1" "--lr-schedule cosine" "--lr-schedule step:0:0.5" \
    "--lr-warmup 5 --lr-schedule cosine:5" "--lr-schedule wobble" "--clip-grad-norm nan"; do
    # shellcheck disable=SC2086
    "$prog" --data "$src/examples/mlp/data" --steps 1 $bad >"$tmp/bad.log" 2>&1
    rc=$?
    if ! { [ "$rc" -eq 2 ] && grep -q -- "${bad%% *}" "$tmp/bad.log"; }; then
        fail "'$bad': exit $rc, $(cat "$tmp/bad.log")"
    fi
done

if [ "$failed" -ne 0 ]; then
    echo "$failed failure(s)"
    exit 1
fi
echo "all passed"
