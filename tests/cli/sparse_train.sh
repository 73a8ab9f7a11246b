#!/bin/bash
# Usage: sparse_train.sh PARALLAXC SRCDIR
#
# Masked weights (--sparsity, --dst; docs/sparse_training.md):
#  - against PyTorch training the same model with the same mask applied
#    after every step (tests/tools/sparse_reference.py, written from the
#    documented rules): every step's loss within 1e-5 relative, the saved
#    masks (metadata and zeros) equal, the weights within 1% of the update;
#    the MLP with every optimizer, pattern (unstructured, block, n:m), initial
#    mask (magnitude, random, ERK) and both kernels (sparse, dense GEMM), and
#    the transformer LM with its feed-forward weights at 90%;
#  - SET and RigL over 200 steps on the MLP: masks and losses against the
#    reference's own schedule;
#  - 2 ranks at batch b like 1 rank at 2b (a fixed mask and SET), and on 4
#    ranks the AllReduce bytes per step of a 90%-sparse layer what inspect
#    predicts (its mean over the ranks), at most 0.12 of the dense layer's;
#  - bit-identical at 1 and 2 threads; a checkpointed and resumed SET run
#    byte for byte the uninterrupted one; --stats' live weights and FLOPs;
#  - bad input: errors naming the flag and the weight.
. "$(dirname "$0")/lib.sh" "$@"
ref=$src/tests/tools/sparse_reference.py
mlp=$src/examples/mlp
tlm=$src/examples/transformer_lm
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --allow-run-as-root --oversubscribe)
ffn="onnx::MatMul_296=0.9,onnx::MatMul_297=0.9,onnx::MatMul_301=0.9,onnx::MatMul_302=0.9"

# name | example | batch | steps | compile flags (also the reference's) | program flags
cases=(
    "sgd-90|$mlp|8|20|--optimizer sgd --lr 0.05 --sparsity net.0.weight=0.9,net.2.weight=0.8|"
    "adam-random|$mlp|8|20|--optimizer adam --lr 0.002 --sparsity auto:0.9 --sparsity-init random|"
    "nesterov-wd-block|$mlp|8|20|--optimizer momentum --lr 0.02 --nesterov --weight-decay 0.01 --sparsity auto:0.75 --sparsity-pattern block:2x4|"
    "adagrad-2:4|$mlp|8|20|--optimizer adagrad --lr 0.02 --sparsity auto:0.5 --sparsity-pattern 2:4|"
    "erk|$mlp|8|20|--optimizer sgd --lr 0.05 --sparsity auto:0.9 --sparsity-init erk|"
    "dense-kernels|$mlp|8|20|--optimizer momentum --lr 0.02 --sparsity auto:0.8 --sparse-kernels dense|"
    "tlm-ffn-90|$tlm|4|20|--optimizer sgd --lr 0.2 --sparsity $ffn|"
    "tlm-momentum-auto|$tlm|4|20|--optimizer momentum --lr 0.05 --sparsity auto:0.8|"
    "set-200|$mlp|8|200|--optimizer momentum --lr 0.02 --sparsity net.0.weight=0.9,net.2.weight=0.8|--dst set --dst-every 10 --dst-fraction 0.3 --dst-until 150"
    "rigl-200|$mlp|8|200|--optimizer momentum --lr 0.02 --sparsity net.0.weight=0.9,net.2.weight=0.8|--dst rigl --dst-every 10 --dst-fraction 0.3 --dst-until 150"
)

# The reference runs in one interpreter, started first so it overlaps the compiles.
jobs=$tmp/jobs.txt
: >"$jobs"
for c in "${cases[@]}"; do
    IFS='|' read -r name ex b steps cflags pflags <<<"$c"
    echo "run $ex --batch $b --steps $steps --out $tmp/$name.ref --parallaxc $parallaxc $cflags $pflags" >>"$jobs"
done
$py "$ref" batch "$jobs" >"$tmp/ref.log" 2>&1 &
ref_pid=$!

for c in "${cases[@]}"; do
    IFS='|' read -r name ex b steps cflags pflags <<<"$c"
    # shellcheck disable=SC2086
    check "$name: compile" $parallaxc compile "$ex/model.onnx" -o "$tmp/$name" --batch "$b" $cflags
    # shellcheck disable=SC2086
    check "$name: train $steps steps" "$tmp/$name" --data "$ex/data" --steps "$steps" --log-every 0 \
        --losses "$tmp/$name.csv" --save "$tmp/$name.onnx" --stats "$tmp/$name.json" $pflags
done
if wait $ref_pid; then pass "PyTorch references"; else fail "PyTorch references: $(tail -c 800 "$tmp/ref.log")"; fi
: >"$jobs"
for c in "${cases[@]}"; do
    IFS='|' read -r name ex b steps cflags pflags <<<"$c"
    echo "compare $tmp/$name.ref $tmp/$name.csv $tmp/$name.onnx $ex/model.onnx --label $name" >>"$jobs"
done
if $py "$ref" batch "$jobs" >"$tmp/cmp.log" 2>&1; then
    pass "against PyTorch with the masks:"
    sed 's/^/       /' "$tmp/cmp.log"
else
    fail "against PyTorch with the masks: $(cat "$tmp/cmp.log")"
fi

# --stats: the plan's live weights and FLOPs
check "--stats: live weights and FLOPs of the plan" $py - "$tmp/sgd-90.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["sparse"]
w = {x["name"]: x for x in s["weights"]}
assert w["net.0.weight"]["live"] == 10035 and w["net.0.weight"]["total"] == 100352, w
assert w["net.2.weight"]["live"] == 1638, w
assert s["live_weights"] == 10035 + 1638, s
# per step: forward and weight gradient of net.0 (its input is the data), also the
# input gradient of net.2, 2 FLOPs per multiply-add, 8 rows
assert s["flops_per_step"] == 2 * 8 * (2 * 10035 + 3 * 1638), s
EOF

# --sparse-kernels auto: the dense GEMM above the measured crossover density
# (0.7, passes/weight_sparsity.c), the sparse kernels below it.
check "auto kernels: dense at density 0.8, sparse at 0.65" bash -c "
    $parallaxc inspect $mlp/model.onnx --batch 8 --sparsity net.0.weight=0.2,net.2.weight=0.35 >$tmp/auto.txt &&
    grep -q 'net.0.weight: .*live=80282/100352 kernels=dense' $tmp/auto.txt &&
    grep -q 'net.2.weight: .*live=5325/8192 kernels=sparse' $tmp/auto.txt"

# Ranks: 2 x 4 against 1 x 8, a fixed mask and SET.
flags="--optimizer momentum --lr 0.02 --sparsity net.0.weight=0.9,net.2.weight=0.8"
# shellcheck disable=SC2086
check "1 x 8 and 2 x 4: compile" bash -c "$parallaxc compile $mlp/model.onnx -o $tmp/np1 --batch 8 $flags &&
    $parallaxc compile $mlp/model.onnx -o $tmp/np2 --batch 4 $flags"
for dst in "" "--dst set --dst-every 5 --dst-until 15"; do
    # shellcheck disable=SC2086
    "$tmp/np1" --data "$mlp/data" --steps 20 --log-every 0 --losses "$tmp/r1.csv" --save "$tmp/r1.onnx" $dst
    # shellcheck disable=SC2086
    "${mpirun[@]}" -np 2 "$tmp/np2" --data "$mlp/data" --steps 20 --log-every 0 \
        --losses "$tmp/r2.csv" --save "$tmp/r2.onnx" $dst
    check "2 ranks x 4 like 1 x 8${dst:+ (SET)}" $py "$src/tests/tools/train_reference.py" compare \
        --ref-run "$tmp/r1.csv" "$tmp/r1.onnx" "$tmp/r2.csv" "$tmp/r2.onnx" "$mlp/model.onnx" \
        --loss-rtol 1e-5
done

# Bytes on 4 ranks: measured = inspect's prediction; sparse / dense <= 0.12, for
# one 256 x 1024 layer (its gradient takes the ring dense and at 90%; an MLP
# gradient of 45 kB would go by recursive doubling, 2S instead of 1.5S each way).
$py "$src/tests/tools/linear_model.py" "$tmp/lin"
for v in "dense|" "sparse|--sparsity fc.weight=0.9"; do
    IFS='|' read -r name f <<<"$v"
    # shellcheck disable=SC2086
    $parallaxc compile "$tmp/lin/model.onnx" -o "$tmp/b4_$name" --batch 2 --optimizer momentum $f &&
        $parallaxc inspect "$tmp/lin/model.onnx" --batch 2 --ranks 4 --format json --optimizer momentum $f \
            >"$tmp/b4_$name.inspect" &&
        "${mpirun[@]}" -np 4 "$tmp/b4_$name" --data "$tmp/lin/data" --steps 6 --log-every 0 \
            --stats "$tmp/b4_$name.json"
done
cat >"$tmp/bytes.py" <<'EOF'
import json, sys
got = {}
for prefix in sys.argv[1:]:
    stats = json.load(open(prefix + ".json"))
    want = json.load(open(prefix + ".inspect"))["predicted_bytes_per_step"]["hybrid"]
    # the ring's chunks differ by a float between ranks when N does not divide
    # a bucket: the prediction is the mean over the ranks
    moved = [sum(r["bytes_sent_per_step"].values()) + sum(r["bytes_received_per_step"].values())
             for r in stats["ranks"]]
    assert sum(moved) == want * len(moved), (prefix, moved, want)
    got[prefix] = stats["ranks"][0]["bytes_sent_per_step"]["allreduce"]
dense, sparse = got[sys.argv[1]], got[sys.argv[2]]
print("allreduce bytes sent per step and rank: dense %d, 90%% sparse %d (%.4f)"
      % (dense, sparse, sparse / dense))
assert sparse / dense <= 0.12, sparse / dense
EOF
check "4 ranks: AllReduce bytes as inspect predicts, <= 0.12 of dense at 90%" \
    $py "$tmp/bytes.py" "$tmp/b4_dense" "$tmp/b4_sparse"
grep "allreduce bytes" "$tmp/log"

# Memory: a masked weight's state is packed. Each rank holds what inspect
# predicts, and its dense replicas are: every variable's storage and momentum,
# less the masked weight's dense momentum, plus its live values, their
# momentum and input indices, and an offset per output and panel of 128 inputs;
# and the AllReduce's bucket (the compact gradient and the bias's) and chunk.
check "4 ranks: memory per rank as inspect predicts" \
    $py "$src/tests/tools/check_memory.py" compare "$tmp/b4_sparse.inspect" "$tmp/b4_sparse.json"
check "the masked weight's packed state, counted independently" $py - "$tmp/b4_sparse" <<'EOF'
import json, sys
pred = json.load(open(sys.argv[1] + ".inspect"))
stats = json.load(open(sys.argv[1] + ".json"))
live = {w["name"]: w["live"] for w in stats["sparse"]["weights"]}
want = grad = 0
for v in pred["variables"]:
    want += 2 * v["bytes"]  # storage and momentum
    grad += v["bytes"]
    if v["name"] in live:  # Gemm with transB: [out, in]
        out, inp = v["shape"]
        want += 4 * live[v["name"]] * 3 - v["bytes"] + 4 * (-(-inp // 128) * out + 1)
        grad += 4 * live[v["name"]] - v["bytes"]
want += grad + 4 * -(-grad // 4 // 4)  # one bucket, its chunk on 4 ranks
assert list(live) == ["fc.weight"], live
for r in stats["ranks"]:
    got = r["predicted_memory_bytes"]["dense_replicas"]
    assert got == want, (got, want)
print("dense replicas", want)
EOF

# Threads: the sparse kernels give the same bits at 1 and 2 threads.
check "1 and 2 threads: the same losses and --save, byte for byte" bash -c "
    '$tmp/tlm-ffn-90' --data '$tlm/data' --steps 5 --log-every 0 --threads 1 --losses '$tmp/t1.csv' --save '$tmp/t1.onnx' &&
    '$tmp/tlm-ffn-90' --data '$tlm/data' --steps 5 --log-every 0 --threads 2 --losses '$tmp/t2.csv' --save '$tmp/t2.onnx' &&
    cmp '$tmp/t1.onnx' '$tmp/t2.onnx' && diff '$tmp/t1.csv' '$tmp/t2.csv'"

# Checkpoint + resume during SET: the same run, byte for byte.
set_flags="--dst set --dst-every 4 --dst-until 20"
check "SET checkpointed at step 10 and resumed: byte for byte" bash -c "
    '$tmp/adam-random' --data '$mlp/data' --steps 20 --log-every 0 $set_flags --losses '$tmp/u.csv' --save '$tmp/u.onnx' &&
    '$tmp/adam-random' --data '$mlp/data' --steps 10 --log-every 0 $set_flags --losses '$tmp/c.csv' --checkpoint '$tmp/ck' &&
    '$tmp/adam-random' --data '$mlp/data' --steps 20 --log-every 0 $set_flags --losses '$tmp/c.csv' --resume '$tmp/ck' --save '$tmp/c.onnx' &&
    cmp '$tmp/u.onnx' '$tmp/c.onnx' && cmp '$tmp/u.csv' '$tmp/c.csv'"

# Bad input: a clear error naming the flag (and the weight), a usage exit status.
expect_error() { # LABEL STATUS PATTERN COMMAND...
    local label=$1 want=$2 pattern=$3
    shift 3
    "$@" >"$tmp/out" 2>&1
    local rc=$?
    if [ "$rc" -eq "$want" ] && grep -q -- "$pattern" "$tmp/out"; then
        pass "$label"
    else
        fail "$label: status $rc, output: $(head -c 400 "$tmp/out")"
    fi
}
bad() { expect_error "$1" "$2" "$3" $parallaxc compile "$4" -o "$tmp/bad" --batch 4 "${@:5}"; }
bad "sparsity 1 refused" 2 "--sparsity net.0.weight: 1 is out of range" "$mlp/model.onnx" --sparsity net.0.weight=1
bad "negative sparsity refused" 2 "--sparsity net.2.weight: -0.5 is out of range" "$mlp/model.onnx" --sparsity net.2.weight=-0.5
bad "a pattern that does not divide the weight" 1 "block:3x3 does not divide weight 'net.0.weight'" "$mlp/model.onnx" --sparsity net.0.weight=0.5 --sparsity-pattern block:3x3
bad "n:m with another sparsity" 1 "weight 'net.0.weight' at 0.9 with --sparsity-pattern 2:4" "$mlp/model.onnx" --sparsity net.0.weight=0.9 --sparsity-pattern 2:4
bad "an embedding read by a Gather" 1 "--sparsity: weight 'embed.weight' is read by a Gather" "$tlm/model.onnx" --sparsity embed.weight=0.5
bad "no such weight" 1 "--sparsity: 'nope' is not a trained initializer" "$mlp/model.onnx" --sparsity nope=0.5
bad "a bias is no matrix" 1 "weight 'net.0.bias' is not a float32 matrix" "$mlp/model.onnx" --sparsity net.0.bias=0.5
bad "--sparsity-pattern without --sparsity" 2 "--sparsity-pattern shapes the masks of --sparsity" "$mlp/model.onnx" --sparsity-pattern 2:4
expect_error "--dst without --sparsity" 2 "--dst set: this program has no masked weights" \
    "$tmp/b4_dense" --data "$tmp/lin/data" --steps 2 --dst set
expect_error "--dst with an n:m pattern" 2 "--dst: weight 'net.0.weight' has the n:m pattern" \
    "$tmp/adagrad-2:4" --data "$mlp/data" --steps 2 --dst rigl
expect_error "--dst-every without --dst" 2 "--dst-every needs --dst" \
    "$tmp/sgd-90" --data "$mlp/data" --steps 2 --dst-every 3

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
