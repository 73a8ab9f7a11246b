#!/bin/bash
# Usage: train_tp_memory.sh PARALLAXC SRCDIR
#
# --tp divides the memory of the split weights (docs/parallelism.md, "What
# each rank stores"). A transformer LM (bench/large_lm.py --large: 4 layers,
# d_model 1024, feed-forward 4096, 8 heads, vocabulary 512, weights in
# external data) whose dense weights plus Adam state exceed one rank's
# memory limit trains with --tp 4 on 4 ranks under that limit:
#   - the limit is RLIMIT_DATA (`ulimit -d`): the kernel refuses any brk or
#     private writable mapping past it, so malloc returns NULL and the
#     program stops with its out-of-memory message. RLIMIT_AS (`ulimit -v`)
#     would also count what is only reserved (OpenMPI's shared-memory
#     segments, library text, PROT_NONE malloc arenas: hundreds of MB, that
#     vary with the rank count), and this container has no cgroup of its
#     own to write. The limit is the baseline (the peak VmData of the same
#     program shape on a tiny model, 4 ranks, tests/tools/vm_peak.py) plus
#     the largest memory per rank inspect predicts at --tp 4, plus 25%;
#   - the dense weights plus their Adam state are more than that limit, and
#     the model compiled without --tp on 1 rank stops under it with the
#     out-of-memory message (status 1);
#   - under it, --tp 4 trains: every step's loss within 1e-6 relative of the
#     1-rank run without the limit at the same (global) batch;
#   - each rank's peak RSS (--stats: getrusage) is within 15% of the memory
#     `inspect --ranks 4 --tp 4 --stage parallel` predicts for it, with a
#     checkpoint written at step 2 (rank 0 writes the whole model and its
#     Adam state from blocks its group gathers, no rank a whole copy of a
#     split variable: 816 MiB a rank when each built one), and the
#     breakdown the program reports (--stats) is inspect's;
#   - resumed from that checkpoint (written at the end, step 3) under the
#     limit for a fourth step: the four losses those of 1 rank, and each
#     rank's peak RSS within 15% of inspect's.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MALLOC_ARENA_MAX=2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mib=1048576
steps=3
batch=2
flags=(--batch $batch --optimizer adam --lr 0.0001)
shape=(--layers 4 --heads 8 --vocab 512 --seq 8 --samples 16)
check_memory=("$py" "$src/tests/tools/check_memory.py")

limited() { # KIB RANKS PROGRAM ARGS...: every rank under RLIMIT_DATA = KIB
    local kib=$1 n=$2
    shift 2
    timeout 300 mpirun --oversubscribe -np "$n" bash -c 'ulimit -d "$0" && exec "$@"' "$kib" "$@"
}

step "export the model" "$py" "$src/bench/large_lm.py" transformer "$tmp/big" --embed 1024 \
    --hidden 4096 "${shape[@]}" --large
step "export the tiny model" "$py" "$src/bench/large_lm.py" transformer "$tmp/tiny" --embed 64 \
    --hidden 256 "${shape[@]}" --large
step "compile --tp 4" "$parallaxc" compile "$tmp/big/model.onnx" -o "$tmp/tp4" --tp 4 "${flags[@]}"
step "compile without --tp" "$parallaxc" compile "$tmp/big/model.onnx" -o "$tmp/one" "${flags[@]}"
step "compile the tiny model --tp 4" "$parallaxc" compile "$tmp/tiny/model.onnx" -o "$tmp/tiny4" \
    --tp 4 "${flags[@]}"
inspect_to() { # OUT.json ARGS...: inspect --stage parallel --format json
    local out=$1
    shift
    "$parallaxc" inspect "$@" --stage parallel --format json >"$out"
}
step "inspect --tp 4" inspect_to "$tmp/tp4.json" "$tmp/big/model.onnx" --ranks 4 --tp 4 "${flags[@]}"
step "baseline: the tiny model on 4 ranks" timeout 300 mpirun --oversubscribe -np 4 "$py" \
    "$src/tests/tools/vm_peak.py" --data "$tmp/vm" "$tmp/tiny4" --data "$tmp/tiny/data" --steps $steps \
    --log-every 0

read -r base need4 dense_adam < <("$py" - "$tmp/tp4.json" "$tmp"/vm.* <<'PY'
import json
import sys
from math import prod
plan = json.load(open(sys.argv[1]))
base = max(int(open(p).read()) for p in sys.argv[2:])
need4 = max(r["total"] for r in plan["predicted_memory_per_rank"])
# every dense variable whole (a slab's whole shape), with Adam's two moments
dense = sum(4 * prod(v.get("tp_whole_shape", v["shape"])) for v in plan["variables"]
            if v["class"] == "dense")
print(base, need4, 3 * dense)
PY
)
limit=$((base + need4 + need4 / 4))
echo "baseline $((base / mib)) MiB, --tp 4 predicted $((need4 / mib)) MiB per rank:" \
    "limit $((limit / mib)) MiB; dense weights + Adam state $((dense_adam / mib)) MiB"
if [ "$dense_adam" -gt "$limit" ]; then
    pass "the dense weights and their Adam state exceed the limit"
else
    fail "the limit ($limit) holds the dense weights and their Adam state ($dense_adam)"
fi
kib=$((limit / 1024))

# Without --tp, one rank does not fit under the limit.
limited $kib 1 "$tmp/one" --data "$tmp/big/data" --steps $steps --log-every 0 >"$tmp/one.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "out of memory" "$tmp/one.log"; then
    pass "1 rank without --tp under the limit: $(grep -m1 "out of memory" "$tmp/one.log")"
else
    fail "1 rank without --tp under the limit: status $rc, $(head -c 800 "$tmp/one.log")"
fi

step "--tp 4 on 4 ranks under the limit, a checkpoint at step 2" limited $kib 4 "$tmp/tp4" \
    --data "$tmp/big/data" --steps $steps --log-every 0 --losses "$tmp/tp4.csv" \
    --stats "$tmp/tp4.stats" --checkpoint "$tmp/tp4.ckpt" --checkpoint-every 2
# Resuming reads each split variable block by block, keeping the rank's
# slab (808 MiB a rank when each built a whole copy): under the limit, one
# more step from the checkpoint the run ended with.
step "--tp 4 resumed from its checkpoint under the limit" limited $kib 4 "$tmp/tp4" \
    --data "$tmp/big/data" --steps $((steps + 1)) --log-every 0 --losses "$tmp/tp4r.csv" \
    --stats "$tmp/tp4r.stats" --resume "$tmp/tp4.ckpt"
step "1 rank without the limit" "$tmp/one" --data "$tmp/big/data" --steps $((steps + 1)) \
    --log-every 0 --losses "$tmp/one.csv"
check "--tp 4, then resumed: the losses of 1 rank (1e-6 relative)" "$py" - "$tmp/one.csv" \
    "$tmp/tp4.csv" "$tmp/tp4r.csv" <<'PY'
import sys
def losses(path):
    return [float(line.split(",")[1]) for line in open(path).read().split("\n")[1:] if line]
a, b = losses(sys.argv[1]), losses(sys.argv[2]) + losses(sys.argv[3])
assert len(a) == len(b) > 0, (a, b)
for i, (x, y) in enumerate(zip(a, b)):
    assert abs(x - y) <= 1e-6 * abs(x), "step %d: %r vs %r" % (i + 1, x, y)
print("losses", a)
PY
check "--tp 4 resumed: each rank's peak RSS within 15% of inspect's prediction" \
    "${check_memory[@]}" within "$tmp/tp4.json" "$tmp/tp4r.stats" 15
check "--tp 4: each rank's memory breakdown as inspect predicts" "${check_memory[@]}" compare \
    "$tmp/tp4.json" "$tmp/tp4.stats"
check "--tp 4: each rank's peak RSS within 15% of inspect's prediction" "${check_memory[@]}" \
    within "$tmp/tp4.json" "$tmp/tp4.stats" 15
sed 's/^/     /' "$tmp/log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
