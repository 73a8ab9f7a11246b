#!/usr/bin/python3
"""PyTorch reference for Parallax training programs, and the comparer.

  train_reference.py run EXAMPLE_DIR --batch B --steps S --out PREFIX
        [--optimizer sgd|momentum|adam|adagrad|adamw|rmsprop] [--lr F] [--momentum F]
        [--nesterov] [--beta1 F] [--beta2 F] [--alpha F] [--epsilon F] [--weight-decay F]
        [--no-decay PATTERN[,PATTERN]]
        [--sparse NAME,NAME | --parallaxc PATH]
        [--lr-schedule constant|step:E:G|cosine:T|linear:T] [--lr-warmup K]
        [--clip-grad-norm F]
  train_reference.py runs JOBS.txt      (one `run` argument list per line; one
                                         interpreter start for many runs)
  train_reference.py compare (--ref PREFIX | --ref-run LOSSES.csv OUT.onnx)
        LOSSES.csv OUT.onnx MODEL.onnx [--loss-rtol 1e-4] [--weight-frac 0.01]
        [--label TEXT]

run: builds the example's PyTorch module (the class in EXAMPLE_DIR/export.py),
loads every initializer of EXAMPLE_DIR/model.onnx into it (by name; the
initializers torch.onnx.export renamed - transposed Linear weights
"onnx::MatMul_N", the LSTM's gate-reordered W/R/B - are matched to their
parameter by exact value), and trains S steps on the global batch B in the
program's data order (design.md section 3: step s uses samples
[(s*B) mod (floor(len/B)*B), +B), no shuffle). Writes PREFIX.json
({"losses": [...], ...}, loss of step s+1 at index s, computed before that
step's update) and PREFIX.npz (final weights, keyed by ONNX initializer name,
in the ONNX layout).

Optimizer semantics are Parallax's (design.md section 4, runtime/px_train.h):
dense variables use torch.optim (SGD, SGD momentum with dampening 0 [+
nesterov], Adam, AdamW, Adagrad with lr_decay 0, RMSprop; weight decay is L2
added to the gradient, AdamW's decoupled; --no-decay puts the initializers its
fnmatch patterns name in a parameter group without weight decay). Sparse variables (embedding tables read only through Gather; the
list comes from --sparse or `parallaxc inspect`) get nn.Embedding(sparse=True)
(or nn.EmbeddingBag(sparse=True)) row gradients, summed per unique row, and a
lazy row update written out below: only touched rows change, and untouched
rows' momentum / Adam moments are neither decayed nor applied; weight decay is
added to the touched rows' gradients only (AdamW: the touched rows decay). SGD,
momentum, Adagrad, AdamW and RMSprop rows get the tensor operations of
torch.optim's dense step (AdamW's bias correction with the global step); Adam rows get torch.optim.SparseAdam's (eps added to
sqrt(v) before the bias correction is folded into the step size; bias
correction with the global step). For SGD and Adagrad without weight decay,
and for Adam without it, this is exactly PyTorch's own sparse update
(torch.optim.SGD / Adagrad / SparseAdam).

compare: checks a program's --losses CSV and --save ONNX against PREFIX (or
against another program's run, --ref-run, e.g. 2 ranks against 1 rank):
every step's loss within --loss-rtol (relative; to at least 1% of the first
step's loss, since float32 rounding of a cross-entropy near 0 is relative to
the logits), and for every initializer
max|w_ours - w_torch| <= --weight-frac * max|w_torch - w_initial| (the error is
at most 1% of the update's size). Prints one line "loss_err weight_err
worst_variable" (machine readable, for the caller's table) and exits 1 naming
the step or variable on failure.

Schedules (--lr-schedule, --lr-warmup) are torch's schedulers stepped after
every optimizer step: a StepLR for step:EVERY:GAMMA without warm-up, else a
LambdaLR with the lambda of runtime/program/lr_schedule.c; the lazy row
updates use the same per-step learning rate. --clip-grad-norm F calls
torch.nn.utils.clip_grad_norm_ on the model's gradients (with sparse
embedding gradients: its formula on the coalesced row gradients, which is
the dense model's norm).

float32, one thread, deterministic. Run with /usr/bin/python3 (Debian's torch
and onnx).
"""

import argparse
import importlib.util
import inspect
import json
import math
import os
import shlex
import subprocess
import sys

import numpy as np

import torch_optimizers

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

OPTIMIZERS = ("sgd", "momentum", "adam", "adagrad", "adamw", "rmsprop")


# ---------------------------------------------------------------- the model

def load_export_module(example_dir):
    """examples/<m>/export.py as a module (its main() is not run)."""
    example_dir = os.path.abspath(example_dir)
    sys.path.insert(0, os.path.dirname(example_dir))  # export_common
    name = "export_" + os.path.basename(example_dir)
    spec = importlib.util.spec_from_file_location(name, os.path.join(example_dir, "export.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def model_class(mod):
    import torch
    classes = [c for _, c in inspect.getmembers(mod, inspect.isclass)
               if issubclass(c, torch.nn.Module) and c.__module__ == mod.__name__
               and c.__name__.endswith("Loss")]
    if len(classes) != 1:
        raise SystemExit("%s: expected one nn.Module class named *Loss, found %s"
                         % (mod.__file__, [c.__name__ for c in classes]))
    return classes[0]


def input_arrays(example_dir):
    ref = json.load(open(os.path.join(example_dir, "reference.json")))
    names = [i["name"] for i in ref["inputs"]]
    return [(n, np.load(os.path.join(example_dir, "data", n + ".npy"))) for n in names]


class View:
    """One ONNX initializer as a function of torch parameters: get() gives the
    ONNX-layout array, set() writes one into the parameters."""

    def __init__(self, desc, params, get, set_):
        self.desc, self.params, self.get, self.set = desc, params, get, set_


def _identity_view(name, p):
    def set_(a):
        p.data.copy_(a)
    return View(name, [p], lambda: p.detach().clone(), set_)


def _transpose_view(name, p):
    def set_(a):
        p.data.copy_(a.t())
    return View(name + ".T", [p], lambda: p.detach().t().contiguous(), set_)


def _lstm_views(prefix, lstm):
    """nn.LSTM (1 layer, one direction) as ONNX LSTM W, R, B: gates reordered
    from torch's i,f,g,o to ONNX's i,o,f,c; B = [b_ih | b_hh]."""
    import torch
    if lstm.num_layers != 1 or lstm.bidirectional or not lstm.bias:
        return []
    h = lstm.hidden_size
    order = torch.cat([torch.arange(k * h, (k + 1) * h) for k in (0, 3, 1, 2)])
    inverse = torch.argsort(order)
    views = []
    for kind in ("ih", "hh"):
        p = getattr(lstm, "weight_%s_l0" % kind)

        def get(p=p):
            return p.detach()[order].unsqueeze(0).contiguous()

        def set_(a, p=p):
            p.data.copy_(a[0][inverse])
        views.append(View("%sweight_%s_l0 (ONNX %s)" % (prefix, kind, "W" if kind == "ih" else "R"),
                          [p], get, set_))
    b_ih, b_hh = lstm.bias_ih_l0, lstm.bias_hh_l0

    def get_b():
        return torch.cat([b_ih.detach()[order], b_hh.detach()[order]]).unsqueeze(0)

    def set_b(a):
        b_ih.data.copy_(a[0][:4 * h][inverse])
        b_hh.data.copy_(a[0][4 * h:][inverse])
    views.append(View("%sbias_ih_l0|bias_hh_l0 (ONNX B)" % prefix, [b_ih, b_hh], get_b, set_b))
    return views


def bind_initializers(model, onnx_path):
    """{onnx initializer name: View}; loads the ONNX values into the model.
    Named initializers bind by name; the others by exact value against the
    seeded model (which export.py built the same way)."""
    import torch
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(onnx_path).graph.initializer}
    params = dict(model.named_parameters())
    bound, used = {}, set()
    for name, arr in inits.items():
        if name in params and tuple(params[name].shape) == arr.shape:
            bound[name] = _identity_view(name, params[name])
            used.add(params[name])
    candidates = []
    for mname, module in model.named_modules():
        if isinstance(module, torch.nn.LSTM):
            candidates += _lstm_views(mname + "." if mname else "", module)
    for pname, p in params.items():
        if p.dim() == 2:
            candidates.append(_transpose_view(pname, p))
        candidates.append(_identity_view(pname, p))
    for name, arr in inits.items():
        if name in bound:
            continue
        hits = [v for v in candidates if not any(p in used for p in v.params)
                and tuple(v.get().shape) == arr.shape and np.array_equal(v.get().numpy(), arr)]
        if len(hits) != 1:
            raise SystemExit("initializer %s %s: %d parameters of the seeded PyTorch model match it "
                             "(%s)" % (name, list(arr.shape), len(hits), ", ".join(v.desc for v in hits)))
        bound[name] = hits[0]
        used.update(hits[0].params)
    missing = [n for n, p in params.items() if p not in used]
    if missing:
        raise SystemExit("PyTorch parameters with no ONNX initializer: %s" % ", ".join(missing))
    with torch.no_grad():
        for name, view in bound.items():
            view.set(torch.from_numpy(inits[name].copy()))
            if not np.array_equal(view.get().numpy(), inits[name]):
                raise SystemExit("initializer %s does not round-trip through %s" % (name, view.desc))
    return bound


def sparse_names(args):
    if args.sparse is not None:
        return [n for n in args.sparse.split(",") if n]
    if not args.parallaxc:
        raise SystemExit("give --sparse NAMES or --parallaxc PATH")
    out = subprocess.run([args.parallaxc, "inspect", os.path.join(args.example, "model.onnx"),
                          "--batch", str(args.batch), "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return [v["name"] for v in json.loads(out)["variables"] if v["class"] == "sparse"]


# ------------------------------------------------------------- optimizers

def no_decay_params(args, bound):
    """The parameters of the initializers --no-decay's patterns name."""
    import fnmatch
    out = []
    for pattern in [p for p in (args.no_decay or "").split(",") if p]:
        names = [n for n in bound if fnmatch.fnmatchcase(n, pattern)]
        if not names:
            raise SystemExit("--no-decay %s matches no initializer" % pattern)
        out += [p for n in names for p in bound[n].params if not any(p is q for q in out)]
    return out


def dense_optimizer(args, params, spared=()):
    if not params:
        return None
    wd = args.weight_decay
    groups = [{"params": [p for p in params if not any(p is q for q in spared)]},
              {"params": [p for p in params if any(p is q for q in spared)], "weight_decay": 0.0}]
    params = [g for g in groups if g["params"]]
    return torch_optimizers.make(args.optimizer, params, args.lr, momentum=args.momentum,
                                 nesterov=args.nesterov, beta1=args.beta1, beta2=args.beta2,
                                 epsilon=args.epsilon, alpha=getattr(args, "alpha", 0.99),
                                 weight_decay=wd)


class LazyRowOptimizer:
    """Parallax's row update of sparse variables: the tensor operations of
    torch.optim's single-tensor step, applied to the touched rows only."""

    def __init__(self, args, params, spared=()):
        import torch
        self.a = args
        self.params = params
        self.spared = spared
        n_slots = {"sgd": 0, "momentum": 1, "adam": 2, "adagrad": 1, "adamw": 2,
                   "rmsprop": 1}[args.optimizer]
        self.slots = {p: [torch.zeros_like(p) for _ in range(n_slots)] for p in params}

    def step(self, t, lr):
        a = self.a
        for p in self.params:
            if p.grad is None:
                continue
            grad = p.grad.coalesce()  # unique rows, summed values
            rows = grad.indices()[0]
            g = grad.values()
            w = p.data.index_select(0, rows)
            wd = 0.0 if any(p is q for q in self.spared) else a.weight_decay
            if wd != 0 and a.optimizer != "adamw":
                g = g.add(w, alpha=wd)
            slots = [s.index_select(0, rows) for s in self.slots[p]]
            if a.optimizer == "sgd":
                w.add_(g, alpha=-lr)
            elif a.optimizer == "momentum":
                buf = slots[0]
                buf.mul_(a.momentum).add_(g)  # first touch: 0 * mu + g == g
                w.add_(g.add(buf, alpha=a.momentum) if a.nesterov else buf, alpha=-lr)
            elif a.optimizer == "adamw":  # torch.optim.adamw's single-tensor step
                m, v = slots
                w.mul_(1 - lr * wd)
                m.mul_(a.beta1).add_(g, alpha=1 - a.beta1)
                v.mul_(a.beta2).addcmul_(g, g, value=1 - a.beta2)
                denom = (v.sqrt() / math.sqrt(1 - a.beta2 ** t)).add_(a.epsilon)
                w.addcdiv_(m, denom, value=-(lr / (1 - a.beta1 ** t)))
            elif a.optimizer == "rmsprop":  # torch.optim.rmsprop's single-tensor step
                s = slots[0]
                s.mul_(a.alpha).addcmul_(g, g, value=1 - a.alpha)
                w.addcdiv_(g, s.sqrt().add_(a.epsilon), value=-lr)
            elif a.optimizer == "adam":  # torch.optim._functional.sparse_adam
                m, v = slots
                m.add_(g.sub(m).mul_(1 - a.beta1))
                v.add_(g.pow(2).sub_(v).mul_(1 - a.beta2))
                denom = v.sqrt().add_(a.epsilon)
                step_size = lr * math.sqrt(1 - a.beta2 ** t) / (1 - a.beta1 ** t)
                w.add_(-step_size * m.div(denom))
            else:
                s = slots[0]
                s.addcmul_(g, g, value=1)
                w.addcdiv_(g, s.sqrt().add_(a.epsilon), value=-lr)
            p.data.index_copy_(0, rows, w)
            for full, part in zip(self.slots[p], slots):
                full.index_copy_(0, rows, part)


# ------------------------------------------------ schedules and clipping

def lr_lambda(spec, warmup):
    """The multiplier of step s (0-based): runtime/program/lr_schedule.c."""
    kind, _, rest = (spec or "constant").partition(":")
    K = warmup

    def after(s):
        if kind == "constant":
            return 1.0
        if kind == "step":
            every, gamma = rest.split(":")
            return float(gamma) ** (s // int(every))
        T = int(rest)
        if kind == "cosine":
            return 0.0 if s >= T else 0.5 * (1.0 + math.cos(math.pi * (s - K) / (T - K)))
        if kind == "linear":
            return max(0.0, (T - s) / (T - K))
        raise SystemExit("unknown --lr-schedule %s" % spec)

    return lambda s: s / K if s < K else after(s)


def make_scheduler(args, opt):
    import torch
    if opt is None:
        return None
    if args.lr_schedule and args.lr_schedule.startswith("step:") and not args.lr_warmup:
        every, gamma = args.lr_schedule[5:].split(":")
        return torch.optim.lr_scheduler.StepLR(opt, step_size=int(every), gamma=float(gamma))
    return torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(args.lr_schedule, args.lr_warmup))


def clip_gradients(model, max_norm):
    """torch.nn.utils.clip_grad_norm_; sparse (row) gradients are coalesced
    first and go through the same formula (total norm over every gradient,
    coefficient max_norm / (norm + 1e-6) clamped to 1)."""
    import torch
    params = [p for p in model.parameters() if p.grad is not None]
    if not any(p.grad.is_sparse for p in params):
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    for p in params:
        if p.grad.is_sparse:
            p.grad = p.grad.coalesce()
    norms = [torch.norm(p.grad.values() if p.grad.is_sparse else p.grad, 2) for p in params]
    total = torch.norm(torch.stack(norms), 2)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for p in params:
        if p.grad.is_sparse:
            p.grad = torch.sparse_coo_tensor(p.grad.indices(), p.grad.values() * coef,
                                             p.grad.shape).coalesce()
        else:
            p.grad.mul_(coef)
    return float(total)


# -------------------------------------------------------------------- run

def split_sparse(model, bound, sparse):
    """The parameters of the sparse variables (their nn.Embedding / EmbeddingBag
    switched to sparse row gradients), and the others."""
    import torch
    sparse_params = []
    for name in sparse:
        if name not in bound or len(bound[name].params) != 1:
            raise SystemExit("sparse variable %s is not a PyTorch parameter" % name)
        p = bound[name].params[0]
        owners = [m for m in model.modules()
                  if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and m.weight is p]
        if len(owners) != 1:
            raise SystemExit("sparse variable %s is not the weight of one nn.Embedding or "
                             "nn.EmbeddingBag" % name)
        owners[0].sparse = True
        sparse_params.append(p)
    dense_params = [p for p in model.parameters() if not any(p is q for q in sparse_params)]
    return sparse_params, dense_params


def cmd_run(args):
    import torch
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    if args.epsilon is None:
        args.epsilon = 1e-10 if args.optimizer == "adagrad" else 1e-8
    if args.weight_decay is None:  # torch.optim.AdamW's default, as parallaxc's
        args.weight_decay = 0.01 if args.optimizer == "adamw" else 0.0
    mod = load_export_module(args.example)
    torch.manual_seed(0)  # as export.py: the values let renamed initializers be matched
    model = model_class(mod)()
    model.train()  # no dropout / batch statistics in the examples: same function as eval
    bound = bind_initializers(model, os.path.join(args.example, "model.onnx"))
    if args.float64:  # calibration: how far float32 rounding alone moves the result
        model.double()

    sparse = sparse_names(args)
    sparse_params, dense_params = split_sparse(model, bound, sparse)
    spared = no_decay_params(args, bound)
    dense_opt = dense_optimizer(args, dense_params, spared)
    lazy_opt = LazyRowOptimizer(args, sparse_params, spared)
    scheduler = make_scheduler(args, dense_opt)
    factor = lr_lambda(args.lr_schedule, args.lr_warmup)

    arrays = input_arrays(args.example)
    n = arrays[0][1].shape[0]
    B = args.batch
    if B > n:
        raise SystemExit("batch %d exceeds the %d samples" % (B, n))
    wrap = (n // B) * B
    losses, lrs, norms = [], [], []
    for s in range(args.steps):
        start = (s * B) % wrap
        batch = [torch.from_numpy(np.ascontiguousarray(a[start:start + B])) for _, a in arrays]
        if args.float64:
            batch = [t.double() if t.is_floating_point() else t for t in batch]
        loss = model(*batch)
        losses.append(float(loss.item()))
        for p in model.parameters():
            p.grad = None
        loss.backward()
        if args.clip_grad_norm:
            norms.append(clip_gradients(model, args.clip_grad_norm))
        lr = dense_opt.param_groups[0]["lr"] if dense_opt is not None else args.lr * factor(s)
        lrs.append(lr)
        if dense_opt is not None:
            dense_opt.step()
        lazy_opt.step(s + 1, lr)
        if scheduler is not None:
            scheduler.step()

    config = {k: v for k, v in vars(args).items() if k not in ("func", "out")}
    with open(args.out + ".json", "w") as f:
        json.dump({"losses": losses, "lrs": lrs, "grad_norms": norms, "sparse": sparse,
                   "config": config}, f, indent=1)
        f.write("\n")
    np.savez(args.out + ".npz", **{name: v.get().numpy().astype(np.float32) for name, v in bound.items()})
    print("%s: %d steps, loss %.6f -> %.6f" % (os.path.basename(os.path.abspath(args.example)),
                                               args.steps, losses[0], losses[-1]))


# ---------------------------------------------------------------- compare

def read_losses_csv(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("step"):
                continue
            step, loss = line.split(",")[:2]
            rows.append((int(step), float(loss)))
    return rows


def cmd_compare(args):
    if args.ref:
        want = json.load(open(args.ref + ".json"))["losses"]
        ref_w = dict(np.load(args.ref + ".npz"))
    else:
        want = [loss for _, loss in read_losses_csv(args.ref_run[0])]
        ref_w = {i.name: numpy_helper.to_array(i) for i in onnx.load(args.ref_run[1]).graph.initializer}
    label = args.label + ": " if args.label else ""
    failures = []

    ours = read_losses_csv(args.losses)
    if [s for s, _ in ours] != list(range(1, len(want) + 1)):
        failures.append("%slosses.csv has steps %s, expected 1..%d"
                        % (label, [s for s, _ in ours][:5] + ["..."], len(want)))
    loss_err = 0.0
    # A cross-entropy near zero is log-sum-exp minus the target logit, two nearly
    # equal numbers: its float32 rounding is relative to the logits, not to the
    # loss. So losses below 1% of the first step's count as that 1%.
    floor = max(0.01 * abs(want[0]), 1e-30) if want else 1e-30
    for (step, got), exp in zip(ours, want):
        err = abs(got - exp) / max(abs(exp), floor)
        if not np.isfinite(got):
            err = float("inf")
        if err > loss_err:
            loss_err = err
        if err > args.loss_rtol:
            failures.append("%sstep %d loss %.8g, reference %.8g (rel err %.2e > %g)"
                            % (label, step, got, exp, err, args.loss_rtol))

    initial = {i.name: numpy_helper.to_array(i) for i in onnx.load(args.model).graph.initializer}
    trained = {i.name: numpy_helper.to_array(i) for i in onnx.load(args.saved).graph.initializer}
    worst_frac, worst_name = 0.0, "-"
    for name in sorted(ref_w):
        exp, w0 = ref_w[name], initial[name]
        if name not in trained:
            failures.append("%s%s missing from %s" % (label, name, args.saved))
            continue
        got = trained[name]
        if got.shape != exp.shape:
            failures.append("%s%s shape %s, expected %s" % (label, name, got.shape, exp.shape))
            continue
        err = float(np.max(np.abs(got.astype(np.float64) - exp))) if got.size else 0.0
        update = float(np.max(np.abs(exp.astype(np.float64) - w0))) if got.size else 0.0
        # An untouched variable must stay (nearly) bit-equal to its start.
        frac = err / update if update > 0 else (0.0 if err == 0 else float("inf"))
        if not np.isfinite(err):
            frac = float("inf")
        if frac > worst_frac:
            worst_frac, worst_name = frac, name
        if frac > args.weight_frac:
            failures.append("%svariable %s: max|ours - reference| %.3g is %.3g of the update %.3g "
                            "(limit %g)" % (label, name, err, frac, update, args.weight_frac))
    print("%.3e %.3e %s" % (loss_err, worst_frac, worst_name))
    for msg in failures[:12]:
        print("FAIL " + msg, file=sys.stderr)
    if len(failures) > 12:
        print("FAIL %s... and %d more" % (label, len(failures) - 12), file=sys.stderr)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    add_run_arguments(r)
    m = sub.add_parser("runs")
    m.add_argument("jobs")
    c = sub.add_parser("compare")
    ref = c.add_mutually_exclusive_group(required=True)
    ref.add_argument("--ref", help="PREFIX of a `run`")
    ref.add_argument("--ref-run", nargs=2, metavar=("LOSSES", "SAVED"), help="another program's outputs")
    c.add_argument("losses")
    c.add_argument("saved")
    c.add_argument("model")
    c.add_argument("--loss-rtol", type=float, default=1e-4)
    c.add_argument("--weight-frac", type=float, default=0.01)
    c.add_argument("--label", default="")
    args = ap.parse_args()
    if args.cmd == "run":
        cmd_run(args)
        return 0
    if args.cmd == "runs":
        job_parser = argparse.ArgumentParser(prog="runs job")
        add_run_arguments(job_parser)
        failed = 0
        for line in open(args.jobs):
            if not line.strip() or line.startswith("#"):
                continue
            try:  # one bad job must not hide the others' results
                cmd_run(job_parser.parse_args(shlex.split(line)))
            except (Exception, SystemExit) as e:
                print("job failed: %s: %s" % (line.strip(), e), file=sys.stderr)
                failed += 1
        return 1 if failed else 0
    return cmd_compare(args)


def add_run_arguments(r):
    r.add_argument("example")
    r.add_argument("--batch", type=int, required=True, help="global batch (ranks x per-rank batch)")
    r.add_argument("--steps", type=int, required=True)
    r.add_argument("--out", required=True, help="writes OUT.json and OUT.npz")
    r.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd")
    r.add_argument("--lr", type=float, default=0.01)
    r.add_argument("--momentum", type=float, default=0.9)
    r.add_argument("--nesterov", action="store_true")
    r.add_argument("--beta1", type=float, default=0.9)
    r.add_argument("--beta2", type=float, default=0.999)
    r.add_argument("--epsilon", type=float, default=None, help="default 1e-8 (adam) / 1e-10 (adagrad)")
    r.add_argument("--weight-decay", type=float, default=None, help="default 0 (adamw: 0.01)")
    r.add_argument("--alpha", type=float, default=0.99, help="RMSprop's smoothing constant")
    r.add_argument("--no-decay", default=None, help="fnmatch patterns of initializers without decay")
    r.add_argument("--sparse", default=None, help="comma-separated sparse initializers")
    r.add_argument("--parallaxc", default=None, help="ask `parallaxc inspect` for the sparse ones")
    r.add_argument("--lr-schedule", default=None, help="as the program's --lr-schedule")
    r.add_argument("--lr-warmup", type=int, default=0)
    r.add_argument("--clip-grad-norm", type=float, default=0.0)
    r.add_argument("--float64", action="store_true",
                   help="train in float64 (to calibrate the tolerances against float32 rounding)")

if __name__ == "__main__":
    sys.exit(main())
