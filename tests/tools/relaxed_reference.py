#!/usr/bin/python3
"""An independent PyTorch simulation of N data-parallel ranks under the
relaxed synchronization modes (docs/relaxed_sync.md), and the checker that
compares a program's run with it.

  relaxed_reference.py run EXAMPLE_DIR --ranks N --batch b --steps S --lr F
        --out PREFIX [--wire fp32|bf16|fp16] [--wire-error-feedback]
        [--sync-every K] [--local-sgd-after S] [--staleness S]
        [--sparse NAMES | --parallaxc PATH]
  relaxed_reference.py runs JOBS.txt   (one `run` argument list per line, one
                                        interpreter start for all)
  relaxed_reference.py check LOSSES.csv SAVED.onnx --sim PREFIX --exact PREFIX
        [--factor 0.1] [--label TEXT]

run: N model replicas (the example's PyTorch module, its initializers loaded
from model.onnx as tests/tools/train_reference.py does), per-rank batch b,
plain SGD, float32, in the program's data order (step s takes the global
batch of N*b samples at (s*N*b) mod (floor(len/(N*b))*N*b); rank r its rows
[r*b, (r+1)*b)). Each step every rank computes the gradient of its own mean
loss on its own replica; the logged loss is the ranks' mean. Then:

- dense (AllReduce) variables, exact step: the ranks' gradients summed and
  divided by N; with a 16-bit --wire the sum is the one of recursive
  doubling (N a power of two): every round each rank rounds its vector to
  the format (torch's bfloat16 / float16: nearest, ties to even) and adds
  its partner's rounded vector; the sum is rounded once more. With
  --wire-error-feedback each rank first adds the residual it kept, rounds,
  and keeps what the rounding dropped.
- --sync-every K --local-sgd-after S: steps 1..S are exact; from step S+1
  each rank applies its own gradient to its own replica; after every step t
  with (t - S) mod K = 0, and at the end, every replica is replaced by the
  replicas' mean.
- sparse (parameter-server) variables: one master table, updated by the
  mean of the ranks' row gradients. A rank reads its rows from the master,
  or with --staleness S from what it kept: a row it read from the master in
  step t' is read again from its copy in steps t' + 1 .. t' + S, then
  pulled again (the copy kept with the new step).

The simulation rounds only the AllReduce buckets: --wire with sparse
variables (whose rows would travel rounded) is refused. Writes PREFIX.json
({"losses": [...]}) and PREFIX.npz (final weights by ONNX initializer).

check: the program's run (LOSSES.csv, SAVED.onnx) must be much closer to
the relaxed simulation --sim than the exact simulation --exact is:
  max_step |loss_prog - loss_sim|  <= factor * max_step |loss_exact - loss_sim|
  max_var  max|w_prog - w_sim|     <= factor * max_var max|w_exact - w_sim|
and the relaxed mode must change something (both right-hand sides > 0).
Prints "loss_ratio weight_ratio" and exits 1 on failure.

Run with /usr/bin/python3 (Debian's torch and onnx).
"""

import argparse
import copy
import json
import os
import shlex
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_reference as tr  # noqa: E402  (also restores NumPy's aliases for onnx)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402


def wire_dtype(name):
    import torch
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def rounded(x, dtype):
    return x if dtype is None else x.to(dtype).to(x.dtype)


def doubling_sum(vectors, dtype):
    """The sum recursive doubling leaves on every rank (N a power of two)."""
    n = len(vectors)
    vals = list(vectors)
    bit = 1
    while bit < n:
        vals = [rounded(v, dtype) for v in vals]
        vals = [vals[r] + vals[r ^ bit] for r in range(n)]
        bit <<= 1
    return rounded(vals[0], dtype)


def embedding_indices(model, batch):
    """{embedding module: the indices its forward reads} for this batch."""
    import torch
    seen = {}
    hooks = [m.register_forward_pre_hook(lambda mod, inp: seen.setdefault(mod, []).append(inp[0]))
             for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    with torch.no_grad():
        model(*batch)
    for h in hooks:
        h.remove()
    return seen


def cmd_run(args):
    import torch
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    n = args.ranks
    wire = wire_dtype(args.wire)
    if wire is not None and n & (n - 1):
        raise SystemExit("--wire %s: the simulation follows recursive doubling, --ranks must be a "
                         "power of two" % args.wire)
    if args.wire_error_feedback and wire is None:
        raise SystemExit("--wire-error-feedback needs --wire bf16 or fp16")
    mod = tr.load_export_module(args.example)
    torch.manual_seed(0)
    model = tr.model_class(mod)()
    model.train()
    bound = tr.bind_initializers(model, os.path.join(args.example, "model.onnx"))
    args.batch_global = n * args.batch
    args.batch, per_rank = args.batch_global, args.batch  # sparse_names asks inspect at N*b
    sparse = set(tr.sparse_names(args))
    args.batch = per_rank
    if sparse and wire is not None:
        raise SystemExit("--wire %s with sparse variables (%s): their rows would travel rounded, "
                         "which this simulation does not model" % (args.wire, ", ".join(sorted(sparse))))
    names = {id(p): pname for pname, p in model.named_parameters()}
    sparse_pnames = set()
    for name in sparse:
        sparse_pnames.add(names[id(bound[name].params[0])])
    replicas = [copy.deepcopy(model) for _ in range(n)]
    params = [dict(m.named_parameters()) for m in replicas]
    dense_pnames = [p for p in params[0] if p not in sparse_pnames]
    master = {p: params[0][p].detach().clone() for p in sparse_pnames}
    kept = [{p: {} for p in sparse_pnames} for _ in range(n)]  # rank -> table -> row -> (step, value)
    residual = [{p: torch.zeros_like(params[0][p]) for p in dense_pnames} for _ in range(n)]
    module_param = [{m: names_of(rep, m) for m in rep.modules() if isinstance(m, torch.nn.Embedding)}
                    for rep in replicas]

    arrays = tr.input_arrays(args.example)
    total = arrays[0][1].shape[0]
    B = args.batch_global
    if B > total:
        raise SystemExit("global batch %d exceeds the %d samples" % (B, total))
    wrap = (total // B) * B
    every = args.sync_every if args.sync_every > 1 else 1
    losses = []
    for s in range(args.steps):
        step = s + 1
        local = every > 1 and step > args.local_sgd_after
        start = (s * B) % wrap
        rank_losses, grads = [], []
        for r, rep in enumerate(replicas):
            lo = start + r * args.batch
            batch = [torch.from_numpy(np.ascontiguousarray(a[lo:lo + args.batch])) for _, a in arrays]
            with torch.no_grad():  # the rows this rank reads: the master's, or its kept copy
                for p in sparse_pnames:
                    params[r][p].copy_(master[p])
                for m, idx in embedding_indices(rep, batch).items():
                    p = module_param[r][m]
                    if p not in sparse_pnames:
                        continue
                    for row in torch.unique(torch.cat([i.reshape(-1) for i in idx])).tolist():
                        got = kept[r][p].get(row)
                        if got is None or s - got[0] > args.staleness:
                            got = kept[r][p][row] = (s, master[p][row].clone())
                        params[r][p][row] = got[1]
            for q in rep.parameters():
                q.grad = None
            loss = rep(*batch)
            loss.backward()
            rank_losses.append(float(loss.item()))
            grads.append({p: q.grad.detach().clone() for p, q in params[r].items()})
        losses.append(float(np.mean(np.array(rank_losses, dtype=np.float32))))
        with torch.no_grad():
            for p in sparse_pnames:
                master[p] -= args.lr * (sum(g[p] for g in grads) / n)
            for p in dense_pnames:
                if local:
                    for r in range(n):
                        params[r][p] -= args.lr * grads[r][p]
                    continue
                vecs = []
                for r in range(n):
                    g = grads[r][p]
                    if args.wire_error_feedback:
                        x = g + residual[r][p]
                        q = rounded(x, wire)
                        residual[r][p] = x - q
                        g = q
                    vecs.append(g)
                total_grad = doubling_sum(vecs, wire) if wire is not None else sum(vecs)
                mean = total_grad / n
                for r in range(n):
                    params[r][p] -= args.lr * mean
            if local and ((step - args.local_sgd_after) % every == 0 or step == args.steps):
                average(params, dense_pnames)
    with torch.no_grad():
        for p in sparse_pnames:
            params[0][p].copy_(master[p])
        # bound's views read model; replica 0 holds the result
        for p, q in dict(model.named_parameters()).items():
            q.copy_(params[0][p])
    with open(args.out + ".json", "w") as f:
        json.dump({"losses": losses, "sparse": sorted(sparse), "config": {
            k: v for k, v in vars(args).items() if k not in ("func", "out")}}, f, indent=1)
        f.write("\n")
    np.savez(args.out + ".npz", **{name: v.get().numpy().astype(np.float32) for name, v in bound.items()})
    print("%s, %d ranks: %d steps, loss %.6f -> %.6f" % (
        os.path.basename(os.path.abspath(args.example)), n, args.steps, losses[0], losses[-1]))


def names_of(model, module):
    for pname, p in model.named_parameters():
        if p is module.weight:
            return pname
    raise SystemExit("embedding weight not found among the parameters")


def average(params, pnames):
    """Every replica's pnames replaced by their float32 mean."""
    n = len(params)
    for p in pnames:
        mean = sum(params[r][p] for r in range(n)) / n
        for r in range(n):
            params[r][p].copy_(mean)


def cmd_check(args):
    label = args.label + ": " if args.label else ""
    prog = [loss for _, loss in tr.read_losses_csv(args.losses)]
    sim = json.load(open(args.sim + ".json"))["losses"]
    exact = json.load(open(args.exact + ".json"))["losses"]
    if len(prog) != len(sim) or len(sim) != len(exact):
        print("FAIL %s%d program steps, %d simulated, %d exact" % (label, len(prog), len(sim), len(exact)),
              file=sys.stderr)
        return 1
    loss_dev = max(abs(a - b) for a, b in zip(prog, sim))
    loss_mode = max(abs(a - b) for a, b in zip(exact, sim))
    ws = dict(np.load(args.sim + ".npz"))
    we = dict(np.load(args.exact + ".npz"))
    wp = {i.name: numpy_helper.to_array(i) for i in onnx.load(args.saved).graph.initializer}
    w_dev = w_mode = 0.0
    for name in ws:
        if name not in wp:
            print("FAIL %s%s missing from %s" % (label, name, args.saved), file=sys.stderr)
            return 1
        w_dev = max(w_dev, float(np.max(np.abs(wp[name].astype(np.float64) - ws[name]))))
        w_mode = max(w_mode, float(np.max(np.abs(we[name].astype(np.float64) - ws[name]))))
    loss_ratio = loss_dev / loss_mode if loss_mode > 0 else float("inf")
    w_ratio = w_dev / w_mode if w_mode > 0 else float("inf")
    print("%.3e %.3e" % (loss_ratio, w_ratio))
    failures = []
    if loss_mode == 0 or w_mode == 0:
        failures.append("the simulated mode equals exact training (losses %g, weights %g apart)"
                        % (loss_mode, w_mode))
    if not (loss_ratio <= args.factor):
        failures.append("losses %.3g from the simulation, %.3g of the mode's effect %.3g (limit %g)"
                        % (loss_dev, loss_ratio, loss_mode, args.factor))
    if not (w_ratio <= args.factor):
        failures.append("weights %.3g from the simulation, %.3g of the mode's effect %.3g (limit %g)"
                        % (w_dev, w_ratio, w_mode, args.factor))
    for msg in failures:
        print("FAIL %s%s" % (label, msg), file=sys.stderr)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("example")
    r.add_argument("--ranks", type=int, required=True)
    r.add_argument("--batch", type=int, required=True, help="per-rank batch")
    r.add_argument("--steps", type=int, required=True)
    r.add_argument("--lr", type=float, required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--wire", choices=("fp32", "bf16", "fp16"), default="fp32")
    r.add_argument("--wire-error-feedback", action="store_true")
    r.add_argument("--sync-every", type=int, default=1)
    r.add_argument("--local-sgd-after", type=int, default=0)
    r.add_argument("--staleness", type=int, default=0)
    r.add_argument("--sparse", default=None)
    r.add_argument("--parallaxc", default=None)
    m = sub.add_parser("runs")
    m.add_argument("jobs")
    c = sub.add_parser("check")
    c.add_argument("losses")
    c.add_argument("saved")
    c.add_argument("--sim", required=True)
    c.add_argument("--exact", required=True)
    c.add_argument("--factor", type=float, default=0.1)
    c.add_argument("--label", default="")
    args = ap.parse_args()
    if args.cmd == "run":
        return cmd_run(args) or 0
    if args.cmd == "runs":
        with open(args.jobs) as f:
            for line in f:
                if line.strip():
                    cmd_run(ap.parse_args(["run"] + shlex.split(line)))
        return 0
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
