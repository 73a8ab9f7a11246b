#!/bin/bash
# Usage: train_overlap.sh PARALLAXC SRCDIR
# Overlapped parameter-server pulls (runtime/comm/ps/prefetch.c): by default
# the rows a step's pulls of a table read are requested when the previous
# step begins (at its pushes for the first step and for dense variables);
# a shard answers at once with the rows as they are and, after that step's
# update, sends the rows the update changed (ps_prefetch_serve.c). The
# numbers must not change: every case trains the same program with and
# without --no-overlap and compares the per-step losses (--losses) and the
# trained weights (--save) byte for byte, under mpirun -np 2 and 3, in
# hybrid and ps modes (ps: dense variables prefetched whole too), with
# several shards and local aggregation, automatic partitions moving rows
# between steps, shuffled data across an epoch boundary, --clip-grad-norm
# (the answers wait for the clipped update) and validations between steps.
# It also checks that the pushes leave early (runtime/comm/sched/push_async.c,
# passes/push_early.c): in the compiled LM1B graph the output tables' PSPush
# come before the LSTM's backward, and a 2-rank --trace shows them run on
# the communication thread (tid 1) while the main thread only queues them;
# and that answers left before the update (a fix-up follows each of them).
. "$(dirname "$0")/lib.sh" "$@"
ex=$src/examples

# case_ NAME EXAMPLE RANKS "COMPILE FLAGS" RUN FLAGS...
case_() {
    local name=$1 e=$2 np=$3 cflags=$4
    shift 4
    local d="$tmp/$name"
    mkdir -p "$d"
    # shellcheck disable=SC2086
    if ! "$parallaxc" compile "$ex/$e/model.onnx" -o "$d/prog" $cflags >"$d/compile.log" 2>&1; then
        fail "$name: compile: $(head -c 600 "$d/compile.log")"
        return
    fi
    local mode
    for mode in overlap no-overlap; do
        local extra=()
        [ "$mode" = no-overlap ] && extra=(--no-overlap)
        if ! timeout 180 mpirun --allow-run-as-root --oversubscribe -np "$np" "$d/prog" \
            --data "$ex/$e/data" --log-every 0 --losses "$d/$mode.csv" --save "$d/$mode.onnx" \
            --stats "$d/$mode.json" --stall-timeout 60 "$@" "${extra[@]}" >"$d/$mode.log" 2>&1; then
            fail "$name ($mode): $(tail -c 600 "$d/$mode.log")"
            return
        fi
    done
    if ! cmp -s "$d/overlap.csv" "$d/no-overlap.csv"; then
        fail "$name: the losses differ: $(diff "$d/overlap.csv" "$d/no-overlap.csv" | head -4)"
    elif ! cmp -s "$d/overlap.onnx" "$d/no-overlap.onnx"; then
        fail "$name: the trained weights differ"
    else
        pass "$name: $(($(wc -l <"$d/overlap.csv") - 1)) losses and the weights identical"
    fi
}

case_ "recommender hybrid np2" recommender 2 "--batch 4"  --steps 12
case_ "recommender ps np3, 3 shards" recommender 3 "--batch 4 --comm ps" --steps 10 \
    --ranks-per-node 1
case_ "recommender hybrid np3, 2 nodes, clip" recommender 3 "--batch 4 --optimizer adam --lr 0.01" \
    --steps 10 --ranks-per-node 2 --clip-grad-norm 0.05
case_ "recommender ps np2, 2 shards, clip, validation" recommender 2 "--batch 4 --comm ps" \
    --steps 9 --ranks-per-node 1 --clip-grad-norm 0.05 --eval-data "$ex/recommender/data" \
    --eval-every 4
case_ "lm1b hybrid np3, 3 shards, partitions searched, shuffled" lm1b 3 "--batch 4" --steps 30 \
    --ranks-per-node 1 --shuffle 7 --partitions search
case_ "lm1b ps np2, 2 shards, clip" lm1b 2 "--batch 4 --comm ps --optimizer momentum --lr 0.05" \
    --steps 8 --ranks-per-node 1 --clip-grad-norm 0.5
case_ "lm1b hybrid np2, no local aggregation" lm1b 2 "--batch 4 --partitions 3" --steps 8 \
    --ranks-per-node 2 --no-local-aggregation

# Pushes early, on the comm thread.
lm_flags=(--batch 4)
if "$parallaxc" inspect "$ex/lm1b/model.onnx" "${lm_flags[@]}" --stage parallel --graph \
    >"$tmp/lm1b_parallel.txt" 2>&1 &&
    awk '/PSPush\[var=1/ && !p {p = NR} /LSTMGrad/ && !l {l = NR} END {exit !(p && l && p < l)}' \
        "$tmp/lm1b_parallel.txt"; then
    pass "the LM1B output table's PSPush is placed before the LSTM's backward"
else
    fail "the LM1B output table's PSPush is not before the LSTM's backward"
fi
d="$tmp/lm1b hybrid np2, no local aggregation"
if [ -x "$d/prog" ] && timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$d/prog" \
    --data "$ex/lm1b/data" --steps 4 --log-every 0 --trace "$tmp/trace.json" \
    --ranks-per-node 2 >"$tmp/trace.log" 2>&1 && "$py" - "$tmp/trace.json" <<'PY'; then
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
for rank in (0, 1):
    mine = [e for e in ev if e["pid"] == rank]
    pushed = {(e["args"]["step"], e["args"]["variable"]) for e in mine
              if e["name"] == "PS push" and e["tid"] == 1}
    queued = {(e["args"]["step"], e["args"]["variable"]) for e in mine
              if e["name"] == "PS push queued" and e["tid"] == 0}
    if not queued or pushed != queued:
        sys.exit("rank %d: pushes queued %s, run on the comm thread %s" % (rank, queued, pushed))
print("pushes queued by the main thread and run by the comm thread:", len(queued), "per rank")
# The shard answered prefetches before its update: those answers, and only
# those, get a fix-up after it (ps_prefetch_serve.c), all on the comm thread.
answers = [e for e in ev if e["name"] in ("PS answer", "PS fix-up")]
fixups = [e for e in answers if e["name"] == "PS fix-up"]
if not fixups or any(e["tid"] != 1 for e in answers):
    sys.exit("answers %d (threads %s), fix-ups %d" % (
        len(answers), sorted({e["tid"] for e in answers}), len(fixups)))
def ends(e):
    return e["ts"] + e["dur"]
for f in fixups:  # the update it follows: the last push of that variable before it
    same = lambda e: e["pid"] == f["pid"] and e["args"]["variable"] == f["args"]["variable"]
    pushes = sorted(ends(e) for e in ev if e["name"] == "PS push" and same(e) and ends(e) <= f["ts"])
    if not pushes:
        sys.exit("a fix-up before any push: %s" % f)
    after = pushes[-2] if len(pushes) > 1 else -1
    if not any(after < e["ts"] < pushes[-1] for e in answers if e["name"] == "PS answer" and same(e)):
        sys.exit("a fix-up without an answer before the update: %s" % f)
print("prefetch answers given before the update:", len(fixups))
PY
    pass "the pushes and the early prefetch answers run on the communication thread (--trace)"
else
    fail "the pushes or the prefetch answers: $(tail -c 400 "$tmp/trace.log")"
fi

# The flag is documented.
prog="$tmp/recommender hybrid np2/prog"
if [ -x "$prog" ] && "$prog" --help 2>&1 | grep -q -- "--no-overlap"; then
    pass "--help documents --no-overlap"
else
    fail "--help does not mention --no-overlap"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
