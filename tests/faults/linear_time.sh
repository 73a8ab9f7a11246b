#!/bin/bash
# Usage: linear_time.sh PARALLAXC SRCDIR FAULTS_BIN_DIR
#
# The linear-time cases of the fault catalogue (docs/faults.md): building
# the graph of a model takes time linear in its nodes and initializers.
# Prints ok/FAIL lines, then "N passed, M failed".
if [ $# -ne 3 ]; then
    echo "usage: $0 PARALLAXC SRCDIR FAULTS_BIN_DIR" >&2
    exit 2
fi
fbin=$3
# parallaxc, src, tmp (removed at exit), the counts, pass and fail
. "$(dirname "$0")/../cli/lib.sh" "$1" "$2"
[ -x "$fbin/px_gen_chain" ] || {
    echo "FAIL: $fbin/px_gen_chain is not built"
    echo "0 passed, 1 failed"
    exit 1
}
m=$tmp

# n = 25,000 against 4n in the same run.
# A node chain (Relu: inspect --graph, folded), an initializer chain (one Add
# and one float[4] initializer per node) and one Sum of n initializers
# (inspect --stage parallel: fold, autodiff, optimizer, communication, buffer
# plan and memory model, what compile builds). Each is timed in CPU seconds,
# the best of 2 runs at n and 1 at 4n: linear work gives a ratio near 4,
# quadratic near 16; the bound is 5. A loaded machine slows both sizes
# alike, but not always: a ratio over the bound is measured once more.
TIMEFORMAT="%U %S"
inspect_cpu() { # MODEL RUNS ARGS...: the least CPU seconds of RUNS inspects
    local model=$1 runs=$2 t i times=
    shift 2
    for ((i = 0; i < runs; i++)); do
        t=$({ time "$parallaxc" inspect "$model" --batch 8 "$@" >"$tmp/chain.out" 2>&1; } 2>&1) ||
            return 1
        times+="$t"$'\n'
    done
    awk 'NF { c = $1 + $2; if (!n++ || c < best) best = c } END { printf "%.3f", best }' <<<"$times"
}
linear() { # KIND LAST_LINE ARGS...: inspect of gen_chain 25000 and 100000 KIND
    local kind=$1 last=$2 small big rc tries
    shift 2
    "$fbin/px_gen_chain" 25000 "$m/$kind.n.onnx" "$kind" &&
        "$fbin/px_gen_chain" 100000 "$m/$kind.4n.onnx" "$kind" || {
        fail "linear time ($kind): the models were not generated"
        return
    }
    for tries in 1 2; do
        small=$(inspect_cpu "$m/$kind.n.onnx" 2 "$@") && big=$(inspect_cpu "$m/$kind.4n.onnx" 1 "$@")
        rc=$?
        [ $rc -eq 0 ] && awk -v s="$small" -v b="$big" 'BEGIN { exit !(b <= 5 * (s > 0.02 ? s : 0.02)) }' &&
            break
    done
    if [ $rc -eq 0 ] && grep -q -- "$last" "$tmp/chain.out" &&
        awk -v s="$small" -v b="$big" 'BEGIN { exit !(b <= 5 * (s > 0.02 ? s : 0.02)) }'; then
        pass "linear time ($kind): inspect $* of 100000 in $big s of CPU, 25000 in $small s"
    else
        fail "linear time ($kind): status $rc, $big s of CPU for 100000 against $small s for 25000: $(tail -c 300 "$tmp/chain.out")"
    fi
    rm -f "$m/$kind.n.onnx" "$m/$kind.4n.onnx"
}
linear relu '%v100000 = Relu(%v99999)' --graph
linear add 'memory per rank' --stage parallel
linear sum 'memory per rank' --stage parallel

echo "$passed passed, $failed failed"
[ $passed -gt 0 ] && [ $failed -eq 0 ]
