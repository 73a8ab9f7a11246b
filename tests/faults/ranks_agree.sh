#!/bin/bash
# Usage: ranks_agree.sh PARALLAXC SRCDIR
#
# Ranks that disagree are stopped (docs/faults.md, "Ranks that disagree"):
# under `mpirun -np 1 PROG A : -np 1 PROG B`, where B differs from A in one
# flag that changes the numbers, the schedule or the messages between
# ranks, the job ends before step 1, with status 2 and a message naming the
# flag and both values, within 20 s (the fingerprint exchange itself is a
# few milliseconds after MPI starts; the bound leaves room for a loaded
# machine). A rank whose command line alone is refused prints its own
# error. Ranks that agree still train, and flags that are rank 0's alone
# (--losses, --log-every) may differ.
# Prints PASS/FAIL lines, then "N passed, M failed".
. "$(dirname "$0")/../cli/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ex=$src/examples/recommender
"$parallaxc" compile "$ex/model.onnx" -o "$tmp/p" --batch 8 >"$tmp/c.log" 2>&1 ||
    {
        cat "$tmp/c.log"
        exit 1
    }
data=$ex/data
# A checkpoint to resume from.
"$tmp/p" --data "$data" --steps 2 --log-every 0 --checkpoint "$tmp/ck" >"$tmp/ck.log" 2>&1 ||
    {
        cat "$tmp/ck.log"
        exit 1
    }
base=(--data "$data")

# differ NAME PATTERN "A FLAGS" "B FLAGS": rank 0 gets A, rank 1 gets B.
differ() {
    local name=$1 pattern=$2 rc t0 ms
    read -r -a a <<<"$3"
    read -r -a b <<<"$4"
    t0=$(date +%s%N)
    timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$tmp/p" "${base[@]}" \
        --log-every 1 "${a[@]}" : -np 1 "$tmp/p" "${base[@]}" --log-every 1 "${b[@]}" >"$tmp/run.log" \
        2>&1 </dev/null
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        fail "$name: status $rc: $(grep -v '^$' "$tmp/run.log" | head -c 400)"
    elif ! grep -q -E -- "$pattern" "$tmp/run.log"; then
        fail "$name: no line matches /$pattern/: $(head -c 400 "$tmp/run.log")"
    elif grep -q "^step " "$tmp/run.log"; then
        fail "$name: a step was trained: $(head -c 400 "$tmp/run.log")"
    elif [ $ms -gt 20000 ]; then
        fail "$name: took $ms ms"
    else
        pass "$name: status $rc in $ms ms: $(grep -m1 -E -- "$pattern" "$tmp/run.log" | head -c 220)"
    fi
}

v="rank 0 has"
differ "--lr" "different --lr: $v 0.10000000000000001, rank 1 has 0.20000000000000001" "--lr 0.1" "--lr 0.2"
differ "--shuffle" "different --shuffle: $v 1, rank 1 has 2" "--shuffle 1" "--shuffle 2"
differ "--lr-schedule" "different --lr-schedule: $v constant, rank 1 has cosine:4" "" "--lr-schedule cosine:4"
differ "--partitions" "different --partitions: $v 1, rank 1 has 2" "--partitions 1" "--partitions 2"
differ "--checkpoint paths" "different --checkpoint: $v $tmp/a.ckpt, rank 1 has $tmp/b.ckpt" \
    "--checkpoint $tmp/a.ckpt" "--checkpoint $tmp/b.ckpt"
differ "--steps" "different --steps: $v 4, rank 1 has 6" "--steps 4" "--steps 6"
differ "--eval-every" "different --eval-every: $v 1, rank 1 has 2" \
    "--eval-data $data --eval-every 1" "--eval-data $data --eval-every 2"
differ "--no-overlap" "different --no-overlap: $v not given, rank 1 has given" "" "--no-overlap"
differ "--clip-grad-norm" "different --clip-grad-norm: $v 0, rank 1 has 1" "" "--clip-grad-norm 1"
differ "--resume on one rank" "different --resume: $v \(not given\), rank 1 has $tmp/ck" "" "--resume $tmp/ck"
differ "--shuffle-buffer" "different --shuffle-buffer: $v 8, rank 1 has 16" \
    "--shuffle 1 --shuffle-buffer 8" "--shuffle 1 --shuffle-buffer 16"
differ "--stall-timeout" "different --stall-timeout: $v 300, rank 1 has 40" "" "--stall-timeout 40"
differ "--wire" "different --wire: $v bf16, rank 1 has fp16" "--wire bf16" "--wire fp16"
differ "--staleness" "different --staleness: $v 0, rank 1 has 2" "" "--staleness 2"
differ "--sync-every" "different --sync-every: $v 0, rank 1 has 4" "" "--sync-every 4"
differ "a flag refused on rank 1 only" "rank 1 refuses its command line" "" "--lr -3"
[ -z "$(find "$tmp" -name 'a.ckpt*' -o -name 'b.ckpt*')" ] && pass "no checkpoint was written" ||
    fail "checkpoint files were written: $(find "$tmp" -name '?.ckpt*')"

# Ranks that agree train; rank 0's own flags may differ.
if timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np 1 "$tmp/p" "${base[@]}" \
    --steps 4 --losses "$tmp/l.csv" --log-every 0 : -np 1 "$tmp/p" "${base[@]}" --steps 4 --log-every 1 >"$tmp/run.log" \
    2>&1 </dev/null &&
    [ "$(wc -l <"$tmp/l.csv")" = 5 ]; then
    pass "ranks that agree train (rank 0's --losses and --log-every are its own)"
else
    fail "ranks that agree: $(head -c 400 "$tmp/run.log")"
fi

echo "$passed passed, $failed failed"
[ $passed -gt 0 ] && [ $failed -eq 0 ]
