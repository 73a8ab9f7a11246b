#!/bin/bash
# Usage: train_bytes.sh PARALLAXC SRCDIR
# Bytes counted by a running job (--stats) against `inspect`'s prediction for
# the same model, batch and 2 ranks:
#   - dense-only models (mlp, cnn): every rank's sent + received bytes per
#     step equal predicted_bytes_per_step exactly (ring AllReduce + the loss
#     average), in every --comm mode;
#   - the recommender (hybrid): the AllReduce + other bytes equal the dense
#     part of the prediction exactly, and the parameter-server bytes are
#     positive and stay under the prediction's upper bound (which assumes
#     every lookup is a distinct row). (The exact PS byte formula is checked
#     in tests/mpi/mpi_ps.c.)
#   - every rank reports communication time and comm_hidden_fraction in
#     [0, 1], exactly 0 in ps mode with --no-overlap (pulls and pushes block
#     the step); the overlapped pulls (the default) move the same bytes;
#   - every rank reports its CPU time per step, the communication thread's
#     part of it in [0, process], above 0 where an AllReduce runs there.
. "$(dirname "$0")/lib.sh" "$@"
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe -np 2)
for case in "mlp hybrid" "mlp ps" "mlp ps --no-overlap" "cnn allreduce" "recommender hybrid"; do
    read -r ex comm run_flags <<<"$case"
    model=$src/examples/$ex/model.onnx
    if ! "$parallaxc" inspect "$model" --batch 4 --ranks 2 --stage parallel --comm "$comm" \
        --format json -o "$tmp/p.json" 2>"$tmp/err" ||
        ! "$parallaxc" compile "$model" -o "$tmp/prog" --batch 4 --comm "$comm" 2>>"$tmp/err" ||
        ! timeout 120 "${mpirun_cmd[@]}" "$tmp/prog" --data "$src/examples/$ex/data" --steps 12 \
            --log-every 0 --stats "$tmp/s.json" ${run_flags:-} >"$tmp/run" 2>&1; then
        echo "FAIL $ex $comm: $(cat "$tmp/err" "$tmp/run" | head -c 600)"
        failed=$((failed + 1))
        continue
    fi
    if "$py" - "$tmp/p.json" "$tmp/s.json" "$comm" "$src/examples/$ex/data" "${run_flags:-}" <<'PY'; then
import json, sys
import numpy as np
plan, stats, comm, data = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
blocking = "--no-overlap" in sys.argv[5]
pred = plan["predicted_bytes_per_step"][comm]
sparse = [v for v in plan["variables"] if v["class"] == "sparse" and v["sync"] == "ps"]
bad = []
for r in stats["ranks"]:
    # Overlap: a fraction of the communication time; none in ps mode without
    # the prefetched pulls, where every pull and push blocks the step.
    h = r.get("comm_hidden_fraction", "missing")
    if h is None or h == "missing" or not 0 <= h <= 1 or (comm == "ps" and blocking and h != 0):
        bad.append("rank %d: comm_hidden_fraction %r" % (r["rank"], h))
    if not r.get("comm_seconds_per_step", 0) > 0:
        bad.append("rank %d: comm_seconds_per_step %r" % (r["rank"], r.get("comm_seconds_per_step")))
    # CPU time per step: the process's, and the communication thread's within
    # it (the AllReduce runs there: more than nothing when there is one).
    cpu = r.get("cpu_seconds_per_step", {})
    proc, thr = cpu.get("process", -1), cpu.get("comm_thread", -1)
    if not (proc > 0 and 0 <= thr <= proc + 1e-4) or (comm != "ps" and not thr > 0):
        bad.append("rank %d: cpu_seconds_per_step %r" % (r["rank"], cpu))
    s, rv = r["bytes_sent_per_step"], r["bytes_received_per_step"]
    dense = s["allreduce"] + rv["allreduce"] + s["other"] + rv["other"]
    ps = s["ps_pull"] + rv["ps_pull"] + s["ps_push"] + rv["ps_push"]
    if not sparse:
        if abs(dense + ps - pred) > 0.5:
            bad.append("rank %d: measured %.1f bytes/step, predicted %d" % (r["rank"], dense + ps, pred))
        continue
    # The prediction's dense part: everything but the PS variables' share.
    dense_pred = sum(4 * 0.5 * v["bytes"] for v in plan["variables"]
                     if v["sync"] == "allreduce") + 16
    if abs(dense - dense_pred) > 0.5:
        bad.append("rank %d: allreduce+other %.1f, predicted %.1f" % (r["rank"], dense, dense_pred))
    if ps > pred - dense_pred + 0.5:
        bad.append("rank %d: PS bytes %.1f above the bound %.1f" % (r["rank"], ps, pred - dense_pred))
    if ps <= 0:
        bad.append("rank %d: no PS traffic" % r["rank"])
print("per rank and step: " + ", ".join(
    "rank %d %.0f bytes" % (r["rank"], sum(r["bytes_sent_per_step"].values()) +
                             sum(r["bytes_received_per_step"].values())) for r in stats["ranks"]) +
      " (predicted %d)" % pred)
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY
        echo "PASS $ex $comm ${run_flags:-}"
        passed=$((passed + 1))
    else
        echo "FAIL $ex $comm ${run_flags:-}"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
