#!/bin/bash
# Usage: train_errors.sh PARALLAXC SRCDIR
#
# The errors a PyTorch user meets first name their fix:
#   - a model whose forward returns logits: the forward must return the
#     loss (how), or parallax.export's loss_fn, or --loss;
#   - a fixed-batch export compiled with another --batch: dynamic_axes;
#   - an eval-mode export (Dropout left out by torch.onnx.export): a note
#     that the program would train without Dropout, and how to export; none
#     for a training-mode export with Dropout;
#   - -o naming a folder, or a file in a missing folder: refused before
#     anything is compiled;
#   - a --no-decay pattern that matches no variable: the variables listed.
# And under mpirun a bad --data prints one error line (not one per rank, no
# MPI_ABORT banner) and the job exits with status 1.
. "$(dirname "$0")/lib.sh" "$@"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

"$py" - "$tmp" >"$tmp/make.log" 2>&1 <<'PY' || { cat "$tmp/make.log"; exit 1; }
import sys
import numpy as np
for _a, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, _a):
        setattr(np, _a, _t)
import torch
from torch import nn

out = sys.argv[1]
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 3))


class WithLoss(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.net(x), y)


x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
dyn = {"x": {0: "batch"}, "y": {0: "batch"}}
train = dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
torch.onnx.export(net, (x,), out + "/logits.onnx", input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17,
                  **train)
torch.onnx.export(WithLoss(net), (x, y), out + "/fixed.onnx", input_names=["x", "y"],
                  output_names=["loss"], opset_version=17, **train)
torch.onnx.export(WithLoss(net).eval(), (x, y), out + "/eval.onnx", input_names=["x", "y"],
                  output_names=["loss"], dynamic_axes=dyn, opset_version=17)
torch.onnx.export(WithLoss(net).train(), (x, y), out + "/train.onnx", input_names=["x", "y"],
                  output_names=["loss"], dynamic_axes=dyn, opset_version=17, **train)
np.save(out + "/x.npy", np.random.default_rng(0).standard_normal((32, 4)).astype(np.float32))
np.save(out + "/y.npy", np.random.default_rng(1).integers(0, 3, 32))
PY

# expect LABEL STATUS PATTERN COMMAND...: the exit status, and PATTERN (a
# grep -E regular expression) on a line of the output, or across lines
# (newlines read as spaces).
expect() {
    local label=$1 want=$2 pattern=$3
    shift 3
    "$@" >"$tmp/out" 2>&1
    local rc=$?
    if [ $rc -eq "$want" ] && { grep -Eq -- "$pattern" "$tmp/out" ||
        tr '\n' ' ' <"$tmp/out" | grep -Eq -- "$pattern"; }; then
        pass "$label"
    else
        fail "$label: exit $rc (expected $want): $(head -c 900 "$tmp/out")"
    fi
}

expect "logits model: the forward must return the loss" 1 \
    "no float scalar output to use as loss \(its outputs: 'logits' float\[8,3\]\).*forward returns the loss, e.g. forward\(self, x, y\): return F.cross_entropy\(self.net\(x\), y\).*parallax.export\(.*loss_fn=" \
    "$parallaxc" compile "$tmp/logits.onnx" -o "$tmp/p" --batch 8
expect "fixed-batch export: dynamic_axes" 1 \
    "fixed batch of 8: export it with a dynamic batch, torch.onnx.export\(\.\.\., dynamic_axes=\{'x': \{0: 'batch'\}" \
    "$parallaxc" compile "$tmp/fixed.onnx" -o "$tmp/p" --batch 16
expect "eval-mode export: a note that Dropout is gone" 0 \
    "^note: this PyTorch export has no Dropout node.*trains without it; export with torch.onnx.export\(\.\.\., training=torch.onnx.TrainingMode.TRAINING" \
    "$parallaxc" compile "$tmp/eval.onnx" -o "$tmp/p_eval" --batch 8
if "$parallaxc" compile "$tmp/train.onnx" -o "$tmp/p_train" --batch 8 >"$tmp/out" 2>&1 &&
    ! grep -q "Dropout" "$tmp/out"; then
    pass "training-mode export with Dropout: no note"
else
    fail "training-mode export: $(head -c 600 "$tmp/out")"
fi
mkdir -p "$tmp/outdir"
expect "-o naming a folder: refused before compiling" 1 \
    "^error: -o $tmp/outdir/ is a folder: name the program to write, e.g. -o $tmp/outdir/train$" \
    "$parallaxc" compile "$tmp/train.onnx" -o "$tmp/outdir/" --batch 8
expect "-o in a missing folder" 1 "^error: -o $tmp/nope/p: folder '$tmp/nope' does not exist$" \
    "$parallaxc" compile "$tmp/train.onnx" -o "$tmp/nope/p" --batch 8
expect "--no-decay matching nothing" 1 \
    "--no-decay: '\*\.bais' matches no trained variable \(they are: net.0.weight, net.0.bias, net.3.weight, net.3.bias\)" \
    "$parallaxc" compile "$tmp/train.onnx" -o "$tmp/p" --batch 8 --weight-decay 0.1 --no-decay '*.bais'

mkdir -p "$tmp/data"
cp "$tmp/x.npy" "$tmp/y.npy" "$tmp/data/"
mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/p_train" --data "$tmp/missing" --steps 2 \
    >"$tmp/mpi.out" 2>&1
rc=$?
n_err=$(grep -c "error" "$tmp/mpi.out")
if [ $rc -eq 1 ] && [ "$n_err" -eq 1 ] &&
    grep -q "^error: no data for input 'x': expected $tmp/missing/x.npy (or .pb)$" "$tmp/mpi.out" &&
    ! grep -q "MPI_ABORT" "$tmp/mpi.out"; then
    pass "mpirun -np 2 with a bad --data: one error line, exit status 1"
else
    fail "mpirun with a bad --data: exit $rc, $n_err error lines: $(cat "$tmp/mpi.out")"
fi
check "the same program trains with good data" mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$tmp/p_train" --data "$tmp/data" --steps 2 --log-every 0

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
