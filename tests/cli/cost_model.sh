#!/bin/bash
# Usage: cost_model.sh PARALLAXC SRCDIR
# The alpha-beta cost model (passes/traffic.c) as `inspect` reports it and as
# --comm auto uses it, against a re-implementation here from the variables'
# sizes (design: 50 us a message, 1 Gbit/s; AllReduce buckets of --bucket-mb
# MiB, each by the faster of the ring and recursive doubling):
#   - the mlp (dense only) at 2, 3, 4 and 8 ranks: predicted seconds of
#     allreduce mode = the buckets' AllReduce time + the loss average's
#     ceil(log2 N) latencies, as many again for each loss whose kept rows
#     are averaged (a LossDenominator node: its cross-entropy has
#     ignore_index); ps mode = 2 latencies + both directions of f·S bytes
#     per variable, + the same averages;
#   - --comm auto with the default buckets keeps the mlp's dense variables
#     on AllReduce (one bucket: the latencies are shared) and with 1 kB
#     buckets (hundreds of latency-bound AllReduces) moves them to the
#     parameter servers, as the model says; the compiled program then still
#     trains like the hybrid one (the same losses at 2 ranks).
. "$(dirname "$0")/lib.sh" "$@"
model=$src/examples/mlp/model.onnx

for n in 2 3 4 8; do
    if ! "$parallaxc" inspect "$model" --batch 8 --ranks $n --stage parallel --format json \
        -o "$tmp/p.json" 2>"$tmp/err"; then
        fail "inspect --ranks $n: $(head -c 300 "$tmp/err")"
        continue
    fi
    if "$py" - "$tmp/p.json" $n >"$tmp/log" 2>&1 <<'PY'; then
import json, math, sys
doc, n = json.load(open(sys.argv[1])), int(sys.argv[2])
alpha, beta, cap = 50e-6, 1 / 125e6, 4 * 1024 * 1024
f = (n - 1) / n
p = 1 << int(math.floor(math.log2(n)))
def ring(s): return 2 * (n - 1) * (alpha + s / n * beta)
def doubling(s): return (math.log2(p) + (2 if n > p else 0)) * (alpha + s * beta)
sizes = [v["bytes"] for v in doc["variables"]]
total = sum(sizes)
buckets = max(1, math.ceil(total / cap))
averages = 1 + sum(1 for node in doc["nodes"] if node["op"] == "LossDenominator")
loss = averages * math.ceil(math.log2(n)) * alpha
want = {"allreduce": buckets * min(ring(total / buckets), doubling(total / buckets)) + loss,
        "ps": sum(2 * alpha + 2 * f * s * beta for s in sizes) + loss}
got = doc["predicted_seconds_per_step"]
print("ranks %d: predicted %s, expected %s" % (n, got, want))
sys.exit(0 if all(abs(got[k] - want[k]) <= 1e-9 + 1e-6 * want[k] for k in want)
         and got["hybrid"] == got["allreduce"] else 1)
PY
        pass "mlp, $n ranks: $(tail -n 1 "$tmp/log")"
    else
        fail "mlp, $n ranks"
        cat "$tmp/log"
    fi
done

# auto: where the dense variables go, by bucket size.
syncs() {
    "$parallaxc" inspect "$model" --batch 8 --ranks 4 --stage parallel --comm auto \
        --format json "$@" | "$py" -c '
import json, sys
print(" ".join(sorted(set(v["sync"] for v in json.load(sys.stdin)["variables"]))))'
}
big=$(syncs)
small=$(syncs --bucket-mb 0.001)
if [ "$big" = "allreduce" ] && [ "$small" = "ps" ]; then
    pass "auto: default buckets -> $big, 1 kB buckets -> $small"
else
    fail "auto: default buckets -> '$big' (want allreduce), 1 kB buckets -> '$small' (want ps)"
fi

# The auto program with dense variables on the PS trains like hybrid.
data=$src/examples/mlp/data
run() {
    "$parallaxc" compile "$model" -o "$tmp/prog" --batch 8 --ranks 4 "$@" 2>"$tmp/err" &&
        timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/prog" --data "$data" \
            --steps 6 --log-every 0 --losses "$tmp/l.csv" >"$tmp/run" 2>&1 && cat "$tmp/l.csv"
}
if run --comm hybrid >"$tmp/hybrid.csv" && run --comm auto --bucket-mb 0.001 >"$tmp/auto.csv" &&
    "$py" - "$tmp/hybrid.csv" "$tmp/auto.csv" <<'PY'; then
import sys
a, b = ([float(l.split(",")[1]) for l in open(f) if l[0].isdigit()] for f in sys.argv[1:3])
ok = len(a) == len(b) == 6 and all(abs(x - y) <= 1e-5 * max(1, abs(x)) for x, y in zip(a, b))
print("losses hybrid %s, auto %s" % (a, b))
sys.exit(0 if ok else 1)
PY
    pass "auto with dense variables on the parameter servers trains like hybrid"
else
    fail "auto program: $(cat "$tmp/err" "$tmp/run" 2>/dev/null | head -c 600)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
