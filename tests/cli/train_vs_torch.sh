#!/bin/bash
# Usage: train_vs_torch.sh PARALLAXC SRCDIR
#
# Compiled training programs train exactly like PyTorch.
# For every case below: `parallaxc compile` the example with the optimizer,
# run 20 steps (./program alone, or 2 ranks under mpirun), and check against
# tests/tools/train_reference.py, which trains the example's own PyTorch module
# (loaded with the ONNX initializers) on the same global batches with
# torch.optim (lazy row updates for the sparse embedding tables):
#   - the loss of every step within 1e-4 relative,
#   - every trained initializer in --save's ONNX: max|ours - torch| at most 1%
#     of max|torch - initial| (the error is at most 1% of the update's size).
# AdamW and RMSprop (with --no-decay patterns) on the recommender's dense and
# sparse variables, alone and on 2 ranks: losses within 1e-6 relative.
# Then data parallelism: 2 ranks at batch b must train like 1 rank at 2b with
# the same --comm (hybrid, allreduce, ps): losses within 1e-5 relative, weights
# within the same 1%.
# Prints a table of the largest errors; non-zero exit naming the example,
# optimizer and variable on any failure.
. "$(dirname "$0")/lib.sh" "$@"
set -f # --no-decay patterns are words, not file names
ref=$src/tests/tools/train_reference.py
steps=20
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe -np 2)

# name | example | per-rank batch | ranks | flags shared by parallaxc and the reference
#   [| loss tolerance, default 1e-4]
cases=(
    "mlp-sgd|mlp|8|1|--optimizer sgd --lr 0.05"
    "cnn-sgd|cnn|8|1|--optimizer sgd --lr 0.1"
    "lstm_lm-sgd|lstm_lm|4|1|--optimizer sgd --lr 0.5"
    "transformer_lm-sgd|transformer_lm|4|1|--optimizer sgd --lr 0.2"
    "recommender-sgd|recommender|8|1|--optimizer sgd --lr 0.5"
    "lm1b-sgd|lm1b|4|1|--optimizer sgd --lr 0.5"
    "lm1b-adam|lm1b|4|1|--optimizer adam --lr 0.01"
    "dlrm-sgd|dlrm|8|1|--optimizer sgd --lr 0.5"
    "dlrm-sgd-np2|dlrm|4|2|--optimizer sgd --lr 0.5"
    "dlrm-adam-np2|dlrm|4|2|--optimizer adam --lr 0.01"
    "mlp-adam|mlp|8|1|--optimizer adam --lr 0.002 --epsilon 1e-6"
    "mlp-momentum|mlp|8|1|--optimizer momentum --lr 0.02 --momentum 0.9"
    "mlp-nesterov-wd|mlp|8|1|--optimizer momentum --lr 0.02 --momentum 0.8 --nesterov --weight-decay 0.01"
    "mlp-adagrad-wd|mlp|8|1|--optimizer adagrad --lr 0.02 --weight-decay 0.01"
    "recommender-adam-wd|recommender|8|1|--optimizer adam --lr 0.01 --beta1 0.8 --beta2 0.99 --weight-decay 0.01"
    "recommender-momentum|recommender|8|1|--optimizer momentum --lr 0.2 --momentum 0.9"
    "recommender-nesterov|recommender|8|1|--optimizer momentum --lr 0.2 --momentum 0.9 --nesterov"
    "recommender-adagrad-wd|recommender|8|1|--optimizer adagrad --lr 0.1 --weight-decay 0.001"
    "recommender-adamw-nodecay|recommender|8|1|--optimizer adamw --lr 0.01 --no-decay *.bias,category.weight|1e-6"
    "recommender-rmsprop-wd-nodecay|recommender|8|1|--optimizer rmsprop --lr 0.005 --alpha 0.9 --weight-decay 0.01 --no-decay mlp.0.*|1e-6"
    "recommender-adamw-np2|recommender|4|2|--optimizer adamw --lr 0.01 --weight-decay 0.05 --no-decay *.bias|1e-6"
)
# Data parallelism: example | per-rank batch | flags; run with every --comm mode.
parallel_cases=(
    "mlp|4|--optimizer momentum --lr 0.02 --momentum 0.9"
    "recommender|4|--optimizer adam --lr 0.01 --weight-decay 0.01"
    "lm1b|2|--optimizer adam --lr 0.01"
    "dlrm|4|--optimizer momentum --lr 0.1 --momentum 0.9"
)
comms=(hybrid allreduce ps)

# The PyTorch side: one interpreter for every reference run, started first so
# it overlaps the compiles.
jobs=$tmp/jobs.txt
: >"$jobs"
for c in "${cases[@]}"; do
    IFS='|' read -r name ex b ranks flags _ <<<"$c"
    echo "$src/examples/$ex --batch $((b * ranks)) --steps $steps --parallaxc $parallaxc $flags --out $tmp/$name.ref" >>"$jobs"
done
for c in "${parallel_cases[@]}"; do
    IFS='|' read -r ex b flags <<<"$c"
    echo "$src/examples/$ex --batch $((2 * b)) --steps $steps --parallaxc $parallaxc $flags --out $tmp/$ex-parallel.ref" >>"$jobs"
done
"$py" "$ref" runs "$jobs" >"$tmp/ref.log" 2>&1 &
ref_pid=$!

failed=0
table=()

# compile_and_run NAME EXAMPLE BATCH RANKS COMM FLAGS...: leaves
# $tmp/NAME.csv and $tmp/NAME.onnx; returns non-zero (after reporting) on failure.
compile_and_run() {
    local name=$1 ex=$2 b=$3 ranks=$4 comm=$5
    shift 5
    local dir=$src/examples/$ex
    if ! "$parallaxc" compile "$dir/model.onnx" -o "$tmp/$name.prog" --batch "$b" --comm "$comm" "$@" \
        >"$tmp/$name.log" 2>&1; then
        fail "$name: compile: $(head -c 800 "$tmp/$name.log")"
        return 1
    fi
    local launch=()
    [ "$ranks" -gt 1 ] && launch=("${mpirun_cmd[@]}")
    if ! timeout 120 "${launch[@]}" "$tmp/$name.prog" --data "$dir/data" --steps "$steps" \
        --losses "$tmp/$name.csv" --save "$tmp/$name.onnx" >"$tmp/$name.log" 2>&1; then
        fail "$name: run (${ranks} rank(s)): $(tail -c 800 "$tmp/$name.log")"
        return 1
    fi
}

# compare NAME LABEL MODEL LOSS_RTOL REF_ARGS...: adds a table row.
compare() {
    local name=$1 label=$2 model=$3 rtol=$4
    shift 4
    local out status=ok loss_err=- weight_err=- worst=-
    if ! out=$("$py" "$ref" compare "$@" "$tmp/$name.csv" "$tmp/$name.onnx" "$model" \
        --loss-rtol "$rtol" --label "$label" 2>"$tmp/$name.cmp"); then
        status=FAIL
        fail "$(cat "$tmp/$name.cmp")"
    fi
    [ -n "$out" ] && read -r loss_err weight_err worst <<<"$out"
    table+=("$(printf '%-34s %10s %10s  %-40s %s' "$label" "$loss_err" "$weight_err" "$worst" "$status")")
}

ran=()
ran_parallel=()
for c in "${cases[@]}"; do
    IFS='|' read -r name ex b ranks flags _ <<<"$c"
    # shellcheck disable=SC2086 # flags are words
    compile_and_run "$name" "$ex" "$b" "$ranks" hybrid $flags && ran+=("$c")
done

for c in "${parallel_cases[@]}"; do
    IFS='|' read -r ex b flags <<<"$c"
    for comm in "${comms[@]}"; do
        one=$ex-$comm-1x$((2 * b))
        two=$ex-$comm-2x$b
        # shellcheck disable=SC2086
        compile_and_run "$one" "$ex" $((2 * b)) 1 "$comm" $flags || continue
        ran_parallel+=("$ex|$comm|$((2 * b))")
        # shellcheck disable=SC2086
        compile_and_run "$two" "$ex" "$b" 2 "$comm" $flags || continue
        compare "$two" "$ex $comm 2x$b vs 1x$((2 * b))" \
            "$src/examples/$ex/model.onnx" 1e-5 --ref-run "$tmp/$one.csv" "$tmp/$one.onnx"
    done
done

if ! wait "$ref_pid"; then
    fail "PyTorch reference: $(tail -c 1500 "$tmp/ref.log")"
fi
for c in "${ran[@]}"; do
    IFS='|' read -r name ex b ranks flags rtol <<<"$c"
    if [ ! -f "$tmp/$name.ref.npz" ]; then
        fail "$name: no PyTorch reference"
        continue
    fi
    compare "$name" "$name (b=$b)" "$src/examples/$ex/model.onnx" "${rtol:-1e-4}" \
        --ref "$tmp/$name.ref"
done
# The 1-rank runs of the parallel cases against PyTorch too: every --comm mode.
for r in "${ran_parallel[@]}"; do
    IFS='|' read -r ex comm b <<<"$r"
    compare "$ex-$comm-1x$b" "$ex $comm 1x$b vs torch" "$src/examples/$ex/model.onnx" 1e-4 \
        --ref "$tmp/$ex-parallel.ref"
done

echo
printf '%-34s %10s %10s  %-40s\n' "case" "loss err" "w err/upd" "worst variable"
[ ${#table[@]} -gt 0 ] && printf '%s\n' "${table[@]}"
echo "loss err: max relative error of a step's loss; w err/upd: max over variables of"
echo "max|w_ours - w_ref| / max|w_ref - w_initial| (limit 0.01)"
if [ "$failed" -ne 0 ]; then
    echo "$failed failure(s)"
    exit 1
fi
echo "all ${#table[@]} comparisons passed"
