#!/usr/bin/python3
"""PyTorch/NumPy reference of Parallax's sparse training (--sparsity, --dst),
and the comparer. Written from docs/sparse_training.md, apart from the C code.

  sparse_reference.py run EXAMPLE_DIR --batch B --steps S --out PREFIX
        --sparsity NAME=F[,...]|auto:F [--sparsity-pattern P] [--sparsity-init I]
        [--sparsity-seed S] [--dst set|rigl --dst-every K --dst-fraction F
        --dst-until U] [optimizer flags as train_reference.py]
  sparse_reference.py compare PREFIX LOSSES.csv OUT.onnx MODEL.onnx [--loss-rtol 1e-5]
        [--weight-frac 0.01] [--label TEXT]
  sparse_reference.py batch JOBS.txt   (one `run` or `compare` argument list per line,
                                        in one interpreter; exits 1 if any failed)

run: the example's PyTorch module with the ONNX initializers (as
train_reference.py loads them), each masked weight multiplied by its mask
before the first step; every step computes the loss, masks the gradients of
the masked weights, takes torch.optim's step and multiplies the weights by
their masks again. With --dst, after step t (1-based) when t % K == 0 and
t < U, each masked weight keeps its live entries of the largest magnitude
but k = round(F/2 (1 + cos(pi t / U)) * live), and grows k entries among the
others: at random (set) or of the largest |dense gradient| of step t (rigl);
grown entries start at zero, with zero optimizer state. Writes PREFIX.json
(losses) and PREFIX.npz (final weights and masks, "mask:NAME", ONNX layout).

The masks: every choice is a top-k by a 32-bit key, ties to the lower index:
magnitude keys are the float32 bits of |w|; random keys the high 32 bits of
splitmix64(splitmix64(splitmix64(seed ^ fnv1a64(name)) + step) + item)
(step 0 for the initial mask). Items are entries in storage order, or for
block:AxB the blocks of the logical [out, in] matrix (row-major, key from
the sum of |w| in double, rounded to float32); n:m keeps the n largest of
each group of m consecutive inputs. The logical orientation comes from the
ONNX node reading the weight (MatMul: stored [in, out]; Gemm: transB).

compare: the program's --losses against PREFIX (every step within
--loss-rtol relative), the masks of --save's metadata "parallax.sparsity"
and its zeros against PREFIX's masks (exactly), the trained weights within
--weight-frac of the update (as train_reference.py compare).

float32, one thread. Run with /usr/bin/python3.
"""

import argparse
import base64
import importlib.util
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("train_reference",
                                               os.path.join(HERE, "train_reference.py"))
tr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tr)  # restores NumPy's aliases and imports onnx
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

M64 = (1 << 64) - 1
GOLDEN, C1, C2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


# ------------------------------------------------------------------ keys

def fnv1a64(name):
    h = 14695981039346656037
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) & M64
    return h


def splitmix64(x):
    z = (x + GOLDEN) & M64
    z = ((z ^ (z >> 30)) * C1) & M64
    z = ((z ^ (z >> 27)) * C2) & M64
    return z ^ (z >> 31)


def random_keys(seed, name, step, n, name_hash=None):
    h = fnv1a64(name) if name_hash is None else name_hash
    base = splitmix64((splitmix64(seed ^ h) + step) & M64)
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + np.uint64(base) + np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(C1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(C2)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(32)).astype(np.uint32)


def abs_keys(a):
    return np.abs(np.asarray(a, dtype=np.float32)).reshape(-1).view(np.uint32).copy()


def select_top(keys, k, eligible=None):
    """Boolean choice of the k eligible items of the largest key, ties to the lower index."""
    n = keys.shape[0]
    idx = np.arange(n)
    if eligible is not None:
        idx = idx[eligible]
    order = np.lexsort((idx, -keys[idx].astype(np.int64)))
    chosen = np.zeros(n, dtype=bool)
    chosen[idx[order[:max(0, k)]]] = True
    return chosen


def round_half_up(x):
    return int(math.floor(x + 0.5))


# ---------------------------------------------------------------- patterns

class Pattern:
    """A masked weight: its storage shape, logical [out, in], pattern."""

    def __init__(self, name, shape, w_in_major, spec):
        self.name, self.shape, self.w_in_major = name, tuple(shape), w_in_major
        self.out, self.inp = (shape[1], shape[0]) if w_in_major else (shape[0], shape[1])
        self.kind, self.a, self.b = "unstructured", 1, 1
        if spec.startswith("block:"):
            a, _, b = spec[6:].partition("x")
            self.kind, self.a, self.b = "block", int(a), int(b or a)
        elif spec != "unstructured":
            n, m = spec.split(":")
            self.kind, self.a, self.b = "nm", int(n), int(m)

    def logical(self, w):
        w = w.reshape(self.shape)
        return w.T if self.w_in_major else w

    def storage(self, logical):
        return np.ascontiguousarray(logical.T if self.w_in_major else logical)

    def numel(self):
        return self.out * self.inp

    def items(self):
        if self.kind == "block":
            return (self.out // self.a) * (self.inp // self.b)
        return self.numel()

    def item_keys(self, values):
        """Keys of the items from storage-layout values (magnitudes)."""
        if self.kind != "block":
            return abs_keys(values)
        lg = np.abs(self.logical(values).astype(np.float64))
        keys = np.zeros(self.items(), dtype=np.uint32)
        cols = self.inp // self.b
        for ob in range(self.out // self.a):
            for ib in range(cols):
                block = lg[ob * self.a:(ob + 1) * self.a, ib * self.b:(ib + 1) * self.b]
                s = 0.0
                for x in block.reshape(-1):  # row-major, in order
                    s += float(x)
                keys[ob * cols + ib] = np.float32(s).view(np.uint32)
        return keys

    def entries(self, items):
        """Storage-layout boolean mask of the chosen items."""
        if self.kind != "block":
            return items.reshape(self.shape).copy()
        lg = np.repeat(np.repeat(items.reshape(self.out // self.a, self.inp // self.b),
                                 self.a, axis=0), self.b, axis=1)
        return self.storage(lg)

    def items_of(self, entries):
        if self.kind != "block":
            return entries.reshape(-1).copy()
        return self.logical(entries)[::self.a, ::self.b].reshape(-1).copy()

    def live_items(self, nnz):
        return nnz // (self.a * self.b) if self.kind == "block" else nnz

    def nnz_for(self, sparsity):
        keep = 1.0 - sparsity
        if self.kind == "block":
            blocks = self.items()
            return min(max(round_half_up(keep * blocks), 1), blocks) * self.a * self.b
        if self.kind == "nm":
            return self.numel() // self.b * self.a
        return min(max(round_half_up(keep * self.numel()), 1), self.numel())

    def initial_mask(self, w, init, seed, nnz):
        if init == "magnitude":
            keys = self.item_keys(w)
        else:
            keys = random_keys(seed, self.name, 0, self.items())
        if self.kind == "nm":
            lk = self.logical(keys.reshape(self.shape))
            chosen = np.zeros((self.out, self.inp), dtype=bool)
            for o in range(self.out):
                for g in range(0, self.inp, self.b):
                    group = lk[o, g:g + self.b].astype(np.int64)
                    order = np.lexsort((np.arange(self.b), -group))
                    chosen[o, g + order[:self.a]] = True
            return self.storage(chosen)
        return self.entries(select_top(keys, self.live_items(nnz)))


def orientations(model_path):
    """{initializer: 1 if stored [in, out] else 0} from the nodes reading it."""
    graph = onnx.load(model_path).graph
    out = {}
    for node in graph.node:
        if node.op_type == "MatMul" and len(node.input) > 1:
            out[node.input[1]] = 1
        if node.op_type == "Gemm" and len(node.input) > 1:
            trans_b = [a.i for a in node.attribute if a.name == "transB"]
            out[node.input[1]] = 0 if trans_b and trans_b[0] else 1
    return out


def erk_sparsities(patterns, f):
    """RigL's Erdos-Renyi-Kernel distribution of sparsity f."""
    dense = set()
    while True:
        divisor, rhs, raw = 0.0, 0.0, {}
        for p in patterns:
            n = p.numel()
            if p.name in dense:
                rhs -= n * f
            else:
                rhs += n * (1 - f)
                raw[p.name] = (p.out + p.inp) / n
                divisor += raw[p.name] * n
        eps = rhs / divisor
        top = max(raw.values())
        if top * eps <= 1:
            return {p.name: (0.0 if p.name in dense else 1 - eps * raw[p.name]) for p in patterns}
        dense.update(name for name, r in raw.items() if r == top)


def plan_masks(args, inits):
    orient = orientations(os.path.join(args.example, "model.onnx"))
    targets, auto = {}, None
    for item in args.sparsity.split(","):
        if item.startswith("auto:"):
            auto = float(item[5:])
        else:
            name, _, f = item.rpartition("=")
            targets[name] = float(f)
    patterns, sparsity = [], {}
    for name, arr in inits.items():
        if name in targets or (auto is not None and name in orient and arr.ndim == 2):
            patterns.append(Pattern(name, arr.shape, orient[name], args.sparsity_pattern))
            sparsity[name] = targets.get(name, auto)
    if args.sparsity_init == "erk":
        sparsity = erk_sparsities(patterns, auto)
        patterns = [p for p in patterns if sparsity[p.name] > 0]
    return patterns, sparsity


# -------------------------------------------------------------------- run

def torch_layout(view, a):
    """The parameter-layout array of an ONNX-layout one (identity or transposed views)."""
    import torch
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.t().contiguous() if view.desc.endswith(".T") else t


def onnx_layout(view, t):
    a = t.detach().numpy().copy()  # not a view of the tensor: the caller may change it
    return np.ascontiguousarray(a.T if view.desc.endswith(".T") else a)


def cmd_run(args):
    import torch
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    if args.epsilon is None:
        args.epsilon = 1e-10 if args.optimizer == "adagrad" else 1e-8
    mod = tr.load_export_module(args.example)
    torch.manual_seed(0)
    model = tr.model_class(mod)()
    model.train()
    model_path = os.path.join(args.example, "model.onnx")
    bound = tr.bind_initializers(model, model_path)
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(model_path).graph.initializer}
    patterns, sparsity = plan_masks(args, inits)
    masks = {}
    for p in patterns:
        nnz = p.nnz_for(sparsity[p.name])
        masks[p.name] = p.initial_mask(inits[p.name], args.sparsity_init, args.sparsity_seed, nnz)
        if int(masks[p.name].sum()) != nnz:
            raise SystemExit("%s: %d live entries, expected %d" % (p.name, masks[p.name].sum(), nnz))
    params = {name: bound[name].params[0] for name in masks}

    def apply_masks():
        with torch.no_grad():
            for name, m in masks.items():
                params[name].mul_(torch_layout(bound[name], m.astype(np.float32)))

    apply_masks()
    # embedding tables: Parallax's lazy row updates (train_reference.py)
    sparse_params, dense_params = tr.split_sparse(model, bound, tr.sparse_names(args))
    opt = tr.dense_optimizer(args, dense_params)
    lazy = tr.LazyRowOptimizer(args, sparse_params)
    arrays = tr.input_arrays(args.example)
    n = arrays[0][1].shape[0]
    B = args.batch
    wrap = (n // B) * B
    losses, updates = [], []
    for s in range(args.steps):
        t = s + 1
        start = (s * B) % wrap
        batch = [torch.from_numpy(np.ascontiguousarray(a[start:start + B])) for _, a in arrays]
        loss = model(*batch)
        losses.append(float(loss.item()))
        for q in model.parameters():
            q.grad = None
        loss.backward()
        dense_grads = {name: onnx_layout(bound[name], params[name].grad) for name in masks}
        for name, m in masks.items():
            params[name].grad.mul_(torch_layout(bound[name], m.astype(np.float32)))
        opt.step()
        lazy.step(t, args.lr)
        apply_masks()
        if args.dst and t % args.dst_every == 0 and t < args.dst_until:
            frac = args.dst_fraction / 2 * (1 + math.cos(math.pi * t / args.dst_until))
            for p in patterns:
                w = onnx_layout(bound[p.name], params[p.name])
                live = p.items_of(masks[p.name])
                n_live = int(live.sum())
                k = round_half_up(frac * n_live)
                if k <= 0:
                    continue
                kept = select_top(p.item_keys(w), n_live - k, live)
                if args.dst == "rigl":
                    grow_keys = p.item_keys(dense_grads[p.name])
                else:
                    grow_keys = random_keys(args.sparsity_seed, p.name, t, p.items())
                grown = select_top(grow_keys, k, ~kept)
                masks[p.name] = p.entries(kept | grown)
                reset = p.entries(grown)
                with torch.no_grad():
                    w[reset] = 0
                    w[~masks[p.name]] = 0
                    bound[p.name].set(torch.from_numpy(w))
                    zero = torch_layout(bound[p.name], (~reset).astype(np.float32))
                    for state in opt.state[params[p.name]].values():
                        if torch.is_tensor(state) and state.shape == params[p.name].shape:
                            state.mul_(zero)
                updates.append({"step": t, "weight": p.name, "changed": k})
    with open(args.out + ".json", "w") as f:
        json.dump({"losses": losses, "dst_updates": updates,
                   "sparsity": {p.name: sparsity[p.name] for p in patterns}}, f, indent=1)
        f.write("\n")
    arrays_out = {name: v.get().numpy().astype(np.float32) for name, v in bound.items()}
    arrays_out.update({"mask:" + name: m for name, m in masks.items()})
    np.savez(args.out + ".npz", **arrays_out)
    print("%s: %d steps, loss %.6f -> %.6f, %d masked weights, %d mask updates"
          % (os.path.basename(os.path.abspath(args.example)), args.steps, losses[0], losses[-1],
             len(masks), len(updates)))


# ---------------------------------------------------------------- compare

def saved_masks(onnx_path):
    model = onnx.load(onnx_path)
    meta = {p.key: p.value for p in model.metadata_props}
    if "parallax.sparsity" not in meta:
        raise SystemExit("%s has no parallax.sparsity metadata" % onnx_path)
    doc = json.loads(meta["parallax.sparsity"])
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = {}
    for w in doc["weights"]:
        bits = np.frombuffer(base64.b64decode(w["mask"]), dtype=np.uint8)
        total = w["total"]
        mask = np.unpackbits(bits, bitorder="little")[:total].astype(bool)
        out[w["name"]] = (mask.reshape(inits[w["name"]].shape), w)
    return out, inits


def cmd_compare(args):
    ref = json.load(open(args.ref + ".json"))
    ref_arrays = np.load(args.ref + ".npz")
    ours = [loss for _, loss in tr.read_losses_csv(args.losses)]
    problems = []
    if len(ours) != len(ref["losses"]):
        problems.append("%d losses, the reference has %d" % (len(ours), len(ref["losses"])))
    worst = 0.0
    floor = 0.01 * abs(ref["losses"][0])
    for s, (a, b) in enumerate(zip(ours, ref["losses"])):
        err = abs(a - b) / max(abs(b), floor)
        worst = max(worst, err)
        if err > args.loss_rtol:
            problems.append("step %d: loss %.9g, reference %.9g (relative %.3g)" % (s + 1, a, b, err))
    masks, inits = saved_masks(args.saved)
    names = [k[5:] for k in ref_arrays.files if k.startswith("mask:")]
    if sorted(names) != sorted(masks):
        problems.append("masked weights %s, reference %s" % (sorted(masks), sorted(names)))
    mask_diff = 0
    for name in names:
        if name not in masks:
            continue
        mine, meta = masks[name]
        want = ref_arrays["mask:" + name]
        diff = int((mine != want).sum())
        mask_diff += diff
        if diff:
            problems.append("%s: %d of %d mask entries differ from the reference" % (name, diff, want.size))
        if int(mine.sum()) != meta["live"]:
            problems.append("%s: the bitmap has %d live entries, the metadata says %d"
                            % (name, mine.sum(), meta["live"]))
        if np.any(inits[name][~mine] != 0):
            problems.append("%s: %d pruned entries are not zero" % (name, int((inits[name][~mine] != 0).sum())))
    initial = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(args.model).graph.initializer}
    worst_w, worst_name = 0.0, ""
    for name in initial:
        if name not in ref_arrays.files or name not in inits:
            continue
        step = float(np.max(np.abs(ref_arrays[name] - initial[name]))) if initial[name].size else 0
        err = float(np.max(np.abs(inits[name] - ref_arrays[name]))) if initial[name].size else 0
        frac = err / step if step > 0 else (0.0 if err == 0 else float("inf"))
        if frac > worst_w:
            worst_w, worst_name = frac, name
        if frac > args.weight_frac:
            problems.append("%s: weights differ by %.3g, %.3g of the update" % (name, err, frac))
    print("%s loss_err %.3g mask_diff %d weight_err %.3g %s"
          % (args.label, worst, mask_diff, worst_w, worst_name))
    if problems:
        for p in problems[:20]:
            print("  " + p)
        sys.exit(1)


def parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("example")
    r.add_argument("--batch", type=int, required=True)
    r.add_argument("--steps", type=int, required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--sparsity", required=True)
    r.add_argument("--sparsity-pattern", default="unstructured")
    r.add_argument("--sparsity-init", default="magnitude", choices=("magnitude", "random", "erk"))
    r.add_argument("--sparsity-seed", type=int, default=1)
    r.add_argument("--sparse-kernels", default="auto")  # which kernels: the same numbers
    r.add_argument("--dst", choices=("set", "rigl"))
    r.add_argument("--dst-every", type=int, default=100)
    r.add_argument("--dst-fraction", type=float, default=0.3)
    r.add_argument("--dst-until", type=int)
    r.add_argument("--parallaxc", help="finds the sparse (embedding) variables: inspect")
    r.add_argument("--sparse", help="the sparse (embedding) variables, NAME,NAME (default: "
                   "none, or what --parallaxc inspect finds)")
    r.add_argument("--optimizer", default="sgd", choices=tr.OPTIMIZERS)
    r.add_argument("--lr", type=float, default=0.01)
    r.add_argument("--momentum", type=float, default=0.9)
    r.add_argument("--nesterov", action="store_true")
    r.add_argument("--beta1", type=float, default=0.9)
    r.add_argument("--beta2", type=float, default=0.999)
    r.add_argument("--epsilon", type=float)
    r.add_argument("--weight-decay", type=float, default=0.0)
    c = sub.add_parser("compare")
    c.add_argument("ref")
    c.add_argument("losses")
    c.add_argument("saved")
    c.add_argument("model")
    c.add_argument("--loss-rtol", type=float, default=1e-5)
    c.add_argument("--weight-frac", type=float, default=0.01)
    c.add_argument("--label", default="")
    b = sub.add_parser("batch")
    b.add_argument("jobs")
    return ap


def dispatch(args):
    if args.cmd == "run":
        if args.sparse is None and not args.parallaxc:
            args.sparse = ""
        if args.dst and args.dst_until is None:
            args.dst_until = args.steps * 3 // 4
        cmd_run(args)
    else:
        cmd_compare(args)


def main():
    import shlex
    args = parser().parse_args()
    if args.cmd != "batch":
        dispatch(args)
        return
    failed = 0
    for line in open(args.jobs):
        if not line.strip():
            continue
        try:
            dispatch(parser().parse_args(shlex.split(line)))
        except SystemExit as e:
            if e.code:
                failed += 1
                print("  failed: %s" % line.strip())
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
