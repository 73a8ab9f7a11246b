#!/bin/bash
# Usage: plan_layouts.sh PARALLAXC SRCDIR
#
# `parallaxc plan --layouts` (docs/parallelism.md, "When to split"):
# - the two MLPs of bench/cluster/when_to_split.py at 2 hosts on 1 Gbit/s
#   links: the wide one (256-4096-256-10, 16 samples a rank: 2.1 M weights)
#   is predicted fastest under --tp 2, the narrow one (128 x 4 layers, 512
#   samples a rank) under data parallelism; --pp 2 comes second on the
#   wide one (its one pipeline AllReduces nothing: each stage holds its own
#   weights) and loses on the narrow one (the bubble and the transfers);
# - its figures against hand computation at 2 ranks (alpha 50 us, beta
#   8 ns a byte): data parallelism's AllReduce (3 buckets of the weights,
#   recursive doubling, and the loss average), --tp 2's (the replicated
#   variables only: the split ones' slabs have no peer in one group), the
#   group sums of the pair's output and of the 10-class output layer (split
#   by classes: its input's gradient and the parallel cross-entropy's 3
#   floats a row, forward and backward), the --pp 2 transfers from inspect's
#   pipeline table (and the loss broadcast), the bubble (S-1)/(M+S-1), the
#   work as the matrix products' FLOPs (under --pp the 1F1B critical path,
#   with the micro-batches' gradient sums), and every step as the sum of its
#   parts;
# - data parallelism's samples/s is the settings table's hybrid at H hosts;
# - the bytes a rank moves per step under --tp 2 and --pp 2 (a small MLP,
#   2 ranks) are what a running job counts (--stats); under --pp 2 on 4
#   ranks (2 pipelines) each rank's are its own stage's, as inspect
#   predicts them per stage, and the plan's figure at 8 ranks under --pp 4
#   is the busiest rank's;
# - the transformer LM's --pp layout is predicted under --comm allreduce and
#   under hybrid (its embedding, sparse, stays on the parameter servers);
# - --tp and --pp given to plan, and --micro-batches without --layouts, are
#   refused naming the flag.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mk() { "$py" "$src/tests/tools/deep_mlp.py" "$tmp/$1.onnx" "$2" || fail "deep_mlp.py $2"; }
mk wide 256,4096,256,10
mk narrow 128,128,128,128,128,10
mk small 64,128,64,10
train=(--optimizer momentum --lr 0.01)
plan() { # NAME BATCH STEP-SECONDS
    "$parallaxc" plan "$tmp/$1.onnx" --batch "$2" --hosts 2 --link 1gbit --cores 1 \
        --step-seconds "$3" --layouts --format json "${train[@]}" >"$tmp/$1.json" 2>"$tmp/err" ||
        fail "plan $1: $(head -c 600 "$tmp/err")"
}
plan wide 16 0.02
plan narrow 512 0.02
plan small 8 0.001
check "inspect --pp 2: the wide MLP's cut" "$parallaxc" inspect "$tmp/wide.onnx" --batch 32 \
    --pp 2 --micro-batches 8 --stage parallel --format json "${train[@]}" -o "$tmp/wide_pp.json"
"$parallaxc" plan "$tmp/wide.onnx" --batch 16 --hosts 2 --link 1gbit --cores 1 --step-seconds 0.02 \
    --layouts "${train[@]}" >"$tmp/wide.txt" 2>&1 || fail "plan wide, text: $(head -c 400 "$tmp/wide.txt")"

check "the wide MLP: --tp 2 fastest, by the hand-computed figures" "$py" - "$tmp/wide.json" \
    "$tmp/wide_pp.json" <<'PY'
import json, sys
plan, insp = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a, b, N, B, T = 50e-6, 8 / 1e9, 2, 16, 0.02
L = {l["name"]: l for l in plan["layouts"]}
assert set(L) == {"data parallel", "--tp 2", "--pp 2 --micro-batches 8"}, list(L)
def close(what, got, want, rel=1e-6):
    if abs(got - want) > rel * abs(want):
        sys.exit("%s: %r, expected %r" % (what, got, want))
P = 4096 * 256 + 4096 + 256 * 4096 + 256 + 10 * 256 + 10  # every weight and bias
S = 4.0 * P                                 # 3 buckets of 4 MiB at most
dp, tp, pp = L["data parallel"], L["--tp 2"], L["--pp 2 --micro-batches 8"]
# N = 2: recursive doubling (one exchange) beats the ring; + the loss average
close("DP AllReduce seconds", dp["allreduce_seconds"], 3 * a + S * b + a)
close("DP AllReduce bytes", dp["allreduce_bytes"], 2 * S + 16)
R = 4.0 * 256                               # replicated: l1.bias (l2 split by classes)
close("--tp 2 AllReduce seconds", tp["allreduce_seconds"], a + R * b + a)
# at the group batch 32, gathered from the other rank: the pair's output
# forward and l2's input gradient backward (x needs none), and the split
# cross-entropy's 3 floats a row forward and backward
close("--tp 2 group sum seconds", tp["group_sum_seconds"],
      2 * (a + 4 * 32 * 256 * b) + 2 * (a + 4 * 3 * 32 * b))
close("--tp 2 group sum bytes", tp["group_sum_bytes"], 2 * 4 * (2 * 32 * 256 + 2 * 3 * 32))
send = insp["pipeline"]["stage"][0]["send_bytes_per_step"]
# one pipeline: each stage's weights have no other replica; the loss average only
close("--pp 2 AllReduce seconds (the loss average)", pp["allreduce_seconds"], a)
close("--pp 2 AllReduce bytes (the loss average)", pp["allreduce_bytes"], 16)
close("--pp 2 bubble", pp["bubble"], 1 / 9)
# stage 0 sends 8 activations and receives 8 gradients and the loss
close("--pp 2 stage bytes", pp["stage_bytes"], 2 * send + 4)
close("--pp 2 stage seconds", pp["stage_seconds"], 17 * a + (send + 4) * b)
# work: the matrix products' FLOPs (forward, weight gradients, input
# gradients but x's); the elementwise nodes and updates add a little
g0, g1, g2 = 2 * 256 * 4096, 2 * 4096 * 256, 2 * 256 * 10  # FLOPs a row
dp_work = B * (2 * (g0 + g1 + g2) + g1 + g2)
tp_work = 2 * B * (2 * (g0 / 2 + g1 / 2 + g2 / 2) + g1 / 2 + g2 / 2)
mb = 2 * B / 8                              # rows a micro-batch
# the cut after the first Relu; each stage also adds its weights' gradients
# over the micro-batches (7 Adds of 3 values an entry in 8 micro-batches)
acc = 7 / 8 * 3
st0 = mb * 2 * g0 + acc * 256 * 4096
st1 = mb * (3 * g1 + 3 * g2) + acc * (4096 * 256 + 256 * 10)
pp_work = st0 + st1 + 7 * max(st0, st1)
for l, want in ((dp, dp_work), (tp, tp_work), (pp, pp_work)):
    close(l["name"] + " work", l["work_flops"], want, 0.08)
    close(l["name"] + " compute", l["compute_seconds"], T * l["work_flops"] / dp["work_flops"])
    close(l["name"] + " step", l["step_seconds"], l["compute_seconds"] + l["allreduce_seconds"]
          + l["group_sum_seconds"] + l["stage_seconds"])
    close(l["name"] + " samples/s", l["samples_per_second"], N * B / l["step_seconds"])
hybrid = [s for s in plan["settings"] if s["name"] == "hybrid"][0]["samples_per_second"][-1]
close("data parallel = the hybrid setting", dp["samples_per_second"], hybrid)
assert plan["fastest_layout"] == "--tp 2", plan["fastest_layout"]
assert tp["samples_per_second"] > pp["samples_per_second"] > 2 * dp["samples_per_second"]
print("ok: " + ", ".join("%s %.0f" % (n, l["samples_per_second"]) for n, l in L.items()))
PY
check "the wide MLP, text: the fastest layout and its compile flags" \
    grep -q "^fastest layout at 2 hosts: --tp 2, .*(compile with --tp 2 --batch 32)" "$tmp/wide.txt"

check "the narrow MLP: data parallelism fastest" "$py" - "$tmp/narrow.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
a, b = 50e-6, 8 / 1e9
L = {l["name"]: l for l in plan["layouts"]}
assert plan["fastest_layout"] == "data parallel", plan["fastest_layout"]
tp = L["--tp 2"]
# group batch 1024: both pairs' outputs forward, the second pair's and the
# output layer's (split by classes) input gradients backward, 1024 x 128
# values each; the split cross-entropy's 3 floats a row forward and backward
want = 4 * (a + 4 * 1024 * 128 * b) + 2 * (a + 4 * 3 * 1024 * b)
if abs(tp["group_sum_seconds"] - want) > 1e-6 * want:
    sys.exit("group sums %r s, expected %r" % (tp["group_sum_seconds"], want))
for n, l in L.items():
    if n != "data parallel" and not l["samples_per_second"] < L["data parallel"]["samples_per_second"]:
        sys.exit("%s predicted faster than data parallelism" % n)
print("ok: " + ", ".join("%s %.0f" % (n, l["samples_per_second"]) for n, l in L.items()))
PY

# ---- bytes: the plan against running jobs (2 ranks on this machine)
mkdir -p "$tmp/data"
"$py" - "$tmp/data" <<'PY'
import sys
import numpy as np
rng = np.random.RandomState(0)
np.save(sys.argv[1] + "/x.npy", rng.rand(64, 64).astype(np.float32))
np.save(sys.argv[1] + "/y.npy", rng.randint(0, 10, size=64).astype(np.int64))
PY
for flags in "--tp 2 --batch 16" "--pp 2 --micro-batches 8 --batch 16"; do
    name=${flags% --batch 16}
    id=$(echo "$name" | tr -c 'a-z0-9\n' '_')
    # shellcheck disable=SC2086 # the words of the layout's flags
    if ! "$parallaxc" compile "$tmp/small.onnx" -o "$tmp/$id" $flags "${train[@]}" >"$tmp/c.log" 2>&1 ||
        ! timeout 120 mpirun --oversubscribe -np 2 "$tmp/$id" --data "$tmp/data" --steps 8 \
            --warmup-steps 3 --log-every 0 --threads 1 --stats "$tmp/$id.stats" >"$tmp/run" 2>&1; then
        fail "$name: $(tail -c 400 "$tmp/c.log" "$tmp/run")"
        continue
    fi
    check "$name: each rank's bytes per step as planned" "$py" - "$tmp/small.json" \
        "$tmp/$id.stats" "$name" <<'PY'
import json, sys
plan, stats, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
l = [l for l in plan["layouts"] if l["name"] == name][0]
want = l["allreduce_bytes"] + l["group_sum_bytes"] + l["stage_bytes"]
for r in stats["ranks"]:
    got = sum(r["bytes_sent_per_step"].values()) + sum(r["bytes_received_per_step"].values())
    if abs(got - want) > 1e-6 * want:
        sys.exit("rank %d: %r bytes per step, planned %r (%s)" % (r["rank"], got, want, r))
print("%s: %r bytes per step" % (name, want))
PY
done

# ---- bytes under --pp with data parallelism across pipelines: each
# stage's ranks AllReduce their own variables, so ranks of different stages
# move different bytes. inspect gives each stage's; on 4 ranks (2
# pipelines of 2 stages) each rank's measured bytes are its stage's plus
# its transfers (the activations on and their gradients back, and the
# 4-byte loss broadcast).
pp2=(--pp 2 --micro-batches 8 --batch 16 "${train[@]}")
if "$parallaxc" inspect "$tmp/small.onnx" --ranks 4 --stage parallel --format json "${pp2[@]}" \
    -o "$tmp/pp4r.json" 2>"$tmp/err" &&
    timeout 120 mpirun --oversubscribe -np 4 "$tmp/$(echo "--pp 2 --micro-batches 8" |
        tr -c 'a-z0-9\n' '_')" --data "$tmp/data" \
        --steps 8 --warmup-steps 3 --log-every 0 --threads 1 --stats "$tmp/pp4r.stats" \
        >"$tmp/run" 2>&1; then
    check "--pp 2 on 4 ranks: each rank's bytes per step are its stage's, as inspect predicts" \
        "$py" - "$tmp/pp4r.json" "$tmp/pp4r.stats" <<'PY'
import json, sys
insp, stats = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
by = [s["hybrid"] for s in insp["predicted_bytes_per_step_by_stage"]]
send = insp["pipeline"]["stage"][0]["send_bytes_per_step"]
assert len(by) == 2 and by[0] != by[1], by  # the stages' variables differ
for r in stats["ranks"]:
    got = sum(r["bytes_sent_per_step"].values()) + sum(r["bytes_received_per_step"].values())
    want = by[r["rank"] % 2] + 2 * send + 4
    if abs(got - want) > 1e-6 * want:
        sys.exit("rank %d: %r bytes per step, predicted %r (%s)" % (r["rank"], got, want, r))
print("stages: %r bytes per step" % by)
PY
else
    fail "--pp 2 on 4 ranks: $(tail -c 400 "$tmp/err" "$tmp/run")"
fi
# The plan's MB/step is the busiest rank's: at 8 ranks, --pp 4 (2
# pipelines) moves the most on a middle stage (transfers both ways), while
# the last stage's AllReduce is the largest (its 2 layers).
mk deep5 64,64,64,64,64,10
"$parallaxc" plan "$tmp/deep5.onnx" --batch 8 --hosts 8 --link 1gbit --cores 1 --step-seconds 0.01 \
    --layouts --format json "${train[@]}" >"$tmp/deep5.json" 2>"$tmp/err" ||
    fail "plan deep5: $(head -c 400 "$tmp/err")"
"$parallaxc" inspect "$tmp/deep5.onnx" --batch 32 --pp 4 --micro-batches 16 --ranks 8 \
    --stage parallel --format json "${train[@]}" -o "$tmp/deep5_pp4.json" 2>"$tmp/err" ||
    fail "inspect deep5: $(head -c 400 "$tmp/err")"
check "--pp 4 on 8 ranks: the plan's bytes are the busiest rank's (a middle stage's)" "$py" - \
    "$tmp/deep5.json" "$tmp/deep5_pp4.json" <<'PY'
import json, sys
plan, insp = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
l = [l for l in plan["layouts"] if l["name"] == "--pp 4 --micro-batches 16"][0]
by = [s["hybrid"] for s in insp["predicted_bytes_per_step_by_stage"]]
send = [s["send_bytes_per_step"] for s in insp["pipeline"]["stage"]]
S = len(by)
ranks = []
for s in range(S):
    xfer = 2 * send[s] + (2 * send[s - 1] if s else 0) + (4 * (S - 1) if s == S - 1 else 4)
    ranks.append(by[s] + xfer)
busiest = max(range(S), key=lambda s: ranks[s])
assert 0 < busiest < S - 1 and by.index(max(by)) == S - 1, (ranks, by)
got = l["allreduce_bytes"] + l["group_sum_bytes"] + l["stage_bytes"]
assert abs(got - ranks[busiest]) <= 1e-6 * got, (got, ranks)
print("per stage %r: the plan says %r" % (ranks, got))
PY

# ---- a model with a sparse embedding: under --comm allreduce, --pp is
# predicted (the comm pass densifies the embedding on its stage, as compile
# does); under hybrid, the reason is given
lm=$src/examples/transformer_lm/model.onnx
for comm in allreduce hybrid; do
    "$parallaxc" plan "$lm" --batch 8 --hosts 2 --link 1gbit --cores 1 --step-seconds 0.01 \
        --layouts --format json --comm $comm >"$tmp/lm_$comm.json" 2>"$tmp/err" ||
        fail "plan transformer_lm --comm $comm: $(head -c 400 "$tmp/err")"
done
check "transformer LM: --pp 2 predicted under --comm allreduce and hybrid" "$py" - \
    "$tmp/lm_allreduce.json" "$tmp/lm_hybrid.json" <<'PY'
import json, sys
ar, hy = ({l["name"]: l for l in json.load(open(f))["layouts"]} for f in sys.argv[1:])
pp = "--pp 2 --micro-batches 8"
assert ar[pp]["predicted"] and ar["--tp 2"]["predicted"], ar
assert ar[pp]["stage_bytes"] > 0 and ar["--tp 2"]["group_sum_bytes"] > 0, ar
assert hy[pp]["predicted"] and hy[pp]["stage_bytes"] > 0, hy[pp]
print("ok")
PY

# ---- bad values name the flag
base=("$tmp/small.onnx" --batch 8 --hosts 2 --link 1gbit --cores 1 --step-seconds 0.01)
refuse "plan --tp" "--tp is not a plan flag: --layouts" "$parallaxc" plan "${base[@]}" --tp 2
refuse "plan --pp" "--pp is not a plan flag: --layouts" "$parallaxc" plan "${base[@]}" --pp 2
refuse "--micro-batches without --layouts" "--micro-batches applies to the --pp layouts" \
    "$parallaxc" plan "${base[@]}" --micro-batches 4
refuse "--micro-batches 0" "--micro-batches wants a whole number" \
    "$parallaxc" plan "${base[@]}" --layouts --micro-batches 0
"$parallaxc" plan "${base[@]}" --layouts --micro-batches 3 >"$tmp/m3.txt" 2>&1 ||
    fail "--micro-batches 3: $(head -c 300 "$tmp/m3.txt")"
check "--micro-batches that does not divide a pipeline's batch: that layout not predicted, why" \
    grep -q -- "--pp 2 --micro-batches 3 *not predicted: --micro-batches 3 does not divide the batch 16" \
    "$tmp/m3.txt"
# the flags a layout cannot go with: the layout not predicted, with compile's message
"$parallaxc" plan "${base[@]}" --layouts --comm ps >"$tmp/ps.txt" 2>&1 ||
    fail "--layouts --comm ps: $(head -c 300 "$tmp/ps.txt")"
check "--comm ps: --tp 2 not predicted, with compile's reason" grep -q -- \
    "--tp 2 *not predicted: --tp needs --comm hybrid or allreduce (the split weights' gradients go through AllReduce), not 'ps'" \
    "$tmp/ps.txt"
check "--comm ps: --pp 2 not predicted, with compile's reason" grep -q -- \
    "--pp 2 --micro-batches 8 *not predicted: --pp needs --comm hybrid or allreduce" "$tmp/ps.txt"
"$parallaxc" plan "${base[@]}" --layouts --sparsity auto:0.5 >"$tmp/sp.txt" 2>&1 ||
    fail "--layouts --sparsity: $(head -c 300 "$tmp/sp.txt")"
check "--sparsity: --pp 2 not predicted, with compile's reason" grep -q -- \
    "--pp 2 --micro-batches 8 *not predicted: --pp cuts the model into stages; it cannot be combined with --sparsity yet" \
    "$tmp/sp.txt"

echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
