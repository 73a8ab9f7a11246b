#!/bin/bash
# Usage: pipeline_send_progress.sh PARALLAXC SRCDIR
#
# A pipeline send larger than MPI's eager limit moves only inside an MPI
# call of its sender unless the receiver can pull it alone, and the stage
# that posted it goes on computing its next pass (docs/parallelism.md, "The
# schedule"). The communication thread drives the pending sends; this
# checks it by logic, from the --trace of a --pp 2 run where Open MPI's
# single-copy pull is off (so that every 32 KiB transfer needs its
# sender): tests/tools/pp_trace_waits.py lays both ranks on the host's
# clock, matches each send with its receive and with the moment its sender
# saw it complete ("pipeline send done"), and counts the sends whose sender
# computed 1 ms or more after both sides were posted that completed before
# the sender's next MPI call. With the communication thread nearly all do
# on an idle host (more than a quarter are required: on a loaded one the
# thread may wait a scheduler tick or more to run, and half were late in
# one such run); without it (PX_COMM_NO_THREAD=1) none can (at most 1 in
# 10 is allowed), which shows what the check catches. The numbers are the
# same either way.
. "$(dirname "$0")/lib.sh" "$@"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# 2 x 1024, four 1024 x 1024 layers, 1024 x 10: two equal stages, each
# micro-batch (8 rows) a 32 KiB activation and gradient, about 3 ms of work
# a stage between its pipeline calls
step "the MLP" "$py" "$src/tests/tools/deep_mlp.py" "$tmp/mlp.onnx" 2,1024,1024,1024,1024,1024,10
"$py" - "$tmp/data" <<'PY'
import os, sys
import numpy as np
os.makedirs(sys.argv[1])
rng = np.random.RandomState(0)
np.save(sys.argv[1] + "/x.npy", rng.rand(128, 2).astype(np.float32))
np.save(sys.argv[1] + "/y.npy", rng.randint(0, 10, size=128).astype(np.int64))
PY
step "compile --pp 2 --micro-batches 4" "$parallaxc" compile "$tmp/mlp.onnx" -o "$tmp/train" \
    --batch 32 --pp 2 --micro-batches 4 --optimizer momentum --lr 0.01
# --stall-timeout 0: no watchdog thread, whose MPI calls every 100 ms would
# move some sends too
run() { # NAME [ENV...]: 12 steps with --trace
    env "${@:2}" timeout 300 mpirun -np 2 "$tmp/train" --data "$tmp/data" --steps 12 --stall-timeout 0 \
        --log-every 0 --losses "$tmp/$1.csv" --trace "$tmp/$1.json" >"$tmp/$1.log" 2>&1
}
if run driven; then
    check "the communication thread moves a pending send while its stage computes" \
        "$py" "$src/tests/tools/pp_trace_waits.py" "$tmp/driven.json" 4 --check-progress 0.25 20
else
    fail "--pp 2 with --trace: $(tail -c 600 "$tmp/driven.log")"
fi
if run alone PX_COMM_NO_THREAD=1; then
    check "without it, such sends wait for the sender's next MPI call" \
        "$py" "$src/tests/tools/pp_trace_waits.py" "$tmp/alone.json" 4 --check-no-progress 0.1 20
    check "the losses are the same with and without it, bit for bit" cmp "$tmp/driven.csv" "$tmp/alone.csv"
else
    fail "--pp 2 with PX_COMM_NO_THREAD=1: $(tail -c 600 "$tmp/alone.log")"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
