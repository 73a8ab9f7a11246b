#!/bin/bash
# Usage: partitions_start.sh PARALLAXC SRCDIR
# Automatic partitions chosen without moving rows at run time: the
# recommender on 4 ranks, 4 parameter-server shards:
# - --partitions auto (the default) sets the shards up at one partition per
#   shard and says no row moves;
# - --partitions search measures candidate counts (moving rows) and records
#   its choice in --partitions-cache and in the checkpoint;
# - a later run with the cache, and a run resumed from the checkpoint,
#   start at the searched count ("the count measured before");
# - every layout trains to the same losses, byte for byte.
. "$(dirname "$0")/lib.sh" "$@"
ex=$src/examples/recommender
check "compile" "$parallaxc" compile "$ex/model.onnx" -o "$tmp/prog" --batch 4 --optimizer adam \
    --lr 0.01
run() { # NAME ARGS...: 4 ranks, 4 shards
    local name=$1
    shift
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 "$tmp/prog" --data "$ex/data" \
        --ranks-per-node 1 --log-every 0 --losses "$tmp/$name.csv" "$@" >"$tmp/$name.out" 2>&1
}
check "auto" run auto --steps 14
check "auto: one per shard, no row moved" grep -q \
    "^auto partitions: P=4 on 4 shards (one per shard.*); no rows move" "$tmp/auto.out"
# 12 steps: the search's candidates take the first 9.
check "search" run search --steps 12 --partitions search --partitions-cache "$tmp/parts.txt" \
    --checkpoint "$tmp/ck"
check "search: a choice, recorded" bash -c "grep -q '^auto partitions: P=4 .*chose' '$tmp/search.out' &&
    grep -q '^partitions [0-9]*$' '$tmp/parts.txt'"
parts=$(sed -n 's/^partitions //p' "$tmp/parts.txt")
check "cached" run cached --steps 14 --partitions-cache "$tmp/parts.txt"
check "cached: starts at the searched count" grep -q \
    "^auto partitions: P=$parts on 4 shards (the count measured before); no rows move" \
    "$tmp/cached.out"
cp "$tmp/search.csv" "$tmp/resumed.csv"
check "resumed" run resumed --steps 14 --resume "$tmp/ck"
check "resumed: starts at the checkpoint's count" grep -q \
    "^auto partitions: P=$parts on 4 shards (the count measured before)" "$tmp/resumed.out"
check "search: the losses of auto, byte for byte" cmp "$tmp/search.csv" <(head -13 "$tmp/auto.csv")
for name in cached resumed; do
    check "$name: the losses of auto, byte for byte" cmp "$tmp/auto.csv" "$tmp/$name.csv"
done
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
