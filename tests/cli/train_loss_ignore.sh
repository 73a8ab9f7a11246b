#!/bin/bash
# Usage: train_loss_ignore.sh PARALLAXC SRCDIR
#
# A mean over the rows a loss keeps (ignore_index, class weights;
# docs/training.md "Losses that skip rows") is the global batch's on N
# ranks: N ranks at batch b train like one rank at N*b, every step's loss
# within 1e-6 relative over 20 steps and every weight within 1e-5
# (tests/tools/compare_runs.py), on a language model whose ranks keep
# different numbers of targets (tests/tools/padded_lm.py: at 4 ranks of 2
# samples, rank 0 keeps 1 target of 8):
#   - SoftmaxCrossEntropyLoss, embedding on the parameter servers (hybrid),
#     at 2 and 4 ranks; --comm allreduce at 2;
#   - NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss with class
#     weights, at 2 ranks;
#   - --tp 2 on 4 ranks: the MLP pair split, and (without the hidden
#     layer) the vocabulary projection split (TPSoftmaxCrossEntropy);
#   - the 2-rank run against PyTorch at the global batch (train_reference.py).
# Where micro-batches share a step (--pp, --accumulate) and keep different
# numbers of targets, the run goes on with equal weights and warns once,
# naming the flag; class weights under --pp are refused at compile time.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
steps=20
train=(--optimizer momentum --lr 0.2)
for v in sce nll weighted vocab; do
    "$py" "$src/tests/tools/padded_lm.py" "$tmp/$v" "$src" "$v" >"$tmp/$v.export" 2>&1 ||
        { fail "padded_lm.py $v: $(tail -c 600 "$tmp/$v.export")"; }
done

# case LABEL VARIANT RANKS BATCH [COMPILE FLAGS...]: RANKS ranks at BATCH
# against 1 rank at RANKS*BATCH / (--tp K: K) with the same flags.
case_() {
    local label=$1 v=$2 n=$3 b=$4 id k=1
    shift 4
    [ "${1:-}" = --tp ] && k=$2
    id=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    "$parallaxc" compile "$tmp/$v/model.onnx" -o "$tmp/$id.n" --batch "$b" "${train[@]}" "$@" \
        >"$tmp/$id.log" 2>&1 &&
        "$parallaxc" compile "$tmp/$v/model.onnx" -o "$tmp/$id.one" --batch $((n / k * b)) \
            "${train[@]}" >>"$tmp/$id.log" 2>&1 ||
        { fail "$label: compile: $(grep -v '^note' "$tmp/$id.log" | head -c 600)"; return; }
    timeout 300 mpirun --oversubscribe -np "$n" "$tmp/$id.n" --data "$tmp/$v/data" --steps $steps \
        --log-every 0 --losses "$tmp/$id.n.csv" --save "$tmp/$id.n.onnx" >"$tmp/$id.run" 2>&1 &&
        timeout 300 "$tmp/$id.one" --data "$tmp/$v/data" --steps $steps --log-every 0 \
            --losses "$tmp/$id.one.csv" --save "$tmp/$id.one.onnx" >>"$tmp/$id.run" 2>&1 ||
        { fail "$label: run: $(tail -c 600 "$tmp/$id.run")"; return; }
    check "$label" "$py" "$src/tests/tools/compare_runs.py" "$tmp/$id.one.csv" \
        "$tmp/$id.one.onnx" "$tmp/$id.n.csv" "$tmp/$id.n.onnx"
}

case_ "cross-entropy, ignore_index, hybrid: 2 ranks = 1 rank at batch 8" sce 2 4
case_ "cross-entropy, ignore_index, hybrid: 4 ranks = 1 rank at batch 8" sce 4 2
case_ "cross-entropy, ignore_index, --comm allreduce: 2 ranks" sce 2 4 --comm allreduce
case_ "NegativeLogLikelihoodLoss, ignore_index: 2 ranks" nll 2 4
case_ "cross-entropy with class weights: 2 ranks" weighted 2 4
case_ "cross-entropy, ignore_index, --tp 2 (MLP pair) on 4 ranks = 1 rank at batch 8" sce 4 4 --tp 2
case_ "TPSoftmaxCrossEntropy, ignore_index, --tp 2 on 4 ranks = 1 rank at batch 8" vocab 4 4 \
    --tp 2

# The 2-rank run against PyTorch at the global batch of 8 (its loss divides
# by the kept targets of all 8 samples).
label="cross-entropy, ignore_index: 2 ranks = PyTorch at batch 8"
id=$(echo "cross-entropy, ignore_index, hybrid: 2 ranks = 1 rank at batch 8" |
    tr -c 'a-zA-Z0-9\n' '_')
if "$py" "$src/tests/tools/train_reference.py" run "$tmp/sce" --batch 8 --steps $steps \
    --optimizer momentum --lr 0.2 --parallaxc "$parallaxc" --out "$tmp/torch" >"$tmp/torch.log" 2>&1; then
    check "$label" "$py" "$src/tests/tools/train_reference.py" compare --ref "$tmp/torch" \
        "$tmp/$id.n.csv" "$tmp/$id.n.onnx" "$tmp/sce/model.onnx" --loss-rtol 1e-5
else
    fail "$label: $(tail -c 600 "$tmp/torch.log")"
fi

# What is refused.
"$parallaxc" compile "$tmp/sce/model.onnx" -o "$tmp/pp" --batch 4 "${train[@]}" --pp 2 --comm allreduce \
    --micro-batches 2 >"$tmp/pp.log" 2>&1 || fail "--pp 2: compile: $(head -c 600 "$tmp/pp.log")"
# Micro-batches that keep different numbers of targets: the run goes on
# (equal weights, as PyTorch's usual accumulation) and warns once, naming
# the flag.
warns() { # LABEL FLAG COMMAND...: exit 0, and one warning naming FLAG
    local label=$1 flag=$2
    shift 2
    if "$@" >"$tmp/warn.log" 2>&1 && [ "$(grep -c "^warning: .*under $flag" "$tmp/warn.log")" = 1 ]; then
        pass "$label"
    else
        fail "$label: $(tail -c 600 "$tmp/warn.log")"
    fi
}
warns "--pp with skipped targets in a micro-batch: trains, warns once" "--pp" \
    timeout 120 mpirun --oversubscribe -np 2 "$tmp/pp" --data "$tmp/sce/data" --steps 3 --log-every 0
"$parallaxc" compile "$tmp/sce/model.onnx" -o "$tmp/acc" --batch 4 "${train[@]}" >"$tmp/acc.log" 2>&1 ||
    fail "--accumulate: compile: $(head -c 600 "$tmp/acc.log")"
warns "--accumulate 2 with skipped targets in a micro-batch: trains, warns once" "--accumulate" \
    timeout 120 "$tmp/acc" --data "$tmp/sce/data" --steps 3 --log-every 0 --accumulate 2
refuse "class weights with reduction mean under --pp" "--pp" \
    "$parallaxc" compile "$tmp/weighted/model.onnx" -o "$tmp/ppw" --batch 4 "${train[@]}" --pp 2 --comm allreduce \
    --micro-batches 2

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
