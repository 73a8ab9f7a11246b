#!/bin/bash
# Usage: eval_metrics.sh PARALLAXC SRCDIR
# --eval-metrics auc,logloss,accuracy against NumPy on the same scores: a
# model whose score output is its input x times a constant 1 (so the scores
# are known: the data), validated on 1, 2 and 3 ranks, from a folder and
# from shards; scores with many ties (AUC's half credit; one score held by
# most samples, so its ties cross the ranks' ranges of the AUC's
# distributed sort; +0 and -0 one score), logits and
# probabilities (:prob); the metrics in the eval log and the validation
# line, --early-stop-metric auc:max; bad flags named.
. "$(dirname "$0")/lib.sh" "$@"
cd "$tmp" || exit 1
"$py" - <<'PY' || exit 1
import os
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    hasattr(np, a) or setattr(np, a, t)
from onnx import TensorProto, helper
# loss = mean((x * w - label)^2); score = x * 1 (a Constant: not trained)
nodes = [helper.make_node("Constant", [], ["one"], value=helper.make_tensor("one", 1, [], [1.0])),
         helper.make_node("Mul", ["x", "one"], ["score"]),
         helper.make_node("Mul", ["x", "w"], ["xw"]),
         helper.make_node("Sub", ["xw", "label"], ["d"]),
         helper.make_node("Mul", ["d", "d"], ["d2"]),
         helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)]
w = helper.make_tensor("w", TensorProto.FLOAT, [], [0.5])
g = helper.make_graph(nodes, "scores", [
    helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch"]),
    helper.make_tensor_value_info("label", TensorProto.FLOAT, ["batch"])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
     helper.make_tensor_value_info("score", TensorProto.FLOAT, ["batch"])], [w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
open("m.onnx", "wb").write(m.SerializeToString())
rng = np.random.default_rng(3)
n = 999  # 3 ranks x batch 8 x 41 steps + 15 left out
label = (rng.random(n) < 0.3).astype(np.float32)
for name, x in (("logit", (rng.normal(size=n) + label).round(1).astype(np.float32)),
                ("prob", (1 / (1 + np.exp(-rng.normal(size=n) - label))).round(2)
                 .astype(np.float32)),
                # most scores one value (+0 and -0 alike), spanning every rank's range
                ("tie", rng.choice(np.array([-0.0, 0.0, 0.25, -1.5, 3.0], np.float32), n,
                                   p=[0.4, 0.4, 0.1, 0.05, 0.05]))):
    os.makedirs(name, exist_ok=True)
    np.save(name + "/x.npy", x)
    np.save(name + "/label.npy", label)
    with open(name + ".csv", "w") as f:
        for xi, yi in zip(x, label):
            f.write("%r,%r\n" % (float(xi), float(yi)))
PY
check "compile" "$parallaxc" compile m.onnx -o prog --batch 8 --optimizer sgd --lr 0.01
for kind in logit prob tie; do
    check "$kind: into shards" "$parallaxc" data csv "$kind.csv" --schema x:float32,label:float32 \
        -o "sh_$kind" --shard-rows 100 --block-rows 16 --quiet
done
run() { # RANKS ARGS...
    local n=$1
    shift
    timeout 60 mpirun --allow-run-as-root --oversubscribe -np "$n" ./prog "$@"
}
reference() { # CSV KIND RANKS
    "$py" - "$@" <<'PY'
import sys
import numpy as np
log, kind, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
head = open(log).readline().strip().split(",")
got = dict(zip(head, np.loadtxt(log, delimiter=",", skiprows=1, ndmin=2)[-1]))
x = np.load(kind + "/x.npy").astype(np.float64)
y = np.load(kind + "/label.npy").astype(np.float64)
n = len(x) // (8 * ranks) * 8 * ranks  # the full global batches
x, y = x[:n], y[:n]
# AUC by average ranks (ties share their ranks): the Mann-Whitney U
order = np.argsort(x, kind="stable")
ranks_ = np.empty(n)
xs = x[order]
i = 0
while i < n:
    j = i
    while j + 1 < n and xs[j + 1] == xs[i]:
        j += 1
    ranks_[order[i:j + 1]] = (i + j) / 2 + 1
    i = j + 1
pos = y >= 0.5
P, N = pos.sum(), (~pos).sum()
auc = (ranks_[pos].sum() - P * (P + 1) / 2) / (P * N)
if kind != "prob":
    p = 1 / (1 + np.exp(-x))
    logloss = np.mean(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))))
else:
    p = np.clip(x, 1e-15, 1 - 1e-15)
    logloss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
accuracy = np.mean((p >= 0.5) == pos)
ok = (abs(got["auc"] - auc) <= 1e-9 and abs(got["logloss"] - logloss) <= 1e-8 * logloss and
      abs(got["accuracy"] - accuracy) <= 1e-9)
print("auc %r/%r logloss %r/%r accuracy %r/%r" % (got["auc"], auc, got["logloss"], logloss,
                                                  got["accuracy"], accuracy))
sys.exit(0 if ok else 1)
PY
}
for ranks in 1 2 3; do
    for kind in logit prob tie; do
        score=score
        [ $kind = prob ] && score=score:prob
        for layout in "$kind" "sh_$kind"; do
            check "$layout, $ranks rank(s): validation" run $ranks --data "$kind" --steps 2 \
                --log-every 1 --eval-data "$layout" --eval-metrics auc,logloss,accuracy \
                --eval-score $score --eval-log "ev.csv" || continue
            check "$layout, $ranks rank(s): the same as NumPy's" reference ev.csv $kind $ranks
        done
    done
done
check "the validation line shows them" bash -c "timeout 60 ./prog --data logit --steps 1 \
    --eval-data logit --eval-metrics accuracy,auc | grep -q 'validation after step 1:.* accuracy \
[0-9.]*  auc [0-9.]*'"
check "--early-stop-metric auc:max" bash -c "timeout 60 ./prog --data logit --steps 6 \
    --eval-data logit --eval-every 1 --eval-metrics auc --early-stop 2 --early-stop-metric auc:max \
    | grep -q 'early stop after step 3: 2 validations without a better auc'"
bad_flag() { # LABEL PATTERN ARGS...
    local label=$1 pattern=$2
    shift 2
    timeout 60 ./prog --data logit --steps 1 "$@" >out.log 2>&1
    local rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pattern" out.log; then
        pass "$label: refused"
    else
        fail "$label: status $rc: $(head -c 300 out.log)"
    fi
}
bad_flag "an unknown metric" "--eval-metrics: 'f1' is unknown" --eval-data logit \
    --eval-metrics auc,f1
bad_flag "a metric twice" "'auc' is given twice" --eval-data logit --eval-metrics auc,auc
bad_flag "without --eval-data" "--eval-metrics needs --eval-data" --eval-metrics auc
bad_flag "a missing score output" "--eval-score: the model has no output 'logits'" \
    --eval-data logit --eval-metrics auc --eval-score logits
bad_flag "a score that is not per sample" "--eval-score loss: the output is not" \
    --eval-data logit --eval-metrics auc --eval-score loss
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
