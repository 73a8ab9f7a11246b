#!/bin/bash
# Usage: train_pipeline_parallel.sh PARALLAXC SRCDIR
#
# --pp S --micro-batches M (docs/parallelism.md): a program compiled with
# them trains like one rank at the global batch: every step's loss within
# 1e-6 relative over 20 steps, and the model --save writes within 1e-5 of
# the 1-rank run's, on
#   - the example MLP (3 layers) at --pp 2 with 2 and 4 micro-batches;
#   - a 6-layer MLP at --pp 4 with 8 micro-batches;
#   - --pp 2 on 4 ranks (2 pipelines: 2-way data parallelism);
#   - --tp 2 --pp 2 on 8 ranks (2 pipelines of 2 stages of 2 ranks);
#   - --pp 4 on an MLP whose fourth layer reuses the second's weight (the
#     cut keeps both on one stage);
#   - the LSTM and transformer language models and the recommender at
#     --pp 2, --pp 4 and --tp 2 --pp 2 on 8 ranks, their embedding tables on
#     the parameter servers (the default --comm).
# A checkpoint holds the whole model: one written under --pp 2 resumes on
# one rank, and the reverse; one of 1 rank resumes under --pp 2 on 4 ranks
# (2 pipelines), one of --tp 2 --pp 2 on 8 ranks on 1 rank. Each stage's
# ranks hold only its variables: a model whose weights sit apart from its
# FLOPs gets a cut that balances memory too. inspect --stage parallel shows
# the stage cut, the bytes crossing it and the 1F1B bubble; bad values of --pp and
# --micro-batches, a rank count that is not a multiple of tp x pp, a batch
# the micro-batches do not divide and more stages than layers are refused,
# naming the flag.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ex=$src/examples/mlp
steps=20
train=(--optimizer momentum --lr 0.05)
"$py" "$src/tests/tools/deep_mlp.py" "$tmp/deep.onnx" 784,64,64,64,64,64,10 ||
    fail "deep_mlp.py: cannot write the 6-layer MLP"

# Losses within 1e-6 relative, every initializer within 1e-5 absolute.
compare() { # REF.csv REF.onnx GOT.csv GOT.onnx
    "$py" "$src/tests/tools/compare_runs.py" "$@"
}

# case LABEL MODEL DATA RANKS GROUP BATCH [COMPILE FLAGS...]: RANKS ranks
# in groups of GROUP (tp x pp) at per-pipeline BATCH against 1 rank at
# RANKS/GROUP * BATCH.
case_() {
    local label=$1 model=$2 data=$3 n=$4 k=$5 b=$6 id
    shift 6
    id=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    "$parallaxc" compile "$model" -o "$tmp/$id.pp" --batch "$b" "${train[@]}" "$@" \
        >"$tmp/$id.log" 2>&1 &&
        "$parallaxc" compile "$model" -o "$tmp/$id.ref" --batch $((n / k * b)) "${train[@]}" \
            >>"$tmp/$id.log" 2>&1 ||
        { fail "$label: compile: $(grep -v '^note' "$tmp/$id.log" | head -c 600)"; return; }
    timeout 300 mpirun --oversubscribe -np "$n" "$tmp/$id.pp" --data "$data" --steps $steps \
        --log-every 0 --losses "$tmp/$id.pp.csv" --save "$tmp/$id.pp.onnx" >"$tmp/$id.run" 2>&1 &&
        timeout 300 "$tmp/$id.ref" --data "$data" --steps $steps --log-every 0 \
            --losses "$tmp/$id.ref.csv" --save "$tmp/$id.ref.onnx" >>"$tmp/$id.run" 2>&1 ||
        { fail "$label: run: $(tail -c 600 "$tmp/$id.run")"; return; }
    check "$label" compare "$tmp/$id.ref.csv" "$tmp/$id.ref.onnx" "$tmp/$id.pp.csv" \
        "$tmp/$id.pp.onnx"
}

case_ "--pp 2 --micro-batches 2 on 2 ranks = 1 rank at batch 8" "$ex/model.onnx" "$ex/data" \
    2 2 8 --pp 2 --micro-batches 2
case_ "--pp 2 --micro-batches 4 on 2 ranks = 1 rank at batch 16" "$ex/model.onnx" "$ex/data" \
    2 2 16 --pp 2 --micro-batches 4
case_ "--pp 4 --micro-batches 8, 6-layer MLP, on 4 ranks = 1 rank at batch 16" "$tmp/deep.onnx" \
    "$ex/data" 4 4 16 --pp 4 --micro-batches 8
case_ "--pp 2 on 4 ranks (2 pipelines) = 1 rank at batch 16" "$ex/model.onnx" "$ex/data" 4 2 8 \
    --pp 2 --micro-batches 2
case_ "--tp 2 --pp 2 on 8 ranks (2 pipelines) = 1 rank at batch 16" "$tmp/deep.onnx" "$ex/data" \
    8 4 8 --tp 2 --pp 2 --micro-batches 2
# A weight read by two layers keeps both on one stage: the cut goes around.
"$py" "$src/tests/tools/deep_mlp.py" "$tmp/shared.onnx" 784,64,64,64,64,64,10 shared
case_ "--pp 4, the second layer's weight read again by the fourth, = 1 rank at batch 8" \
    "$tmp/shared.onnx" "$ex/data" 4 4 8 --pp 4 --micro-batches 4
# The language models: the embedding (a sparse table on the parameter
# servers, pulled and pushed by the first stage's ranks) on the first
# stage, the output projection on the last.
lm=$src/examples/lstm_lm
case_ "LSTM LM, --pp 2 --micro-batches 2 on 2 ranks = 1 rank at batch 8" "$lm/model.onnx" \
    "$lm/data" 2 2 8 --pp 2 --micro-batches 2
case_ "LSTM LM, --pp 4 --micro-batches 2 on 4 ranks = 1 rank at batch 8" "$lm/model.onnx" \
    "$lm/data" 4 4 8 --pp 4 --micro-batches 2
# --tp 2 --pp 2: the labels, reshaped for the split cross-entropy, are made
# on the last stage from its own micro-batch of the inputs (int64: they do
# not cross between stages).
case_ "LSTM LM, --tp 2 --pp 2 on 8 ranks (2 pipelines) = 1 rank at batch 8" "$lm/model.onnx" \
    "$lm/data" 8 4 4 --tp 2 --pp 2 --micro-batches 2
lm=$src/examples/transformer_lm
case_ "transformer LM, --pp 2 --micro-batches 4 on 2 ranks = 1 rank at batch 8" "$lm/model.onnx" \
    "$lm/data" 2 2 8 --pp 2 --micro-batches 4
case_ "transformer LM, --pp 4 --micro-batches 2 on 4 ranks = 1 rank at batch 8" "$lm/model.onnx" \
    "$lm/data" 4 4 8 --pp 4 --micro-batches 2
case_ "transformer LM, --tp 2 --pp 2 on 8 ranks (2 pipelines) = 1 rank at batch 8" \
    "$lm/model.onnx" "$lm/data" 8 4 4 --tp 2 --pp 2 --micro-batches 2
# The recommender (the default --comm hybrid): its tables stay on the
# parameter servers, which every rank serves; the stage that reads a table
# pulls the step's rows once and pushes the step's row gradients. Its
# MLP is cut into stages, and split by --tp.
rec=$src/examples/recommender
case_ "recommender, --pp 2 --micro-batches 2 on 2 ranks = 1 rank at batch 8" "$rec/model.onnx" \
    "$rec/data" 2 2 8 --pp 2 --micro-batches 2
case_ "recommender, --pp 4 --micro-batches 2 on 4 ranks = 1 rank at batch 8" "$rec/model.onnx" \
    "$rec/data" 4 4 8 --pp 4 --micro-batches 2
case_ "recommender, --tp 2 --pp 2 on 8 ranks (2 pipelines) = 1 rank at batch 16" \
    "$rec/model.onnx" "$rec/data" 8 4 8 --tp 2 --pp 2 --micro-batches 2

# Checkpoints hold every variable whole: 10 steps under one layout, then
# 10 more resumed under the other, train like 20 steps of the 1-rank run.
one=$tmp/$(echo "--pp 2 --micro-batches 2 on 2 ranks = 1 rank at batch 8" | tr -c 'a-zA-Z0-9\n' '_')
resume_case() { # LABEL FIRST-NP FIRST-PROGRAM THEN-NP THEN-PROGRAM [REFERENCE-RUN [DATA]]
    local label=$1 id ref=${6:-$one.ref} data=${7:-$ex/data}
    id=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
    timeout 300 mpirun --oversubscribe -np "$2" "$3" --data "$data" --steps 10 --log-every 0 \
        --losses "$tmp/$id.csv" --checkpoint "$tmp/$id.ckpt" >"$tmp/$id.run" 2>&1 &&
        timeout 300 mpirun --oversubscribe -np "$4" "$5" --data "$data" --steps 20 \
            --log-every 0 --losses "$tmp/$id.csv" --resume "$tmp/$id.ckpt" \
            --save "$tmp/$id.onnx" >>"$tmp/$id.run" 2>&1 ||
        { fail "$label: $(tail -c 600 "$tmp/$id.run")"; return; }
    check "$label" compare "$ref.csv" "$ref.onnx" "$tmp/$id.csv" "$tmp/$id.onnx"
}
resume_case "checkpoint of --pp 2 on 2 ranks resumed on 1 rank without --pp" 2 "$one.pp" 1 "$one.ref"
resume_case "checkpoint of 1 rank resumed under --pp 2 on 2 ranks" 1 "$one.ref" 2 "$one.pp"
# Each stage's ranks hold its variables only: a checkpoint gathers them
# (and --tp's slabs) on rank 0, and a resumed rank keeps what it holds.
two=$tmp/$(echo "--pp 2 on 4 ranks (2 pipelines) = 1 rank at batch 16" | tr -c 'a-zA-Z0-9\n' '_')
tp2pp2=$tmp/$(echo "--tp 2 --pp 2 on 8 ranks (2 pipelines) = 1 rank at batch 16" | tr -c 'a-zA-Z0-9\n' '_')
resume_case "checkpoint of 1 rank resumed under --pp 2 on 4 ranks" 1 "$two.ref" 4 "$two.pp" "$two.ref"
resume_case "checkpoint of --tp 2 --pp 2 on 8 ranks resumed on 1 rank" 8 "$tp2pp2.pp" 1 \
    "$tp2pp2.ref" "$tp2pp2.ref"
# The recommender's tables: the shards write and read their rows.
r2=$tmp/$(echo "recommender, --pp 2 --micro-batches 2 on 2 ranks = 1 rank at batch 8" |
    tr -c 'a-zA-Z0-9\n' '_')
r8=$tmp/$(echo "recommender, --tp 2 --pp 2 on 8 ranks (2 pipelines) = 1 rank at batch 16" |
    tr -c 'a-zA-Z0-9\n' '_')
resume_case "recommender: checkpoint of --pp 2 on 2 ranks resumed on 1 rank" 2 "$r2.pp" 1 \
    "$r2.ref" "$r2.ref" "$rec/data"
resume_case "recommender: checkpoint of 1 rank resumed under --tp 2 --pp 2 on 8 ranks" 1 \
    "$r8.ref" 8 "$r8.pp" "$r8.ref" "$rec/data"
# Bytes: every rank takes part in the tables' pulls and pushes (it serves
# its shards); what --stats counts per rank is positive and under inspect's
# bound for its stage (which assumes every lookup a distinct row), shards
# on both ranks (--ranks-per-node 1). A table is pulled once a step, the
# union of its micro-batches' rows: the rows its push sends, so each rank's
# pull bytes equal its push bytes (pulls per micro-batch moved 2206 bytes a
# step on each rank, for pushes of 1918). Memory: each rank's breakdown
# (its stage's variables and their momentum, the rows its stage's pulls
# fill, every push's row set) is inspect's for the same flags.
if "$parallaxc" inspect "$rec/model.onnx" --batch 8 --pp 2 --micro-batches 2 --ranks 2 \
    --ranks-per-node 1 "${train[@]}" --stage parallel --format json -o "$tmp/rec.json" \
    2>"$tmp/rec.err" &&
    timeout 300 mpirun --oversubscribe -np 2 "$r2.pp" --data "$rec/data" --steps 6 \
        --log-every 0 --ranks-per-node 1 --stats "$tmp/rec.stats.json" >"$tmp/rec.run" 2>&1; then
    check "recommender --pp 2: each rank's parameter-server bytes within inspect's bound, one pull a step" \
        "$py" -c '
import json, sys
plan, stats = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bound = plan["predicted_bytes_per_step_by_stage"]
for r in stats["ranks"]:
    sent, got = r["bytes_sent_per_step"], r["bytes_received_per_step"]
    ps = sum(sent[k] + got[k] for k in ("ps_pull", "ps_push"))
    dense = sent["allreduce"] + got["allreduce"]
    pred = bound[r["rank"]]["hybrid"]
    pull, push = (sent[k] + got[k] for k in ("ps_pull", "ps_push"))
    print("rank %d: %.1f parameter-server (pull %.1f, push %.1f) + %.1f AllReduce bytes, bound %d"
          % (r["rank"], ps, pull, push, dense, pred))
    assert 0 < ps and ps + dense <= pred, r
    assert abs(pull - push) < 1e-6 * ps, r
' "$tmp/rec.json" "$tmp/rec.stats.json"
    check "recommender --pp 2: memory per rank as inspect predicts" \
        "$py" "$src/tests/tools/check_memory.py" compare "$tmp/rec.json" "$tmp/rec.stats.json"
else
    fail "recommender --pp 2 bytes: $(cat "$tmp/rec.err" "$tmp/rec.run" | head -c 600)"
fi

# Memory: what each rank holds (its stage's variables, their Adam state,
# its stage's activation arena) is what inspect predicts.
adam=(--batch 8 --optimizer adam --lr 0.001 --pp 2 --micro-batches 2)
if "$parallaxc" compile "$ex/model.onnx" -o "$tmp/adam.pp" "${adam[@]}" >"$tmp/adam.log" 2>&1 &&
    "$parallaxc" inspect "$ex/model.onnx" --ranks 2 --stage parallel --format json "${adam[@]}" \
        >"$tmp/adam.inspect" 2>>"$tmp/adam.log" &&
    timeout 300 mpirun --oversubscribe -np 2 "$tmp/adam.pp" --data "$ex/data" --steps 3 \
        --log-every 0 --stats "$tmp/adam.json" >>"$tmp/adam.log" 2>&1; then
    check "--pp 2 with Adam: memory per rank as inspect predicts" \
        "$py" "$src/tests/tools/check_memory.py" compare "$tmp/adam.inspect" "$tmp/adam.json"
else
    fail "--pp 2 with Adam: $(grep -v '^note' "$tmp/adam.log" | tail -c 600)"
fi

# --trace: each stage's waits for the other (a span per micro-batch and
# step) and the loss broadcast, each naming the stage it waited for, and
# each send, naming the stage it goes to.
if timeout 300 mpirun --oversubscribe -np 2 "$one.pp" --data "$ex/data" --steps 3 --log-every 0 \
    --trace "$tmp/trace.json" >"$tmp/trace.log" 2>&1; then
    check "--trace shows the pipeline receives and broadcasts" "$py" -c '
import collections, json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
got = collections.Counter((e["pid"], e["name"], e["args"].get("from_stage", e["args"].get("to_stage")))
                          for e in ev if e.get("ph") == "X" and e["name"].startswith("pipeline")
                          and e["name"] != "pipeline send done")
want = {(0, "pipeline receive", 1): 6, (1, "pipeline receive", 0): 6,
        (0, "pipeline send", 1): 6, (1, "pipeline send", 0): 6,
        (0, "pipeline broadcast", 1): 3, (1, "pipeline broadcast", 1): 3}
assert dict(got) == want, dict(got)
' "$tmp/trace.json"
else
    fail "--trace with --pp 2: $(tail -c 600 "$tmp/trace.log")"
fi

# inspect: the stage cut (by predicted FLOPs: the first layer, 784 x 64,
# outweighs the others), what crosses each cut, and the bubble.
"$parallaxc" inspect "$tmp/deep.onnx" --batch 16 --pp 4 --micro-batches 8 --stage parallel \
    >"$tmp/inspect.txt" 2>&1
if grep -qF "pipeline (--pp 4 --micro-batches 8, 1F1B): each stage idles (S-1)/(M+S-1) = 3/11 = 27.3% of a step" "$tmp/inspect.txt" &&
    grep -qF "stage 0: gemm0 .. relu0, 1 layer," "$tmp/inspect.txt" &&
    grep -qF "sends on 512 bytes per micro-batch (4096 per step forward, as many back)" "$tmp/inspect.txt" &&
    grep -qF "stage 3: gemm3 .. xent, 3 layers," "$tmp/inspect.txt"; then
    pass "inspect --stage parallel shows the stage cut, its bytes and the bubble"
else
    fail "inspect --pp 4: $(cat "$tmp/inspect.txt")"
fi
# A model whose FLOPs and weights sit apart: two 3x3 convolutions (most
# of the FLOPs, few weights), then Gemms 6272 -> 32 -> 6272 -> 10 (most of
# the weights). Cut by FLOPs alone, stage 0 would take the convolutions
# (53% of the FLOPs) and stage 1 every Gemm (100% of the weights); the cut
# that also balances memory moves the first Gemm to stage 0: 73% of the
# FLOPs and 43% of the weights there, 57% of the weights on stage 1. Each
# rank then holds only its stage's share (the memory per rank).
"$py" "$src/tests/tools/deep_mlp.py" "$tmp/lopsided.onnx" 784,32,6272,10 conv
"$parallaxc" inspect "$tmp/lopsided.onnx" --batch 8 --pp 2 --micro-batches 2 --ranks 2 \
    --optimizer adam --lr 0.001 --stage parallel >"$tmp/lopsided.txt" 2>&1
if grep -qF "stage 0: image .. relu0, 3 layers, 5.827e+06 forward FLOPs per micro-batch (73.0%), variables 805600 bytes (42.8%)" "$tmp/lopsided.txt" &&
    grep -qF "stage 1: gemm1 .. xent, 2 layers, 2.158e+06 forward FLOPs per micro-batch (27.0%), variables 1078824 bytes (57.2%)" "$tmp/lopsided.txt" &&
    grep -qE "^  0 \(shard 0\) +0 +0 +0 +2416800 " "$tmp/lopsided.txt" &&
    grep -qE "^  1 other +0 +0 +0 +3236472 " "$tmp/lopsided.txt"; then
    pass "a model whose weights sit apart from its FLOPs gets a cut that balances memory too"
else
    fail "the memory-balanced cut: $(cat "$tmp/lopsided.txt")"
fi
"$parallaxc" inspect "$ex/model.onnx" --batch 8 --pp 2 --micro-batches 4 --stage parallel \
    --format json >"$tmp/inspect.json" 2>"$tmp/inspect.err"
check "inspect --format json describes the pipeline and its nodes" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = d["pipeline"]
assert (p["stages"], p["micro_batches"]) == (2, 4), p
assert abs(p["bubble"] - 1 / 5) < 1e-9, p
assert [s["layers"] for s in p["stage"]] == [1, 2], p
assert p["stage"][0]["send_bytes_per_micro_batch"] == 2 * 128 * 4, p
ops = sorted({n["op"] for n in d["nodes"] if n.get("inserted_by") == "pipeline_parallel"})
assert ops == ["PPBroadcast", "PPTransfer"], ops
' "$tmp/inspect.json"

c=("$parallaxc" compile "$ex/model.onnx" -o "$tmp/bad" --batch 8)
refuse "--pp 0" "--pp" "${c[@]}" --pp 0 --micro-batches 2
refuse "--micro-batches x" "--micro-batches" "${c[@]}" --pp 2 --micro-batches x
refuse "--pp without --micro-batches" "--pp 2 needs --micro-batches M" "${c[@]}" --pp 2
refuse "--micro-batches without --pp" "--micro-batches splits the batch of a pipeline" \
    "${c[@]}" --micro-batches 2
refuse "--micro-batches 3 with --batch 8" "--micro-batches 3 does not divide the batch 8" \
    "${c[@]}" --pp 2 --micro-batches 3
refuse "--pp 4 on a 3-layer model" "--pp 4: the model has 3 layers to cut into stages" \
    "${c[@]}" --pp 4 --micro-batches 2
refuse "--pp 5 where a shared weight leaves 4 stages" \
    "--pp 5: the model's 6 layers can be cut into 4 stages at most: a cut may not fall between two reads of one weight (a weight used twice, such as tied embeddings, stays on one stage): the variable 'l1.weight' is read by 'gemm1' and again by 'gemm3'" \
    "$parallaxc" compile "$tmp/shared.onnx" -o "$tmp/bad" --batch 8 --pp 5 --micro-batches 2
refuse "--pp 2 with --comm ps" "--pp needs --comm hybrid or allreduce" "${c[@]}" --pp 2 \
    --micro-batches 2 --comm ps
refuse "--pp 2 with --sparsity" "--pp cuts the model into stages; it cannot be combined with --sparsity yet" \
    "${c[@]}" --pp 2 --micro-batches 2 --sparsity auto:0.5
refuse "inspect --pp 2 with --sparsity" "--pp cuts the model into stages" \
    "$parallaxc" inspect "$ex/model.onnx" --batch 8 --stage parallel --pp 2 --micro-batches 2 \
    --sparsity auto:0.5
# An output projection tied to the embedding table reads the whole table:
# the table is a dense variable, and its two readers, the first layer and
# the last, stay on one stage.
"$py" "$src/tests/tools/tp_models.py" tied_gemm "$tmp/tied.onnx" "$tmp/tied_data" >/dev/null
refuse "--pp 2 where the lm_head is tied to the embedding" \
    "the variable 'wte.weight' is read by 'embed' and again by 'lm_head'" \
    "$parallaxc" compile "$tmp/tied.onnx" -o "$tmp/bad" --batch 8 --pp 2 --micro-batches 2
"$py" "$src/tests/tools/deep_mlp.py" "$tmp/drop.onnx" 784,64,64,10 dropout
refuse "--pp 2 with a training-mode Dropout" \
    "--pp 2: node 'drop0' (Dropout in training mode) draws its mask by each element's place in the global batch" \
    "$parallaxc" compile "$tmp/drop.onnx" -o "$tmp/bad" --batch 8 --pp 2 --micro-batches 2 \
    --freeze ratio
refuse "--pp 2 program on 3 ranks" "--pp 2: this program was compiled for pipelines of 2 stages of 1 rank (--tp), but runs on 3 ranks, not a multiple of 2" \
    timeout 120 mpirun --oversubscribe -np 3 "$one.pp" --data "$ex/data" --steps 2
refuse "--tp 2 --pp 2 program on 2 ranks" "--pp 2: this program was compiled for pipelines of 2 stages of 2 ranks (--tp), but runs on 2 ranks, not a multiple of 4" \
    timeout 120 mpirun --oversubscribe -np 2 "$tp2pp2.pp" --data "$ex/data" --steps 2
refuse "--pp 2 program with --sync-every 2" "--pp 2: this program's pipeline stages train in exact synchronization only" \
    timeout 120 mpirun --oversubscribe -np 2 "$one.pp" --data "$ex/data" --steps 2 --sync-every 2
"$parallaxc" compile --help >"$tmp/help.txt" 2>&1
if grep -q -- "--pp S " "$tmp/help.txt" && grep -q -- "--micro-batches M " "$tmp/help.txt"; then
    pass "compile --help describes --pp and --micro-batches"
else
    fail "--help has no --pp or --micro-batches"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
