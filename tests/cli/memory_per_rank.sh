#!/bin/bash
# Usage: memory_per_rank.sh PARALLAXC SRCDIR
# Memory per rank (issue #9): `inspect --ranks N [--ranks-per-node K]`
# predicts the bytes each rank holds, and the program's --stats writes, next
# to each rank's peak RSS, the same breakdown computed from what it holds at
# run time. On examples/recommender (tests/tools/check_memory.py):
#   - inspect's prediction equals an independent computation from the
#     variables table (shapes, classes, sync), the optimizer and the
#     runtime's placement rule, for several rank/node/partition layouts;
#   - a 4-rank run on 4 virtual nodes with --partitions 4 predicts for each
#     rank exactly what inspect predicts for the same flags, and its shards
#     together hold exactly the tables' bytes; with automatic partitions
#     (the search runs) the shards still hold exactly the tables' bytes;
#   - on a model with one 500,000 x 32 table (64 MB, tests/tools/
#     make_table_model.py), each rank's measured peak RSS lies between its
#     predicted total and 48 MiB above it (the process baseline, ~20 MiB),
#     on one node (rank 0 the only shard) and on two (two partitions).
. "$(dirname "$0")/lib.sh" "$@"
check="$py $src/tests/tools/check_memory.py"
model=$src/examples/recommender/model.onnx
data=$src/examples/recommender/data
result() { # STATUS NAME
    if [ "$1" -eq 0 ]; then
        echo "PASS $2"
        passed=$((passed + 1))
    else
        echo "FAIL $2"
        failed=$((failed + 1))
    fi
}

# inspect vs the independent computation: RANKS RANKS_PER_NODE PARTITIONS OPTIMIZER
for layout in "4 1 0 adam" "4 0 0 momentum" "3 2 3 sgd" "5 2 7 adagrad"; do
    read -r ranks per_node parts opt <<<"$layout"
    flags=(--batch 64 --ranks "$ranks" --optimizer "$opt" --format json)
    [ "$per_node" -gt 0 ] && flags+=(--ranks-per-node "$per_node")
    [ "$parts" -gt 0 ] && flags+=(--partitions "$parts")
    name="inspect ranks=$ranks per_node=$per_node partitions=$parts $opt"
    if "$parallaxc" inspect "$model" "${flags[@]}" >"$tmp/folded.json" 2>"$tmp/err" &&
        "$parallaxc" inspect "$model" "${flags[@]}" --stage parallel >"$tmp/parallel.json" \
            2>>"$tmp/err"; then
        $check expect "$tmp/folded.json" "$tmp/parallel.json" "$ranks" "$per_node" "$parts" "$opt"
        result $? "$name"
    else
        result 1 "$name: $(head -c 400 "$tmp/err")"
    fi
done

# The text listing has the table.
"$parallaxc" inspect "$model" --batch 64 --ranks 4 --ranks-per-node 2 >"$tmp/text.txt" 2>&1
grep -q '^memory per rank (4 ranks, 2 shards' "$tmp/text.txt" && grep -q '2 (shard 1)' "$tmp/text.txt"
result $? "inspect text: memory per rank table"

# Bad flag values are usage errors.
"$parallaxc" inspect "$model" --batch 64 --ranks-per-node 0 >/dev/null 2>&1
[ $? -eq 2 ]
result $? "inspect --ranks-per-node 0: exit 2"

# The program's own prediction vs inspect's, and the bytes its shards hold.
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe -np 4)
for parts in 4 auto; do
    name="program -np 4 --ranks-per-node 1 --partitions $parts"
    if ! "$parallaxc" compile "$model" --batch 64 --optimizer adam --partitions "$parts" \
        -o "$tmp/prog" 2>"$tmp/err" ||
        ! "$parallaxc" inspect "$model" --batch 64 --optimizer adam --partitions "$parts" \
            --ranks 4 --ranks-per-node 1 --format json >"$tmp/pred.json" 2>>"$tmp/err" ||
        ! timeout 300 "${mpirun_cmd[@]}" "$tmp/prog" --data "$data" --steps 30 --log-every 0 \
            --ranks-per-node 1 --stats "$tmp/stats.json" >"$tmp/run.out" 2>&1; then
        result 1 "$name: $(tail -c 600 "$tmp/err" "$tmp/run.out" 2>/dev/null)"
        continue
    fi
    mode=()
    [ "$parts" = auto ] && mode=(held-only)
    $check compare "$tmp/pred.json" "$tmp/stats.json" "${mode[@]}"
    result $? "$name"
done
# Predicted vs measured on a model whose table dominates.
if "$py" "$src/tests/tools/make_table_model.py" "$tmp/t" 500000 32 2>"$tmp/err" &&
    "$parallaxc" compile "$tmp/t/model.onnx" --batch 8 -o "$tmp/tprog" 2>>"$tmp/err"; then
    for layout in "" "--ranks-per-node 1 --partitions 2"; do
        name="peak RSS vs prediction, -np 2 ${layout:-one node}"
        # shellcheck disable=SC2086 # layout is a list of flags
        if timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/tprog" \
            --data "$tmp/t/data" --steps 20 --log-every 0 --stats "$tmp/tstats.json" $layout \
            >"$tmp/trun.out" 2>&1; then
            $check rss "$tmp/tstats.json" 48
            result $? "$name"
        else
            result 1 "$name: $(tail -c 600 "$tmp/trun.out")"
        fi
    done
else
    result 1 "table model: $(head -c 600 "$tmp/err")"
fi
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
