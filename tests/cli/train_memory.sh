#!/bin/bash
# Usage: train_memory.sh PARALLAXC SRCDIR
# A worker keeps no full-size replica of a parameter-server table, and the
# partitions of a table spread over every node's shard. The model
# (tests/tools/make_table_model.py) has one 1,000,000 x 32 float table
# (128 MB) and a few KB of everything else; peak RSS of each rank is
# measured from outside (tests/tools/peak_rss.py) under mpirun -np 2:
#   - one node (one shard, on rank 0): rank 1 is a pure worker and must hold
#     well under a quarter of the table (before the row cache it held the
#     whole table); rank 0 holds the shard's rows (plus, until the weights
#     are loaded instead of linked, the initial values it reads them from):
#     under 2 tables + 64 MB, i.e. no further copy;
#   - two virtual nodes with 2 partitions (one per shard): each
#     rank holds half the rows: under 1.25 tables + 32 MB each, where a
#     table placed whole on one shard would need 2 tables there;
#   - the default automatic partitions on two shards train too (the
#     partition search runs), and their RSS is reported.
# Each run's losses must be finite and the same in every layout (layouts
# move bytes, not numbers).
set -u
parallaxc=$1
src=$2
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=1000000
dim=32
table=$((rows * dim * 4))
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe -np 2)
if ! "$py" "$src/tests/tools/make_table_model.py" "$tmp/m" "$rows" "$dim" 2>"$tmp/err" ||
    ! "$parallaxc" compile "$tmp/m/model.onnx" -o "$tmp/prog" --batch 8 2>>"$tmp/err"; then
    echo "FAIL: could not build the model: $(head -c 600 "$tmp/err")"
    exit 1
fi
failed=0
passed=0
run() { # NAME ARGS...: runs the program under mpirun with peak RSS per rank
    local name=$1
    shift
    if ! timeout 300 "${mpirun_cmd[@]}" "$py" "$src/tests/tools/peak_rss.py" "$tmp/rss.$name" \
        "$tmp/prog" --data "$tmp/m/data" --steps 30 --log-every 0 --losses "$tmp/$name.csv" "$@" \
        >"$tmp/$name.out" 2>&1; then
        echo "FAIL $name: the run failed: $(tail -c 600 "$tmp/$name.out")"
        failed=$((failed + 1))
        return 1
    fi
}
check() { # NAME RANK LIMIT_BYTES WHAT
    local rss
    rss=$(cat "$tmp/rss.$1.$2")
    if [ "$rss" -lt "$3" ]; then
        echo "PASS $1: rank $2 peak RSS $((rss / 1048576)) MiB < $(($3 / 1048576)) MiB ($4)"
        passed=$((passed + 1))
    else
        echo "FAIL $1: rank $2 peak RSS $((rss / 1048576)) MiB, limit $(($3 / 1048576)) MiB ($4)"
        failed=$((failed + 1))
    fi
}
mib=1048576
echo "table: $rows x $dim float32 = $((table / mib)) MiB"
if run one_node; then
    check one_node 1 $((table / 4)) "a worker: no replica of the table"
    check one_node 0 $((2 * table + 64 * mib)) "the shard: its rows, no further copy"
fi
if run two_shards --ranks-per-node 1 --partitions 2; then
    check two_shards 0 $((table * 5 / 4 + 32 * mib)) "half the rows on each shard"
    check two_shards 1 $((table * 5 / 4 + 32 * mib)) "half the rows on each shard"
fi
if run auto --ranks-per-node 1; then
    echo "auto partitions: $(grep '^auto partitions' "$tmp/auto.out" | sed 's/.*chose/chose/'); peak RSS" \
        "rank 0 $(($(cat "$tmp/rss.auto.0") / mib)) MiB, rank 1 $(($(cat "$tmp/rss.auto.1") / mib)) MiB"
fi
# The same numbers in every layout.
for name in two_shards auto; do
    [ -f "$tmp/$name.csv" ] && [ -f "$tmp/one_node.csv" ] || continue
    if "$py" - "$tmp/one_node.csv" "$tmp/$name.csv" <<'PY'; then
import math, sys
a = [l.strip().split(",") for l in open(sys.argv[1]).read().split("\n")[1:] if l.strip()]
b = [l.strip().split(",") for l in open(sys.argv[2]).read().split("\n")[1:] if l.strip()]
ok = len(a) == 30 and a == b and all(math.isfinite(float(r[1])) for r in a)
print("%d losses, last %s" % (len(a), a[-1][1] if a else "none"))
sys.exit(0 if ok else 1)
PY
        echo "PASS $name: the same losses as one node"
        passed=$((passed + 1))
    else
        echo "FAIL $name: losses differ from one node"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
