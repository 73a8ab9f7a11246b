#!/bin/bash
# Usage: bench/big_graph_compile.sh BUILD_DIR [RUNS] [N]
#
# How long `parallaxc compile` and `parallaxc inspect` take on a model of
# N (default 100,000) initializers: tests/faults' chain of N Adds, each with
# its own float[4] initializer, ending in a ReduceSum loss (trained, SGD,
# --batch 4). The peer, in the same run: the same chain at N/4, which a
# compiler linear in the model's size does in a quarter of the time, so the
# ratio (about 4 when linear, 16 when quadratic) tells a slow machine from
# a superlinear pass. Each figure is the median of RUNS (default 3) runs:
# wall seconds and CPU seconds (user + system of parallaxc and the linker it
# starts: the honest figure on a loaded machine), with the load average
# before and after. parallaxc is single-threaded.
set -u
build=$(realpath "$1")
runs=${2:-3}
n=${3:-100000}
parallaxc=$build/compiler/parallaxc
gen=$build/tests/faults/px_gen_chain
[ -x "$parallaxc" ] && [ -x "$gen" ] || {
    echo "need $parallaxc and $gen (build the project first)" >&2
    exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small=$((n / 4))
"$gen" "$small" "$work/small.onnx" add && "$gen" "$n" "$work/big.onnx" add || exit 1

median() { # COLUMN_EXPR: the median over the runs in $work/times of an awk expression
    awk "{ print $1 }" "$work/times" | sort -g | awk '{ v[n++] = $1 } END { print v[int((n - 1) / 2)] }'
}
# measure LABEL COMMAND...: the median wall and CPU seconds of $runs runs,
# printed and kept in $work/LABEL.median ("wall cpu")
measure() {
    local label=$1 i
    shift
    : >"$work/times"
    for ((i = 0; i < runs; i++)); do
        /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" >"$work/out" 2>&1 || {
            echo "$label failed: $(tail -c 400 "$work/out")" >&2
            exit 1
        }
        tail -n 1 "$work/t" >>"$work/times"
    done
    local wall cpu user sys
    wall=$(median '$1') cpu=$(median '$2 + $3') user=$(median '$2') sys=$(median '$3')
    printf "%-16s wall %6.2f s  cpu %6.2f s (user %.2f, sys %.2f)\n" "$label" "$wall" "$cpu" "$user" "$sys"
    echo "$wall $cpu" >"$work/$label.median"
}
ratio() { # A B: cpu(A) / cpu(B)
    awk 'NR == FNR { a = $2; next } { printf "%.2f", a / ($2 > 0 ? $2 : 1e-9) }' \
        "$work/$1.median" "$work/$2.median"
}

echo "chain of Adds, one float[4] initializer each; median of $runs runs; $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
flags=(--batch 4 --lr 0.01)
measure "compile $small" "$parallaxc" compile "$work/small.onnx" -o "$work/small.prog" "${flags[@]}"
measure "compile $n" "$parallaxc" compile "$work/big.onnx" -o "$work/big.prog" "${flags[@]}"
measure "inspect $small" "$parallaxc" inspect "$work/small.onnx" --stage parallel "${flags[@]}"
measure "inspect $n" "$parallaxc" inspect "$work/big.onnx" --stage parallel "${flags[@]}"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo "CPU ratio $n / $small: compile $(ratio "compile $n" "compile $small"), inspect $(ratio "inspect $n" "inspect $small") (linear: 4)"
