#!/bin/bash
# Usage: pipeline_schedule.sh PARALLAXC SRCDIR
#
# The 1F1B schedule of a --pp program (docs/parallelism.md), from the order
# of its step's calls (inspect --stage parallel --graph), with no timing:
# tests/tools/pp_schedule.py checks that every stage s runs S-s-1 warm-up
# forwards, then alternates one forward and one backward, then drains, and
# replays the order with each matrix product taking its FLOPs and each
# receive waiting for its send. On MLPs of two equal layers a stage
# (between a tiny input layer and a 10-wide head: the stages' training
# FLOPs within 1%), every stage's replayed idle is within 2 points of the
# bubble (S-1)/(M+S-1): a receive placed before work the stage could do
# first, or a cut that leaves one stage less training work than the
# others, shows up as idle. So on an MLP 784, 256 x 5, 10 at --pp 2: its
# first layer (784 x 256, no input gradient) makes 2 products of 401408
# FLOPs a sample where the 256 x 256 layers make 3 of 131072; the cut by
# training FLOPs gives stage 0 the first two layers (50% of the training
# FLOPs), where one by forward FLOPs gave it the first alone (34%).
. "$(dirname "$0")/lib.sh" "$@"
schedule() { # STAGES MICRO_BATCHES WIDTHS
    local id=$1-$2
    "$py" "$src/tests/tools/deep_mlp.py" "$tmp/mlp$id.onnx" "$3" ||
        { fail "deep_mlp.py $3: cannot write the MLP"; return; }
    if "$parallaxc" inspect "$tmp/mlp$id.onnx" --batch $((4 * $2)) --pp "$1" --micro-batches "$2" \
        --stage parallel --graph >"$tmp/graph$id.txt" 2>&1; then
        check "MLP $3 at --pp $1 --micro-batches $2: 1F1B order, replayed idle within 2 points of the bubble" \
            "$py" "$src/tests/tools/pp_schedule.py" "$tmp/graph$id.txt" "$1" "$2" --check 2
    else
        fail "inspect $3 --pp $1: $(head -c 600 "$tmp/graph$id.txt")"
    fi
}
for sm in "2 8" "4 16" "3 5"; do
    set -- $sm
    widths=2
    for _ in $(seq $((2 * $1 + 1))); do widths=$widths,512; done
    schedule "$1" "$2" "$widths,10"
done
schedule 2 8 784,256,256,256,256,256,10
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
