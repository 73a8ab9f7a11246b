#!/bin/bash
# Usage: train_tensor_parallel.sh PARALLAXC SRCDIR
#
# --tp K (docs/parallelism.md): the example MLP (Gemm-Relu-Gemm-Relu-Gemm:
# a pair, and a 10-class output layer split by classes at --tp 2, kept
# whole at --tp 4), the transformer LM (attention heads, MLP pairs and the vocabulary
# projection with its cross-entropy split) and the
# recommender (its MLP split, its tables on the parameter servers)
# compiled with --tp 2 train like one rank at the global batch: every
# step's loss within 1e-6 relative over 20 steps, and the model --save
# writes (whole, unsplit) within 1e-5 of the 1-rank run's, on
#   - 2 ranks (one group of 2) against 1 rank at the same batch;
#   - 4 ranks (2 groups: 2-way data parallelism) against 1 rank at twice it;
#   - --tp 4 on 4 ranks (one group of 4; the recommender too);
#   - 2 ranks with the first weight frozen, so the split pair is the second
#     and third layers and the backward group sum (the gradient of the
#     pair's input) carries the first layer's bias gradient.
# A checkpoint holds the whole model: one written under --tp 2 resumes on
# one rank without it, and the reverse. Each rank stores only its slab of a
# split weight and of its Adam state, as inspect predicts, and averages the
# gradient of its slab only with the ranks holding the same slab (the bytes
# each rank moves per step are inspect's prediction). inspect --stage
# parallel names the split weights (and their whole shapes), the group sums
# and their bytes; bad values of --tp, a rank count that is not a multiple
# of it, a relaxed synchronization, a hidden width, a head count or a
# vocabulary it does not divide and a model with nothing to split are
# refused, naming the flag.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ex=$src/examples/mlp
steps=20
train=(--optimizer momentum --lr 0.05)

# Losses within 1e-6 relative, every initializer within 1e-5 absolute.
compare() { # REF.csv REF.onnx GOT.csv GOT.onnx
    "$py" "$src/tests/tools/compare_runs.py" "$@"
}

# case LABEL TP RANKS BATCH [COMPILE FLAGS...]: --tp TP on RANKS ranks at
# per-group BATCH against 1 rank at RANKS/TP * BATCH.
case_() {
    local label=$1 k=$2 n=$3 b=$4 id
    shift 4
    local m=${case_ex:-$ex}
    id=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    "$parallaxc" compile "$m/model.onnx" -o "$tmp/$id.tp" --batch "$b" --tp "$k" "${train[@]}" \
        "$@" >"$tmp/$id.log" 2>&1 &&
        "$parallaxc" compile "$m/model.onnx" -o "$tmp/$id.ref" --batch $((n / k * b)) \
            "${train[@]}" "$@" >>"$tmp/$id.log" 2>&1 ||
        { fail "$label: compile: $(grep -v '^note' "$tmp/$id.log" | head -c 600)"; return; }
    timeout 300 mpirun --oversubscribe -np "$n" "$tmp/$id.tp" --data "$m/data" --steps $steps \
        --log-every 0 --losses "$tmp/$id.tp.csv" --save "$tmp/$id.tp.onnx" >"$tmp/$id.run" 2>&1 &&
        timeout 300 "$tmp/$id.ref" --data "$m/data" --steps $steps --log-every 0 \
            --losses "$tmp/$id.ref.csv" --save "$tmp/$id.ref.onnx" >>"$tmp/$id.run" 2>&1 ||
        { fail "$label: run: $(tail -c 600 "$tmp/$id.run")"; return; }
    check "$label" compare "$tmp/$id.ref.csv" "$tmp/$id.ref.onnx" "$tmp/$id.tp.csv" \
        "$tmp/$id.tp.onnx"
}

case_ "--tp 2 on 2 ranks = 1 rank at batch 8" 2 2 8
case_ "--tp 2 on 4 ranks (2 groups) = 1 rank at batch 16" 2 4 8
case_ "--tp 2, first weight frozen: backward group sum" 2 2 8 --freeze net.0.weight
case_ "--tp 4 on 4 ranks = 1 rank at batch 8" 4 4 8

# The transformer LM: attention heads split (Q/K/V by columns, the output
# projection by rows), its MLP pairs, and its vocabulary projection by
# classes into a parallel cross-entropy; the embedding on the parameter
# servers.
case_ex=$src/examples/transformer_lm
case_ "transformer LM --tp 2 on 2 ranks = 1 rank at batch 4" 2 2 4
case_ "transformer LM --tp 4 on 4 ranks = 1 rank at batch 4" 4 4 4
case_ "transformer LM --tp 2 on 4 ranks (2 groups) = 1 rank at batch 8" 2 4 4
# The recommender: its dense MLP split, its tables on the parameter servers.
case_ex=$src/examples/recommender
case_ "recommender --tp 2 on 2 ranks = 1 rank at batch 8" 2 2 8
case_ "recommender --tp 2 on 4 ranks (2 groups) = 1 rank at batch 16" 2 4 8
case_ "recommender --tp 4 on 4 ranks = 1 rank at batch 8" 4 4 8
case_ex=

# Checkpoints hold every variable whole: 10 steps under one layout, then
# 10 more resumed under the other, train like 20 steps of the 1-rank run.
one=$tmp/$(echo "--tp 2 on 2 ranks = 1 rank at batch 8" | tr -c 'a-zA-Z0-9\n' '_')
resume_case() { # LABEL FIRST-NP FIRST-PROGRAM THEN-NP THEN-PROGRAM
    local label=$1 id
    id=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    timeout 300 mpirun --oversubscribe -np "$2" "$3" --data "$ex/data" --steps 10 --log-every 0 \
        --losses "$tmp/$id.csv" --checkpoint "$tmp/$id.ckpt" >"$tmp/$id.run" 2>&1 &&
        timeout 300 mpirun --oversubscribe -np "$4" "$5" --data "$ex/data" --steps 20 \
            --log-every 0 --losses "$tmp/$id.csv" --resume "$tmp/$id.ckpt" \
            --save "$tmp/$id.onnx" >>"$tmp/$id.run" 2>&1 ||
        { fail "$label: $(tail -c 600 "$tmp/$id.run")"; return; }
    check "$label" compare "$one.ref.csv" "$one.ref.onnx" "$tmp/$id.csv" "$tmp/$id.onnx"
}
resume_case "checkpoint of --tp 2 on 2 ranks resumed on 1 rank without --tp" 2 "$one.tp" 1 "$one.ref"
resume_case "checkpoint of 1 rank resumed under --tp 2 on 2 ranks" 1 "$one.ref" 2 "$one.tp"

# Memory: each rank stores only its slab of a split weight and of its Adam
# state. inspect's prediction per rank equals what the ranks report holding
# (--stats), and the replicas it predicts are smaller than without --tp by
# exactly (whole - slab) x 3 (value, two Adam moments) of each split
# variable, and its gradient's place in the AllReduce bucket.
adam=(--batch 8 --optimizer adam --lr 0.001)
if "$parallaxc" compile "$ex/model.onnx" -o "$tmp/adam.tp" --tp 2 "${adam[@]}" >"$tmp/adam.log" 2>&1 &&
    "$parallaxc" inspect "$ex/model.onnx" --ranks 2 --tp 2 --stage parallel --format json "${adam[@]}" \
        >"$tmp/adam_tp.inspect" 2>>"$tmp/adam.log" &&
    "$parallaxc" inspect "$ex/model.onnx" --ranks 2 --stage parallel --format json "${adam[@]}" \
        >"$tmp/adam_dp.inspect" 2>>"$tmp/adam.log" &&
    timeout 300 mpirun --oversubscribe -np 2 "$tmp/adam.tp" --data "$ex/data" --steps 3 \
        --log-every 0 --stats "$tmp/adam_tp.json" >>"$tmp/adam.log" 2>&1; then
    check "--tp 2 with Adam: memory per rank as inspect predicts" \
        "$py" "$src/tests/tools/check_memory.py" compare "$tmp/adam_tp.inspect" "$tmp/adam_tp.json"
    check "--tp 2 with Adam: each rank holds its slabs and their state only" "$py" - \
        "$tmp/adam_tp.inspect" "$tmp/adam_dp.inspect" <<'PY'
import json, sys
from math import prod
tp, dp = (json.load(open(p)) for p in sys.argv[1:])
# value and two Adam moments of each split variable: its slab only. The
# gradients (all under --bucket-mb: one AllReduce bucket): data
# parallelism's bucket holds every variable's, --tp 2's only the replicated
# ones (a slab's, held by this one group alone, passes through without a
# buffer); the ring's scratch is one chunk of the bucket over 2 ranks.
saved = 0
whole = replicated = 0
for v in tp["variables"]:
    if "tp_whole_shape" in v:
        assert prod(v["tp_whole_shape"]) == 2 * prod(v["shape"]), v
        saved += 4 * 3 * (prod(v["tp_whole_shape"]) - prod(v["shape"]))
        whole += prod(v["tp_whole_shape"])
    else:
        replicated += prod(v["shape"])
saved += 4 * whole + 4 * (-(-(whole + replicated) // 2) - -(-replicated // 2))
split = sorted(v["name"] for v in tp["variables"] if "tp_whole_shape" in v)
# the pair, and the 10-class output layer by classes
assert split == ["net.0.bias", "net.0.weight", "net.2.weight", "net.4.bias", "net.4.weight"], split
for a, b in zip(tp["predicted_memory_per_rank"], dp["predicted_memory_per_rank"]):
    got = b["dense_replicas"] - a["dense_replicas"]
    assert got == saved, (got, saved)
print("each rank holds %d bytes fewer" % saved)
PY
else
    fail "--tp 2 with Adam: $(grep -v '^note' "$tmp/adam.log" | tail -c 600)"
fi

# Bytes: a slab's gradient is averaged only over the ranks holding the same
# slab (one per group), at slab size. Every rank's measured AllReduce and
# other bytes per step (--stats) equal inspect's data-parallel prediction
# plus its tensor-parallel group sums; one group (2 ranks) sends no slab
# bytes at all: its AllReduce moves exactly the replicated gradients (ring
# of 2 ranks: their bytes each way), counted here from the variables.
bytes_case() { # RANKS
    local n=$1
    "$parallaxc" inspect "$ex/model.onnx" --ranks "$n" --tp 2 --stage parallel --batch 8 \
        "${train[@]}" >"$tmp/bytes$n.txt" 2>&1 &&
        "$parallaxc" inspect "$ex/model.onnx" --ranks "$n" --tp 2 --stage parallel --batch 8 \
            "${train[@]}" --format json >"$tmp/bytes$n.json" 2>>"$tmp/bytes$n.txt" &&
        timeout 300 mpirun --oversubscribe -np "$n" "$one.tp" --data "$ex/data" --steps 6 \
            --log-every 0 --stats "$tmp/bytes$n.stats" >>"$tmp/bytes$n.txt" 2>&1 ||
        { fail "bytes on $n ranks: $(tail -c 600 "$tmp/bytes$n.txt")"; return; }
    check "--tp 2 on $n ranks: bytes per rank as inspect predicts, slabs among their holders" \
        "$py" - "$tmp/bytes$n.txt" "$tmp/bytes$n.json" "$tmp/bytes$n.stats" "$n" <<'PY'
import json, re, sys
from math import prod
text, plan, stats, n = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), int(sys.argv[4])
dp = int(re.search(r"predicted bytes per rank per step .*: hybrid (\d+)", text).group(1))
tp = int(re.search(r"predicted tensor-parallel bytes per rank per step .*: (\d+)", text).group(1))
replicated = sum(4 * prod(v["shape"]) for v in plan["variables"] if "tp_whole_shape" not in v)
for r in stats["ranks"]:
    s, rv = r["bytes_sent_per_step"], r["bytes_received_per_step"]
    got = s["allreduce"] + rv["allreduce"] + s["other"] + rv["other"]
    assert abs(got - (dp + tp)) <= 0.5, "rank %d: measured %.1f, predicted %d + %d" % (r["rank"], got, dp, tp)
    if n == 2:
        assert s["allreduce"] == rv["allreduce"] == replicated, (r["rank"], s["allreduce"], replicated)
print("per rank and step: %d data-parallel + %d tensor-parallel bytes" % (dp, tp))
PY
}
bytes_case 2
bytes_case 4

# inspect: what is split, and the group sums forward and backward.
"$parallaxc" inspect "$ex/model.onnx" --batch 8 --tp 2 --stage parallel --freeze net.0.weight \
    >"$tmp/inspect.txt" 2>&1
if grep -q "net.2.weight: float\[32,128\] .* tp=columns slab-of=\[64,128\]" "$tmp/inspect.txt" &&
    grep -q "predicted tensor-parallel bytes per rank per step (sent + received, besides the data-parallel traffic): 8832$" "$tmp/inspect.txt" &&
    grep -q "net.2.bias: .* tp=columns" "$tmp/inspect.txt" &&
    grep -q "net.4.weight: .* tp=rows" "$tmp/inspect.txt" &&
    grep -q "net.0.bias: .*partitions=1  #" "$tmp/inspect.txt" &&
    grep -q "group sums (over --tp 2 ranks): tp/allreduce//net/net.4/Gemm (80 values) grad/tp/copy//net/net.2/Gemm/TPAllReduce (1024 values)" "$tmp/inspect.txt"; then
    pass "inspect --stage parallel shows the split weights and the group sums"
else
    fail "inspect --tp 2: $(cat "$tmp/inspect.txt")"
fi
"$parallaxc" inspect "$src/examples/transformer_lm/model.onnx" --batch 4 --tp 2 --stage parallel \
    --format json >"$tmp/lm.json" 2>"$tmp/lm.err"
check "inspect: the transformer LM's attention, MLP and vocabulary weights split" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
split = {v["name"]: (v.get("tp_split"), v.get("tp_whole_shape")) for v in d["variables"] if v.get("tp_split")}
for l, (qkv, w1, w2) in enumerate([("onnx::MatMul_293", "onnx::MatMul_296", "onnx::MatMul_297"),
                                   ("onnx::MatMul_298", "onnx::MatMul_301", "onnx::MatMul_302")]):
    p = "encoder.layers.%d." % l
    want = {qkv: ("columns", [32, 96]), p + "self_attn.in_proj_bias": ("columns", [96]),
            p + "self_attn.out_proj.weight": ("rows", [32, 32]), w1: ("columns", [32, 64]),
            p + "linear1.bias": ("columns", [64]), w2: ("rows", [64, 32])}
    for name, v in want.items():
        assert split.pop(name) == v, (name, v)
# the vocabulary projection, by classes, into the parallel cross-entropy
assert split.pop("onnx::MatMul_303") == ("columns", [32, 1000])
assert split.pop("out.bias") == ("columns", [1000])
assert not split, split
sums = sorted(n["name"] for n in d["nodes"] if n["op"] == "TPAllReduce")
assert len(sums) == 9, sums  # per layer: attention and MLP, forward and backward; the output projection backward
ops = [n["op"] for n in d["nodes"] if n["op"].startswith("TPSoftmax") or n["op"] == "SoftmaxCrossEntropyLoss"]
assert ops == ["TPSoftmaxCrossEntropy", "TPSoftmaxCrossEntropyGrad"], ops
exchanges = {g["node"]: g["values"] for g in d["tensor_parallel"]["group_sums"]}
assert exchanges["tp//SoftmaxCrossEntropyLoss"] == 3 * 64, exchanges  # 3 floats a row, not 1000 scores
' "$tmp/lm.json"
"$parallaxc" inspect "$ex/model.onnx" --batch 8 --tp 2 --stage trained --format json \
    >"$tmp/inspect.json" 2>"$tmp/inspect.err"
check "inspect --format json marks tp_split and the TP nodes" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
split = {v["name"]: v.get("tp_split") for v in d["variables"]}
assert split == {"net.0.weight": "columns", "net.0.bias": "columns", "net.2.weight": "rows",
                 "net.2.bias": None, "net.4.weight": "columns", "net.4.bias": "columns"}, split
ops = sorted(n["op"] for n in d["nodes"] if n["op"].startswith("TP"))
assert ops == ["TPAllReduce", "TPAllReduce", "TPCopy", "TPCopy", "TPSoftmaxCrossEntropy",
               "TPSoftmaxCrossEntropyGrad"], ops
whole = {v["name"]: v.get("tp_whole_shape") for v in d["variables"]}
assert whole == {"net.0.weight": [128, 784], "net.0.bias": [128], "net.2.weight": [64, 128],
                 "net.2.bias": None, "net.4.weight": [10, 64], "net.4.bias": [10]}, whole
' "$tmp/inspect.json"

c=("$parallaxc" compile "$ex/model.onnx" -o "$tmp/bad" --batch 8)
refuse "--tp 0" "--tp" "${c[@]}" --tp 0
refuse "--tp x" "--tp" "${c[@]}" --tp x
refuse "--tp 3 (hidden width 128)" "--tp 3 does not divide the hidden width 128 of node '/net/net.0/Gemm'" \
    "${c[@]}" --tp 3
refuse "--tp 2 with nothing to split" "--tp 2: the model has no splittable weight" \
    "${c[@]}" --tp 2 --freeze net.2.weight,net.4.weight
lm=("$parallaxc" compile "$src/examples/transformer_lm/model.onnx" -o "$tmp/bad" --batch 4)
refuse "--tp 8 (4 attention heads)" "--tp 8 does not divide the 4 attention heads of node '/encoder/layers.0/self_attn/MatMul'" \
    "${lm[@]}" --tp 8
refuse "--tp 3 (4 attention heads)" "--tp 3 does not divide the 4 attention heads" "${lm[@]}" --tp 3
# A vocabulary projection of 10 classes straight into the cross-entropy
# (nothing else to split): --tp 4 does not divide its classes, so it is
# kept whole, and nothing is left to split.
"$py" - "$tmp/vocab10.onnx" <<'PY' || fail "cannot write the 10-class model"
import sys
import numpy as np
for alias, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, t)
import onnx
from onnx import TensorProto, helper, numpy_helper
w = numpy_helper.from_array(np.full((16, 10), 0.1, np.float32), "out.weight")
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "out.weight"], ["scores"], name="out"),
     helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "y"], ["loss"], name="ce")],
    "vocab10", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16]),
                helper.make_tensor_value_info("y", TensorProto.INT64, ["batch"])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], [w])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
refuse "--tp 4 (10 classes, nothing else)" "--tp 4: the model has no splittable weight: no MatMul/Gemm pair joined by elementwise ops, no attention block and no vocabulary projection into a cross-entropy (node 'out': node 'out' (weight 'out.weight') not split: 10 classes not divisible by --tp 4" \
    "$parallaxc" compile "$tmp/vocab10.onnx" -o "$tmp/bad" --batch 8 --tp 4
refuse "--tp 2 with --comm ps" "--tp needs --comm hybrid or allreduce" "${c[@]}" --tp 2 --comm ps
refuse "--tp 2 with --sparsity" "--tp splits dense weights; it cannot be combined with --sparsity yet" \
    "${c[@]}" --tp 2 --sparsity auto:0.5
refuse "inspect --tp 2 with --comm ps" "--tp needs --comm hybrid or allreduce" \
    "$parallaxc" inspect "$ex/model.onnx" --batch 8 --stage parallel --tp 2 --comm ps
p=$tmp/$(echo "--tp 2 on 2 ranks = 1 rank at batch 8" | tr -c 'a-zA-Z0-9\n' '_').tp
refuse "--tp 2 program on 3 ranks" "--tp 2: this program was compiled for tensor-parallel groups of 2 ranks, but runs on 3 ranks, not a multiple of 2" \
    timeout 120 mpirun --oversubscribe -np 3 "$p" --data "$ex/data" --steps 2
refuse "--tp 2 program with --sync-every 2" "--tp 2: this program splits layers over tensor-parallel groups, which train in exact synchronization only" \
    timeout 120 mpirun --oversubscribe -np 2 "$p" --data "$ex/data" --steps 2 --sync-every 2
refuse "--tp 2 program with --clip-grad-norm" "--clip-grad-norm: this program (--tp 2) stores weights split" \
    timeout 120 mpirun --oversubscribe -np 2 "$p" --data "$ex/data" --steps 2 --clip-grad-norm 1
"$parallaxc" compile --help >"$tmp/help.txt" 2>&1
if grep -q -- "--tp K " "$tmp/help.txt"; then pass "compile --help describes --tp"; else fail "--help has no --tp"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
