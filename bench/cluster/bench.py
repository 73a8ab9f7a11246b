#!/usr/bin/python3
"""Parallax against PyTorch DDP on a simulated cluster (bench/cluster/run.sh).

usage: bench/cluster/run.sh [--hosts 8] -- PARALLAXC [--models recommender_large]
           [--modes hybrid,allreduce,ps,auto] [--ddp dense,sparse,fp16] [--batch 32]
           [--seconds 8] [--repeat 3] [--warmup 10] [--max-steps 200] [--scaling]
           [--straggler cpu:CORES|link:FRACTION [--straggler-only]]
           [--json FILE] [--prebuilt DIR]
       bench/cluster/bench.py PARALLAXC --prebuild DIR --hosts H [--models ...] [--modes ...]

Runs inside the cluster that run.sh sets up (it reads PX_CLUSTER_* from the
environment): one rank per host, per-rank batch --batch, SGD lr 0.05 for
everybody, default compile and run flags apart from --comm.

For each model (--models: examples/<name>, or an example with only an
export.py, generated into bench/.cache/<name> as bench/distributed.py does):
  - Parallax, `parallaxc compile --comm MODE` for each --modes, run with
    mpirun across the hosts (flags: see run.sh); samples/s and bytes per rank
    per step by kind come from the program's --stats (warm-up excluded), as
    does comm_hidden_fraction (the share of communication time that the
    compute thread did not wait for) and "comm CPU", the communication
    thread's share of the rank's CPU time (cpu_seconds_per_step; mean over
    ranks);
  - compute-only: the same program with 1 rank (no MPI peers, no network),
    H copies at once in the root namespace so the CPU is shared as in the
    cluster run, each with the cluster run's compute threads per rank; its
    step time is the compute of one rank of the cluster run;
    "comm share" = 1 - compute-only step / cluster step;
  - PyTorch DDP (gloo over the namespaces' eth0), nn.Embedding dense and
    sparse=True, and dense with PyTorch's own gradient compression
    (--ddp fp16: ddp_comm_hooks.default_hooks.fp16_compress_hook, buckets
    cast to float16 for the AllReduce), one process per host with the CPUs
    divided by the hosts as threads (at least 1), the same data order (the
    training code is bench/distributed.py's).
  - hybrid --no-overlap: the hybrid program with every parameter-server pull
    at its place (--no-overlap-peer 0: not run); its step less the
    compute-only step estimates the communication-only step.
lm1b_large is examples/lm1b/export.py's benchmark configuration (100k
vocabulary, sampled softmax), generated into bench/.cache/lm1b_large.
After the tables, the ratios issue 10 sets targets for (hybrid against the
better DDP, allreduce, ps; step against max(compute-only, comm-only)).
Each configuration runs a probe (--warmup + 3 steps; DDP 2 + 3) that sets the timed steps so a
run lasts about --seconds (at most --max-steps, at least 5); a configuration
whose probe step is over --slow seconds keeps the probe as its measurement.
Then --repeat runs of each configuration, interleaved (drift on the machine
hits all of them); the run with the median rate is reported, with its
bytes, and the median compute-only time (measured right after each run).

--scaling: --scaling-modes (default hybrid) on --scaling-model at 1, 2, 4, 8 hosts (those the
cluster has): samples/s, efficiency against H x the 1-host rate, bytes per
rank, compute-only step time (H single-rank copies at once) and comm share.

--straggler cpu:CORES | link:FRACTION: --straggler-settings (default
"hybrid|hybrid --staleness 2": exact training and bounded staleness) on
--straggler-model (default lm1b) at all hosts, each unslowed and with the
last host slowed, interleaved: its CPU cgroup (run.sh puts each host's
processes in one) capped at CORES cores (cgroup v2 cpu.max or v1
cpu.cfs_quota_us), or both ends of its link shaped at FRACTION of the rate.
It prints each setting's samples/s unslowed and slowed and the share kept.
--straggler-only skips the other tables.

--prebuild DIR compiles the programs and inspect reports for a machine
without the compiler; there, --prebuilt DIR runs them (PARALLAXC is then
ignored: pass -). The models must sit at the same path on both machines
(PX_BENCH_CACHE sets where generated models live; PX_PYTHON names the
interpreter with torch, default /usr/bin/python3).

The machine has 2 cores: above 2 hosts compute is oversubscribed, which the
compute-only column shows. Other processes disturb the numbers.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import distributed as dist_bench  # noqa: E402  (model export, data order, DDP training)

ROOT = dist_bench.ROOT
MODES = ("hybrid", "allreduce", "ps", "auto")
KINDS = ("allreduce", "ps_pull", "ps_push", "other")
PREBUILT = None  # --prebuilt DIR


def cluster():
    env = os.environ
    if "PX_CLUSTER_HOSTFILE" not in env:
        raise SystemExit("bench.py runs inside the simulated cluster: bench/cluster/run.sh -- ...")
    hosts = [line.split() for line in open(env["PX_CLUSTER_HOSTS_FILE"])]
    return {"n": int(env["PX_CLUSTER_HOSTS"]), "hostfile": env["PX_CLUSTER_HOSTFILE"],
            "agent": env["PX_CLUSTER_AGENT"], "subnet": env["PX_CLUSTER_SUBNET"],
            "prefix": env["PX_CLUSTER_NS_PREFIX"], "iface": env["PX_CLUSTER_IFACE"],
            "addrs": [h[0] for h in hosts], "rate": env.get("PX_CLUSTER_RATE", "?"),
            "cgroup_kind": env.get("PX_CLUSTER_CGROUP_KIND"),
            "cgroup_prefix": env.get("PX_CLUSTER_CGROUP_PREFIX")}


def mpirun_cmd(cl, hosts, work):
    hostfile = os.path.join(work, "hostfile.%d" % hosts)
    with open(hostfile, "w") as f:
        f.writelines(open(cl["hostfile"]).readlines()[:hosts])
    return ["mpirun", "--allow-run-as-root", "-np", str(hosts), "--hostfile", hostfile,
            "--mca", "plm_rsh_agent", cl["agent"], "--bind-to", "none",
            "--mca", "mpi_yield_when_idle", "1", "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", cl["subnet"], "--mca", "oob_tcp_if_include",
            cl["subnet"]]


def stats_summary(st, steps_s):
    ranks = st["ranks"]
    n = len(ranks)
    per_kind = {k: sum(r["bytes_sent_per_step"][k] + r["bytes_received_per_step"][k]
                       for r in ranks) / n for k in KINDS}
    hidden = [r["comm_hidden_fraction"] for r in ranks if r.get("comm_hidden_fraction") is not None]
    comm = [r["comm_seconds_per_step"] for r in ranks if r.get("comm_seconds_per_step") is not None]
    cpu = [r["cpu_seconds_per_step"] for r in ranks if r.get("cpu_seconds_per_step")]
    comm_cpu = [c["comm_thread"] / c["process"] for c in cpu if c["process"] > 0]
    return {"samples_per_second": st["samples_per_second"], "step_seconds": steps_s,
            "comm_seconds_per_step": max(comm) if comm else None,
            "bytes_per_rank": per_kind, "bytes_total": sum(per_kind.values()),
            "comm_hidden_fraction": sum(hidden) / len(hidden) if hidden else None,
            "comm_thread_cpu_share": sum(comm_cpu) / len(comm_cpu) if comm_cpu else None,
            "threads_per_rank": st.get("threads_per_rank"), "threads_from": st.get("threads_from")}


def run_program(cmd_prefix, prog, data, warmup, timed, work, tag, flags=()):
    stats = os.path.join(work, "stats-%s.json" % tag)
    if os.path.exists(stats):
        os.remove(stats)
    cmd = cmd_prefix + [prog, "--data", data, "--steps", str(warmup + timed), "--warmup-steps",
                        str(warmup), "--log-every", "0", "--stats", stats] + list(flags)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    st = json.load(open(stats))
    return st


def parallax(cl, hosts, prog, data, warmup, timed, work, flags=()):
    st = run_program(mpirun_cmd(cl, hosts, work), prog, data, warmup, timed, work, "mpi", flags)
    step = st["global_batch"] / st["samples_per_second"] if st["samples_per_second"] else 0
    return stats_summary(st, step)


def compute_only(hosts, prog, data, warmup, timed, work, threads=None):
    """H single-rank copies of prog at once (no MPI peers): mean step time.
    threads: the cluster run's compute threads per rank (its default counts
    the ranks on the machine's kernel, which single-rank copies cannot)."""
    procs, files = [], []
    for i in range(hosts):
        stats = os.path.join(work, "stats-solo-%d.json" % i)
        if os.path.exists(stats):
            os.remove(stats)
        files.append(stats)
        procs.append(subprocess.Popen([prog, "--data", data, "--steps", str(warmup + timed),
                                       "--warmup-steps", str(warmup), "--log-every", "0",
                                       "--stats", stats]
                                      + (["--threads", str(threads)] if threads else []),
                                      stdout=subprocess.DEVNULL))
    for p in procs:
        if p.wait() != 0:
            raise SystemExit("compute-only run of %s failed" % prog)
    steps = [json.load(open(f)) for f in files]
    return sum(s["global_batch"] / s["samples_per_second"] for s in steps) / len(steps)


def ddp_cluster(cl, hosts):
    """One DDP worker per host, inside the host's namespace (gloo on eth0),
    driven like bench/distributed.py's two local workers."""
    port = "29%03d" % (os.getpid() % 1000)
    procs = []
    for r in range(hosts):
        ns = "%s-h%d" % (cl["prefix"], r)
        env = dict(os.environ, GLOO_SOCKET_IFNAME=cl["iface"])
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", ns, dist_bench.PYTHON, os.path.abspath(__file__),
             "--ddp-worker", str(r), str(hosts), cl["addrs"][0], port],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env))
    return dist_bench.DdpWorkers(procs)


# DDP's variants: nn.Embedding's gradients dense or sparse, and PyTorch's own
# compression of the gradient buckets (the fp16 compress hook; dense only).
DDP_VARIANTS = {"dense": (False, None), "sparse": (True, None), "fp16": (False, "fp16")}


def ddp_config(ddp, model, mdir, batch, variant):
    """measure()'s configuration of one DDP variant on the workers ddp."""
    sparse, hook = DDP_VARIANTS[variant]

    def run(w, t):
        r = ddp.run(model, mdir, sparse, batch, w + t, w, hook)
        r["step_seconds"] = r["counted_seconds"] / t
        return r
    return ("ddp_" + variant, "DDP " + variant, run, None)


def ddp_threads(hosts):
    """The CPUs per host, as Parallax's ranks take by default (--threads):
    all of this machine's divided by the hosts sharing its kernel, at least 1."""
    return max(1, len(os.sched_getaffinity(0)) // hosts)


def ddp_worker(rank, world, addr, port):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(ddp_threads(world))
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", init_method="tcp://%s:%s" % (addr, port), rank=rank,
                            world_size=world)
    classes, datasets = {}, {}
    for line in sys.stdin:
        cfg = json.loads(line)
        if cfg["model"] not in classes:
            classes[cfg["model"]] = dist_bench.torch_model_class(cfg["model"])
            datasets[cfg["model"]] = (dist_bench.load_arrays(cfg["dir"]),
                                      dist_bench.input_names(cfg["dir"]))
        arrays, names = datasets[cfg["model"]]
        r = dist_bench.ddp_train(rank, world, classes[cfg["model"]], arrays, names, cfg)
        print(json.dumps(r), flush=True)
    dist.destroy_process_group()


def model_dir(model):
    """examples/<model> when it has a model.onnx, else its export.py's output
    in bench/.cache/<model> (regenerated when the script changes)."""
    if os.path.exists(os.path.join(ROOT, "examples", model, "model.onnx")):
        return os.path.join(ROOT, "examples", model)
    if not os.path.exists(dist_bench.export_script(model)):
        raise SystemExit("no example %s (examples/%s/model.onnx or export.py)" % (model, model))
    return dist_bench.generated_model_dir(model)


def timed_steps(args, probe_step):
    return int(min(max(args.seconds / max(probe_step, 1e-6), 5), args.max_steps))


def median_run(runs):
    """The run with the median rate (its bytes and step time come with it)."""
    runs = sorted(runs, key=lambda r: r["samples_per_second"])
    return dict(runs[(len(runs) - 1) // 2], repeats=[r["samples_per_second"] for r in runs])


def measure(args, configs):
    """configs: [(key, label, run(w, t), compute(w, t) or None)]. Each gets a
    probe (--warmup + 3 steps, DDP 2 + 3) that sets its timed steps, or, slower than --slow a
    step, is the one measurement; then --repeat runs interleaved across the
    configurations (machine drift hits all of them), median kept. compute:
    its compute-only step time, measured right after each run."""
    plans, runs = {}, {}
    for key, label, run, compute in configs:
        # Parallax's warm-up holds the automatic partition search (9 steps
        # with several shards): a probe without it would time the search.
        warm = args.warmup if compute else 2
        probe = run(warm, 3)
        if probe["step_seconds"] > args.slow:
            probe.update(warmup=warm, timed=3, probe_only=True)
            if compute:
                probe["compute_only_step_seconds"] = compute(2, 3)
            runs[key] = [probe]
            print("  %-26s %9.1f samples/s  (one %d+3-step run: %.1f s a step)"
                  % (label, probe["samples_per_second"], warm, probe["step_seconds"]), flush=True)
        else:
            plans[key] = timed_steps(args, probe["step_seconds"])
            runs[key] = []
    for rep in range(args.repeat):
        for key, label, run, compute in configs:
            if key not in plans:
                continue
            r = run(args.warmup, plans[key])
            r.update(warmup=args.warmup, timed=plans[key], probe_only=False)
            if compute:
                r["compute_only_step_seconds"] = compute(args.warmup, min(plans[key], 40))
            runs[key].append(r)
            print("  %-26s %9.0f samples/s  (%d+%d steps, repeat %d)"
                  % (label, r["samples_per_second"], args.warmup, plans[key], rep + 1), flush=True)
    out = {}
    for key, label, run, compute in configs:
        r = median_run(runs[key])
        if compute:
            c = sorted(x["compute_only_step_seconds"] for x in runs[key])
            r["compute_only_step_seconds"] = c[(len(c) - 1) // 2]
            r["comm_share"] = 1 - r["compute_only_step_seconds"] / r["step_seconds"]
        out[key] = r
    return out


def compile_mode(parallaxc, onnx, batch, mode, prog):
    if PREBUILT:
        # --prebuilt DIR: what --prebuild DIR compiled there
        # against the same model path, batch and learning rate
        src = os.path.join(PREBUILT, os.path.basename(prog))
        if not os.access(src, os.X_OK):
            raise SystemExit("--prebuilt: no program %s" % src)
        shutil.copy(src, prog)
        return
    subprocess.run([parallaxc, "compile", onnx, "-o", prog, "--batch", str(batch),
                    "--optimizer", "sgd", "--lr", str(dist_bench.LR), "--comm", mode], check=True)


def prebuilt_inspect_path(directory, model, hosts):
    return os.path.join(directory, "%s.inspect-%d.json" % (model, hosts))


def inspect_report(parallaxc, onnx, batch, hosts):
    """`parallaxc inspect --comm auto --format json` at HOSTS ranks (text)."""
    return subprocess.run([parallaxc, "inspect", onnx, "--batch", str(batch), "--ranks", str(hosts),
                           "--comm", "auto", "--format", "json"], check=True, capture_output=True,
                          text=True).stdout


def parallax_config(cl, hosts, prog, data, work, key, label, flags=()):
    seen = {}

    def run(w, t):
        r = parallax(cl, hosts, prog, data, w, t, work, flags)
        seen["threads"] = r["threads_per_rank"]
        return r

    def compute(w, t):
        return compute_only(hosts, prog, data, w, t, work, seen.get("threads"))
    return (key, label, run, compute)


def bench_model(args, cl, parallaxc, work, model, ddp):
    mdir = model_dir(model)
    onnx, data = os.path.join(mdir, "model.onnx"), os.path.join(mdir, "data")
    hosts = cl["n"] if not args.hosts else args.hosts
    res = {"hosts": hosts}
    if PREBUILT:
        info = json.load(open(prebuilt_inspect_path(PREBUILT, model, hosts)))
    else:
        info = json.loads(inspect_report(parallaxc, onnx, args.batch, hosts))
    res["predicted_bytes_per_step"] = info.get("predicted_bytes_per_step")
    res["predicted_seconds_per_step"] = info.get("predicted_seconds_per_step")
    res["auto_sync"] = {v["name"]: v["sync"] for v in info["variables"]}
    print("%s on %d hosts:" % (model, hosts), flush=True)
    configs = []
    for mode in args.modes:
        prog = os.path.join(work, "%s-%s" % (model, mode))
        compile_mode(parallaxc, onnx, args.batch, mode, prog)
        configs.append(parallax_config(cl, hosts, prog, data, work, mode, mode))
        if mode == "hybrid" and args.no_overlap_peer:
            # the same program with every pull at its place: its step less
            # the compute-only step is the communication-only step
            configs.append(parallax_config(cl, hosts, prog, data, work, "hybrid_no_overlap",
                                           "hybrid --no-overlap", ("--no-overlap",)))
    for variant in args.ddp:
        configs.append(ddp_config(ddp, model, mdir, args.batch, variant))
    out = measure(args, configs)
    res["modes"] = {m: out[m] for m in args.modes}
    if "hybrid_no_overlap" in out:
        res["modes"]["hybrid_no_overlap"] = out["hybrid_no_overlap"]
    res["ddp"] = {v: out["ddp_" + v] for v in args.ddp}
    return res


def scaling(args, cl, parallaxc, work, model):
    mdir = model_dir(model)
    onnx, data = os.path.join(mdir, "model.onnx"), os.path.join(mdir, "data")
    configs = []
    for mode in args.scaling_modes:
        prog = os.path.join(work, "%s-%s" % (model, mode))
        compile_mode(parallaxc, onnx, args.batch, mode, prog)
        for hosts in [h for h in (1, 2, 4, 8) if h <= cl["n"]]:
            configs.append(parallax_config(cl, hosts, prog, data, work, (mode, hosts),
                                           "%s, %d hosts" % (mode, hosts)))
    out = {}
    for (mode, hosts), r in measure(args, configs).items():
        out.setdefault(mode, {})[hosts] = r
    return out


def parse_setting(text):
    """"MODE [RUN FLAGS]": MODE is the compile's --comm, the rest the
    program's flags (--wire, --sync-every, --staleness ...)."""
    words = text.split()
    if not words or words[0] not in MODES:
        raise SystemExit("setting '%s' must start with a --comm mode (%s)" % (text, ", ".join(MODES)))
    return {"name": " ".join(words), "comm": words[0], "flags": words[1:]}


RATE_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def rate_bits(rate):
    """tc's rate ("1gbit", "250mbit") in bits per second."""
    m = re.fullmatch(r"([0-9.]+)([a-z]*)", rate.strip().lower())
    if not m or m.group(2) not in RATE_UNITS:
        raise SystemExit("cannot read the link rate '%s' (e.g. 1gbit, 250mbit)" % rate)
    return float(m.group(1)) * RATE_UNITS[m.group(2)]


class Straggler:
    """One host (the last) slowed while a run lasts: "cpu:C" caps its CPU
    cgroup (run.sh puts every process of host i in one) at C cores;
    "link:F" shapes both ends of its link at F times the cluster's rate."""

    def __init__(self, cl, spec):
        kind, _, value = spec.partition(":")
        try:
            self.value = float(value)
        except ValueError:
            self.value = 0
        if kind not in ("cpu", "link") or self.value <= 0 or (kind == "link" and self.value > 1):
            raise SystemExit("--straggler: '%s' is not cpu:CORES (> 0) or link:FRACTION "
                             "(0 < F <= 1)" % spec)
        self.kind, self.cl, self.host = kind, cl, cl["n"] - 1
        if kind == "cpu" and not cl.get("cgroup_kind"):
            raise SystemExit("--straggler cpu: this cluster has no writable CPU cgroups "
                             "(run.sh found neither cgroup v2's cpu nor v1's cpu controller)")
        self.rate = rate_bits(cl["rate"])

    def describe(self):
        if self.kind == "cpu":
            return "host%d's CPU cgroup capped at %g cores" % (self.host, self.value)
        return "host%d's link at %g of %s" % (self.host, self.value, self.cl["rate"])

    def _cpu(self, cores):
        path = self.cl["cgroup_prefix"] + str(self.host)
        period = 100000
        quota = "%d" % (cores * period) if cores else None
        if self.cl["cgroup_kind"] == "v2":
            with open(os.path.join(path, "cpu.max"), "w") as f:
                f.write("%s %d" % (quota or "max", period))
        else:
            with open(os.path.join(path, "cpu.cfs_period_us"), "w") as f:
                f.write(str(period))
            with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
                f.write(quota or "-1")

    def _link(self, bits):
        shape = ["root", "tbf", "rate", "%dbit" % bits, "burst", "256kb", "latency", "50ms"]
        veth = "%s-v%d" % (self.cl["prefix"], self.host)
        ns = "%s-h%d" % (self.cl["prefix"], self.host)
        subprocess.run(["tc", "qdisc", "change", "dev", veth] + shape, check=True)
        subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "change", "dev",
                        self.cl["iface"]] + shape, check=True)

    def slow(self):
        if self.kind == "cpu":
            self._cpu(self.value)
        else:
            self._link(self.rate * self.value)

    def restore(self):
        if self.kind == "cpu":
            self._cpu(None)
        else:
            self._link(self.rate)


def straggler(args, cl, parallaxc, work, model):
    """Each --straggler-settings setting at all hosts, unslowed and with
    one host slowed, interleaved: {setting: {"unslowed": r, "slowed": r}}."""
    mdir = model_dir(model)
    onnx, data = os.path.join(mdir, "model.onnx"), os.path.join(mdir, "data")
    slow = Straggler(cl, args.straggler)
    settings = [parse_setting(t) for t in args.straggler_settings.split("|") if t.strip()]
    configs = []
    for st in settings:
        prog = os.path.join(work, "%s-%s" % (model, st["comm"]))
        if not os.path.exists(prog):
            compile_mode(parallaxc, onnx, args.batch, st["comm"], prog)
        for slowed in (False, True):
            def run(w, t, prog=prog, flags=st["flags"], slowed=slowed):
                if not slowed:
                    return parallax(cl, cl["n"], prog, data, w, t, work, flags)
                slow.slow()
                try:
                    return parallax(cl, cl["n"], prog, data, w, t, work, flags)
                finally:
                    slow.restore()
            configs.append(((st["name"], slowed), "%s%s" % (st["name"], ", slowed" if slowed else ""),
                            run, None))
    out = {"straggler": slow.describe(), "hosts": cl["n"], "settings": {}}
    for (name, slowed), r in measure(args, configs).items():
        out["settings"].setdefault(name, {})["slowed" if slowed else "unslowed"] = r
    return out


def report_straggler(model, st):
    print()
    print("straggler, %s, %d hosts: %s" % (model, st["hosts"], st["straggler"]))
    print("%-30s %11s %11s %9s %9s" % ("setting", "unslowed", "slowed", "kept", "threads"))
    for name, r in st["settings"].items():
        u, s = r["unslowed"]["samples_per_second"], r["slowed"]["samples_per_second"]
        print("%-30s %11.0f %11.0f %8.0f%% %9s" % (name, u, s, 100 * s / u,
                                                   r["unslowed"].get("threads_per_rank") or "?"))


def fmt_bytes(b):
    return dist_bench.fmt_bytes(b)


def report_targets(model, m):
    """The ratios issue 10 sets targets for, from this run: hybrid against
    the better DDP variant, allreduce and ps (LM1B-like: >= 2.5, 8, 1.5),
    against the better of ps and allreduce (recommender: >= 1), and the step
    against max(compute-only step, communication-only step) (<= 1.25), where
    the communication-only step is estimated as the step of the same program
    run with --no-overlap (nothing hidden but the AllReduce's overlap with
    the backward pass) less the compute-only step."""
    modes, ddp = m["modes"], m["ddp"]
    rate = {k: v["samples_per_second"] for k, v in modes.items()}
    for k, v in ddp.items():
        rate["ddp_" + k] = v["samples_per_second"]
    if "hybrid" not in rate:
        return
    lm = "lm" in model
    rows = []
    best_ddp = max([v for k, v in rate.items() if k.startswith("ddp_")], default=None)
    if best_ddp:
        rows.append(("hybrid / best DDP", rate["hybrid"] / best_ddp, ">= 2.5" if lm else "", 2.5))
    for other, goal in (("allreduce", 8), ("ps", 1.5)):
        if other in rate:
            rows.append(("hybrid / %s" % other, rate["hybrid"] / rate[other],
                         ">= %g" % goal if lm else "", goal))
    if "hybrid_no_overlap" in rate:
        rows.append(("hybrid / hybrid --no-overlap", rate["hybrid"] / rate["hybrid_no_overlap"],
                     "", 0))
    pure = [rate[k] for k in ("ps", "allreduce") if k in rate]
    if pure:
        rows.append(("hybrid / max(ps, allreduce)", rate["hybrid"] / max(pure),
                     "" if lm else ">= 1", 1))
    h = modes["hybrid"]
    compute, comm, bound = h.get("compute_only_step_seconds"), None, None
    if compute and "hybrid_no_overlap" in modes:
        comm = max(modes["hybrid_no_overlap"]["step_seconds"] - compute, 0)
        bound = h["step_seconds"] / max(compute, comm)
    print()
    print("%s: target ratios (this run)" % model)
    for name, value, target, goal in rows:
        met = "" if not target else ("met" if value >= goal else "NOT met")
        print("  %-30s %7.2f  %-7s %s" % (name, value, target, met))
    if bound is not None:
        print("  %-30s %7.2f  %-7s %s   (step %.1f ms, compute-only %.1f ms, comm-only %.1f ms)"
              % ("hybrid step / max(comp, comm)", bound, "<= 1.25",
                 "met" if bound <= 1.25 else "NOT met", 1e3 * h["step_seconds"], 1e3 * compute,
                 1e3 * comm))


def report(res):
    print()
    print("simulated cluster: %d hosts, links %s (tbf), one rank per host, batch %d per rank, "
          "SGD (load average %.1f -> %.1f)" % (res["hosts"], res["rate"], res["batch"],
                                               res["loadavg_before"], res["loadavg_after"]))
    for model, m in res["models"].items():
        print()
        print("%s, %d hosts" % (model, m["hosts"]))
        print("%-18s %11s %11s %11s %11s %9s %9s %11s  bytes/rank/step: %s" % (
            "config", "samples/s", "step ms", "compute ms", "comm share", "hidden", "comm CPU",
            "vs hybrid", " ".join("%9s" % k for k in KINDS)))
        hyb = m["modes"].get("hybrid", {}).get("samples_per_second", float("nan"))
        rows = [(k, v) for k, v in m["modes"].items()] + \
               [("ddp_" + k, v) for k, v in m["ddp"].items()]
        for name, r in rows:
            star = "*" if r.get("probe_only") else ""
            compute = r.get("compute_only_step_seconds")
            share = r.get("comm_share")
            hidden = r.get("comm_hidden_fraction")
            ccpu = r.get("comm_thread_cpu_share")
            b = r.get("bytes_per_rank")
            print("%-18s %10.0f%1s %11.1f %11s %11s %9s %9s %11.2f  %s" % (
                name, r["samples_per_second"], star, 1e3 * r["step_seconds"],
                "%.1f" % (1e3 * compute) if compute else "-",
                "%.0f%%" % (100 * share) if share is not None else "-",
                "%.0f%%" % (100 * hidden) if hidden is not None else "-",
                "%.0f%%" % (100 * ccpu) if ccpu is not None else "-",
                hyb / r["samples_per_second"],
                " ".join("%9s" % fmt_bytes(b[k]) for k in KINDS) if b else "(gloo: not counted)"))
        hr = m["modes"].get("hybrid") or next(iter(m["modes"].values()), None)
        if hr and hr.get("threads_per_rank"):
            print("compute threads per Parallax rank: %d (%s); DDP: %d" % (
                hr["threads_per_rank"], hr.get("threads_from") or "?", ddp_threads(m["hosts"])))
        if m.get("predicted_seconds_per_step"):
            print("predicted seconds per step (inspect --ranks %d): %s" % (
                m["hosts"], ", ".join("%s %.2f ms" % (k, 1e3 * v)
                                      for k, v in m["predicted_seconds_per_step"].items())))
    for model, m in res["models"].items():
        report_targets(model, m)
    if any(r.get("probe_only") for m in res["models"].values()
           for r in list(m["modes"].values()) + list(m["ddp"].values())):
        print("*: slower than --slow per step: the probe (--warmup + 3 steps; DDP 2 + 3) is the "
              "measurement")
    for model, st in res.get("straggler", {}).items():
        report_straggler(model, st)
    for model, sc in res.get("scaling", {}).items():
        print()
        print("scaling, %s" % model)
        print("%-10s %6s %11s %11s %11s %11s %11s %13s" % (
            "mode", "hosts", "samples/s", "efficiency", "step ms", "compute ms", "comm share",
            "bytes/rank"))
        for mode, by_hosts in sc.items():
            base = by_hosts.get(1, {}).get("samples_per_second")
            for hosts, r in sorted(by_hosts.items()):
                eff = r["samples_per_second"] / (hosts * base) if base else float("nan")
                print("%-10s %6d %11.0f %11.2f %11.1f %11.1f %10.0f%% %13s" % (
                    mode, hosts, r["samples_per_second"], eff, 1e3 * r["step_seconds"],
                    1e3 * r["compute_only_step_seconds"], 100 * r["comm_share"],
                    fmt_bytes(r["bytes_total"])))


def prebuild(args):
    """--prebuild DIR: the programs and inspect reports --prebuilt DIR reads."""
    if not args.hosts:
        raise SystemExit("--prebuild needs --hosts (the inspect report is per host count)")
    out = os.path.abspath(args.prebuild)
    os.makedirs(out, exist_ok=True)
    parallaxc = os.path.abspath(args.parallaxc)
    for model in [m for m in args.models.split(",") if m]:
        onnx = os.path.join(model_dir(model), "model.onnx")
        for mode in sorted(set(args.modes) | set(args.scaling_modes)):
            compile_mode(parallaxc, onnx, args.batch, mode, os.path.join(out, "%s-%s" % (model, mode)))
        with open(prebuilt_inspect_path(out, model, args.hosts), "w") as f:
            f.write(inspect_report(parallaxc, onnx, args.batch, args.hosts))
        print("prebuilt %s into %s" % (model, out), flush=True)


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--ddp-worker":
        ddp_worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
        return
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc")
    ap.add_argument("--models", default="recommender_large",
                    help="comma-separated examples (e.g. recommender_large,lstm_lm)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--ddp", default="dense,sparse,fp16",
                    help="DDP variants: dense, sparse (nn.Embedding sparse=True), fp16 (dense "
                         "with PyTorch's fp16_compress_hook), or none")
    ap.add_argument("--hosts", type=int, default=0, help="hosts to use (default: all)")
    ap.add_argument("--batch", type=int, default=32, help="per-rank batch")
    ap.add_argument("--seconds", type=float, default=8.0, help="timed seconds per run (about)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--max-steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved runs, median kept")
    ap.add_argument("--slow", type=float, default=1.5,
                    help="seconds a step above which the probe is the measurement")
    ap.add_argument("--no-overlap-peer", type=int, default=1,
                    help="1 (default): also run hybrid with --no-overlap (the communication-only "
                         "step of the ratios); 0: not")
    ap.add_argument("--scaling", action="store_true", help="also the 1/2/4/8-host scaling")
    ap.add_argument("--scaling-only", action="store_true")
    ap.add_argument("--scaling-model", default="recommender_large")
    ap.add_argument("--scaling-modes", default="hybrid")
    ap.add_argument("--straggler", metavar="cpu:CORES|link:FRACTION",
                    help="also run --straggler-settings on --straggler-model at all hosts, "
                         "unslowed and with the last host slowed: its CPU cgroup capped at "
                         "CORES cores, or its link at FRACTION of the rate")
    ap.add_argument("--straggler-only", action="store_true")
    ap.add_argument("--straggler-model", default="lm1b")
    ap.add_argument("--straggler-settings", default="hybrid|hybrid --staleness 2",
                    help="'MODE [RUN FLAGS]|...' (e.g. 'hybrid|hybrid --staleness 2')")
    ap.add_argument("--json", help="write every measurement to this file")
    ap.add_argument("--prebuilt", metavar="DIR",
                    help="take the programs and inspect reports from DIR (made by --prebuild) "
                         "instead of compiling: for a machine without the compiler; PARALLAXC "
                         "is then ignored")
    ap.add_argument("--prebuild", metavar="DIR",
                    help="only compile --models in every --modes and write their inspect "
                         "reports for --hosts hosts into DIR (no cluster needed); the models "
                         "must be at the same path on the machine that runs --prebuilt DIR")
    args = ap.parse_args()
    if args.straggler_only and not args.straggler:
        ap.error("--straggler-only wants --straggler cpu:CORES or link:FRACTION")
    if args.prebuild and args.prebuilt:
        ap.error("--prebuild and --prebuilt: one compiles, the other runs what it compiled")
    global PREBUILT
    PREBUILT = os.path.abspath(args.prebuilt) if args.prebuilt else None
    args.modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in args.modes if m not in MODES]
    if bad:
        ap.error("unknown mode(s) %s" % ",".join(bad))
    args.ddp = [d for d in args.ddp.split(",") if d and d != "none"]
    bad = [d for d in args.ddp if d not in DDP_VARIANTS]
    if bad:
        ap.error("--ddp: unknown variant(s) %s (dense, sparse, fp16)" % ",".join(bad))
    args.scaling_modes = [m for m in args.scaling_modes.split(",") if m]
    if args.prebuild:
        prebuild(args)
        return
    cl = cluster()
    if args.hosts > cl["n"]:
        ap.error("--hosts %d: the cluster has %d" % (args.hosts, cl["n"]))
    parallaxc = os.path.abspath(args.parallaxc)
    work = tempfile.mkdtemp(prefix="pxcluster-bench-")
    res = {"hosts": args.hosts or cl["n"], "rate": cl["rate"], "batch": args.batch,
           "loadavg_before": os.getloadavg()[0], "models": {}}
    t0 = time.perf_counter()
    try:
        if not args.scaling_only and not args.straggler_only:
            ddp = ddp_cluster(cl, res["hosts"]) if args.ddp else None
            try:
                for model in [m for m in args.models.split(",") if m]:
                    res["models"][model] = bench_model(args, cl, parallaxc, work, model, ddp)
            finally:
                if ddp:
                    ddp.close()
        if (args.scaling or args.scaling_only) and not args.straggler_only:
            res["scaling"] = {args.scaling_model: scaling(args, cl, parallaxc, work,
                                                          args.scaling_model)}
        if args.straggler:
            res["straggler"] = {args.straggler_model: straggler(args, cl, parallaxc, work,
                                                                args.straggler_model)}
    finally:
        subprocess.run(["rm", "-rf", work])
    res["seconds"] = time.perf_counter() - t0
    res["loadavg_after"] = os.getloadavg()[0]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    report(res)


if __name__ == "__main__":
    main()
