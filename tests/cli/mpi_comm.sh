#!/bin/bash
# Usage: mpi_comm.sh PARALLAXC SRCDIR
#
# The MPI communication runtime (runtime/comm/) under mpirun with 1 to 4
# ranks: the test programs of tests/mpi/ (built next to parallaxc, in
# BUILD/tests/mpi) check bucketed allreduce, the parameter server, N ranks
# against a serial run, automatic partitions, traffic counters and the
# relaxed synchronization modes (mpi_relaxed.c), each
# printing "N checks, 0 failed" and exiting non-zero on a failure. Then
# failures: a stalled rank (watchdog), a killed rank and a bad index must
# end the whole job quickly with a message naming the rank.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 PARALLAXC SRCDIR" >&2
    exit 2
fi
bin=$(cd "$(dirname "$1")/../tests/mpi" 2>/dev/null && pwd)
if [ -z "$bin" ] || [ ! -x "$bin/mpi_allreduce" ]; then
    echo "FAIL: test programs not found in $(dirname "$1")/../tests/mpi (build the tests)"
    echo "0 passed, 1 failed"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)

pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() {
    failed=$((failed + 1))
    echo "FAIL: $1"
    sed 's/^/    | /' "$tmp/out" | tail -n 30
}

# run NAME NP [ENV=VALUE] -- PROGRAM ARGS...: must exit 0 and say "0 failed".
run() {
    local name=$1 np=$2
    shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=(-x "$1"); shift; done
    shift
    timeout 300 "${MPIRUN[@]}" -np "$np" "${envs[@]}" "$bin/$@" >"$tmp/out" 2>&1
    local rc=$?
    if [ $rc -eq 0 ] && grep -q " checks, 0 failed" "$tmp/out"; then
        pass "$name ($(grep " checks, " "$tmp/out" | tail -n 1))"
    else
        fail "$name (exit $rc)"
    fi
}

# Each algorithm for every bucket, then the alpha-beta model's choice.
for np in 1 2 3 4; do
    for algo in ring doubling; do
        run "allreduce ($algo), $np ranks" $np PX_ALLREDUCE=$algo -- mpi_allreduce
    done
    run "allreduce (auto), $np ranks" $np -- mpi_allreduce
done
run "allreduce without the communication thread, 3 ranks" 3 PX_COMM_NO_THREAD=1 -- mpi_allreduce
run "allreduce (doubling) without the communication thread, 3 ranks" 3 PX_COMM_NO_THREAD=1 \
    PX_ALLREDUCE=doubling -- mpi_allreduce
for np in 1 2 3 4; do run "parameter server, $np ranks" $np -- mpi_ps; done
# The relaxed modes: 16-bit wire, error feedback, local SGD, staleness.
for np in 1 2 3 4; do run "relaxed modes (ring), $np ranks" $np PX_ALLREDUCE=ring -- mpi_relaxed; done
run "relaxed modes (doubling), 3 ranks" 3 PX_ALLREDUCE=doubling -- mpi_relaxed
# Pushed row sets larger than the receives a shard posts ahead: all of them
# (0 MiB) or the rows past the first few follow in a second pair of messages.
run "parameter server, 3 ranks, no receives posted ahead" 3 PX_PUSH_INBOX_MB=0 -- mpi_ps
run "parameter server, 4 ranks, small receives posted ahead" 4 PX_PUSH_INBOX_MB=0.00005 -- mpi_ps

# mpi_train OPTIMIZER PARTITIONS RANKS_PER_NODE LOCAL_AGG STEPS
for np in 1 2 4; do run "train sgd, one node, $np ranks" $np -- mpi_train sgd 3 0 1 6; done
run "train adam, 2 virtual nodes, aggregation on" 4 -- mpi_train adam 3 2 1 6
run "train adam, 2 virtual nodes, small receives posted ahead" 4 PX_PUSH_INBOX_MB=0.00005 \
    -- mpi_train adam 3 2 1 6
run "train adam, 2 virtual nodes, aggregation off" 4 -- mpi_train adam 3 2 0 6
run "train adagrad, 3 nodes, 7 partitions, no aggregation" 3 -- mpi_train adagrad 7 1 0 6
run "train momentum, automatic partitions, 4 shards" 4 -- mpi_train momentum 0 1 1 16
# Automatic partitions are set up at one per shard and stay there.
if grep -q "^auto partitions: P=4 on 4 shards (one per shard.*); no rows move" "$tmp/out"; then
    pass "automatic partitions: one per shard, no rows moved"
else
    fail "automatic partitions: no 'auto partitions: P=4 on 4 shards (one per shard' line"
fi
run "train momentum, partitions searched, 4 shards" 4 -- mpi_train momentum search 1 1 16
# The search starts at one partition per shard (every table on every shard).
if grep -Eq "^auto partitions: P=4 .*chose (the fastest measured: )?P=[0-9]+" "$tmp/out"; then
    pass "partition search: $(grep "^auto partitions" "$tmp/out" | sed 's/.*chose/chose/')"
else
    fail "partition search: no 'auto partitions: ... chose P=' line from rank 0"
fi
run "train sgd without the communication thread" 2 PX_COMM_NO_THREAD=1 -- mpi_train sgd 3 1 1 6

# fault NAME NP MODE REGEX...: the job must fail within 30 s and its
# output match every REGEX (extended grep), and no line match a !REGEX.
fault() {
    local name=$1 np=$2 mode=$3
    shift 3
    local t0=$SECONDS
    timeout 120 "${MPIRUN[@]}" -np "$np" "$bin/mpi_fault" "$mode" >"$tmp/out" 2>&1
    local rc=$? dt=$((SECONDS - t0))
    if [ $rc -eq 0 ]; then fail "$name: the job exited 0"; return; fi
    if [ $dt -ge 30 ]; then fail "$name: the job took $dt s to end"; return; fi
    for re in "$@"; do
        if [ "${re:0:1}" = "!" ]; then
            if grep -Eq "${re:1}" "$tmp/out"; then fail "$name: a line matches /${re:1}/"; return; fi
        elif ! grep -Eq "$re" "$tmp/out"; then
            fail "$name: no line matches /$re/"
            return
        fi
    done
    pass "$name (ended in $dt s, exit $rc)"
}
names_rank1='error \(rank 1\): no progress|no progress for [0-9]+ s in step 2 \(waiting for .* from rank 1\)'
fault "stalled rank in an allreduce: watchdog" 2 stall "no progress for [0-9]+ s in step 2" "$names_rank1"
fault "stalled rank before a pull: watchdog" 3 stall_pull "no progress for [0-9]+ s in step 2" "$names_rank1"
# A rank that ended its run is named as such, not as stopped; one that
# stopped (SIGSTOP) still is.
fault "a rank that finished while another waits: named as finished" 2 finished \
    "error \(rank 0\): rank 1 ended its run while the others still wait for it" \
    "no progress for [0-9]+ s in step 2" "!does not answer"
fault "a stopped rank: named as one that does not answer" 2 stopped \
    "error \(rank 0\): rank 1 stopped first: it does not answer" "!ended its run"
fault "killed rank" 3 kill "rank 1 .*(signal 9|Killed)"
fault "index out of range" 3 bad_index \
    "error \(rank 1\): ps_pull of variable 'E': index 99 at position 2 is out of range \[0, 10\)"
timeout 120 "${MPIRUN[@]}" -np 2 "$bin/mpi_fault" none >"$tmp/out" 2>&1
if [ $? -eq 0 ] && grep -q "rank 0 was not stopped" "$tmp/out"; then
    pass "the fault program runs to the end when nothing fails"
else
    fail "the fault program fails without a fault"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
