#!/bin/bash
# Usage: bench/ranks_disagree/run.sh PARALLAXC [REPEATS]
#
# How long ranks given different flags take to stop, measured from the
# return of MPI_Init to the process's exit (MPI's own start-up, over a
# second under mpirun here, is left out), through an LD_PRELOAD shim
# (init_to_exit.c) on MPI's profiling interface; the program is not
# changed. Each case runs `mpirun -np 1 A : -np 1 B` REPEATS times (default
# 5), 1 thread per rank, and prints the median and the worst of the slower
# rank's MPI_Init-to-exit time, MPI_Finalize's share of it, and the median
# wall time of the whole mpirun. Peers in the same run: the same program
# with agreeing flags and --help (the same path: parse, compare, finalize,
# without a mismatch), and bare_exit.c, an MPI program that only starts and
# finalizes, exiting 0 and 2 (Open MPI's own cost of a job that exits
# non-zero).
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 PARALLAXC [REPEATS]" >&2
    exit 2
fi
parallaxc=$(readlink -f "$1")
repeats=${2:-5}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -shared -fPIC -O2 -o "$tmp/init_to_exit.so" "$src/bench/ranks_disagree/init_to_exit.c"
mpicc -O2 -o "$tmp/bare_exit" "$src/bench/ranks_disagree/bare_exit.c"
"$parallaxc" compile "$src/examples/mlp/model.onnx" -o "$tmp/p" --batch 8 >/dev/null
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
data=$src/examples/mlp/data
mkdir -p "$tmp/t"
mpirun=(mpirun --allow-run-as-root --oversubscribe)
# each app context of `mpirun A : B` takes its own -x
envs=(-x LD_PRELOAD="$tmp/init_to_exit.so" -x INIT_TO_EXIT_DIR="$tmp/t" -x OMP_NUM_THREADS
    -x OPENBLAS_NUM_THREADS)

# bench_case NAME WANT_STATUS A... -- B...: A and B, each a program and its
# arguments, are the two ranks.
bench_case() {
    local name=$1 want=$2
    shift 2
    local a=() b=()
    while [ "$1" != "--" ]; do a+=("$1"); shift; done
    shift
    b=("$@")
    : >"$tmp/times"
    for _ in $(seq "$repeats"); do
        local t0 t1 rc
        rm -f "$tmp"/t/*
        t0=$(date +%s.%N)
        set +e
        "${mpirun[@]}" -np 1 "${envs[@]}" "${a[@]}" : -np 1 "${envs[@]}" "${b[@]}" >"$tmp/out" 2>&1
        rc=$?
        set -e
        t1=$(date +%s.%N)
        if [ $rc -ne "$want" ]; then
            echo "$name: status $rc, expected $want:" >&2
            head -n 5 "$tmp/out" >&2
            exit 1
        fi
        # the slower rank's init-to-exit and its finalize share, the wall
        # time, and whether a rank was ended by mpirun before its exit (once
        # one rank exits non-zero, mpirun ends the job: no report of the other)
        awk -v wall="$(echo "$t1 - $t0" | bc)" '$1 == "init_to_exit" {
                if ($3 > worst) { worst = $3; fin = $4 } n++ }
            END { if (n < 1) exit 1; printf "%.4f %.4f %.4f %d\n", worst, fin, wall, 2 - n }' \
            "$tmp"/t/* >>"$tmp/times" 2>/dev/null || {
            echo "$name: the shim reported no rank" >&2
            exit 1
        }
    done
    # column COL's sorted values, line K
    nth() { cut -d' ' -f"$1" "$tmp/times" | sort -n | sed -n "$2p"; }
    local m=$(((repeats + 1) / 2))
    local ended
    ended=$(awk '{ n += $4 } END { print n + 0 }' "$tmp/times")
    printf "%-34s MPI_Init->exit median %.3f s, worst %.3f s (MPI_Finalize median %.3f s); mpirun wall median %.3f s%s\n" \
        "$name" "$(nth 1 "$m")" "$(nth 1 "$repeats")" "$(nth 2 "$m")" "$(nth 3 "$m")" \
        "$([ "$ended" = 0 ] || echo "; $ended rank(s) ended by mpirun before their exit")"
}

p=("$tmp/p" --data "$data" --threads 1)
bench_case "bare MPI program, exit 0 (peer)" 0 "$tmp/bare_exit" 0 -- "$tmp/bare_exit" 0
bench_case "bare MPI program, exit 2 (peer)" 2 "$tmp/bare_exit" 2 -- "$tmp/bare_exit" 2
bench_case "agreeing flags, --help (peer)" 0 "${p[@]}" --help -- "${p[@]}" --help
bench_case "different --lr" 2 "${p[@]}" --lr 0.1 -- "${p[@]}" --lr 0.2
bench_case "different --steps" 2 "${p[@]}" --steps 3 -- "${p[@]}" --steps 4
bench_case "--resume on one rank only" 2 "${p[@]}" --steps 3 -- "${p[@]}" --steps 3 --resume "$tmp/none"
bench_case "one rank refuses its command line" 2 "${p[@]}" --steps 3 -- "${p[@]}" --steps x
