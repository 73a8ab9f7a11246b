#!/usr/bin/python3
"""ONNX backend conformance through the shipped command line.

For every test folder of Debian's libonnx-testdata this compiles the model
with `parallaxc compile --infer`, feeds test_data_set_*/input_K.pb to the
program (paired with the graph's non-initializer inputs by position), and
compares every output with ONNX's tolerance: |out - ref| <= 1e-7 + 1e-3*|ref|,
NaN equals NaN, integers exact, shapes exact.

A test whose model uses an operator the compiler rejects as unsupported is
counted as unsupported, not failed. Every other failure fails the run unless
tests/conformance/allowlist.txt names the test (with a reason).

usage: run.py PARALLAXC [--jobs N] [--only SUBSTR,...] [--report FILE] [--keep DIR]
"""
import argparse
import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

for _alias, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _t)
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

TESTDATA = "/usr/share/libonnx-testdata/data"
SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")
HERE = os.path.dirname(os.path.abspath(__file__))
UNSUPPORTED_MARKERS = ("unsupported operator", "does not support", "not supported by the code generator")


def load_allowlist(path):
    names = {}
    if os.path.exists(path):
        for line in open(path):
            body, _, reason = line.partition("#")
            if body.strip():
                names[body.strip()] = reason.strip()
    return names


def runtime_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def file_name(name):
    return name.replace("/", "_").replace(":", "_")


def compare(out, ref):
    if out.dtype != ref.dtype:
        return "dtype %s, expected %s" % (out.dtype, ref.dtype)
    if out.shape != ref.shape:
        return "shape %s, expected %s" % (out.shape, ref.shape)
    if ref.dtype.kind == "f":
        o = out.astype(np.float64)
        r = ref.astype(np.float64)
        both_nan = np.isnan(o) & np.isnan(r)
        same_inf = np.isinf(r) & (o == r)
        with np.errstate(invalid="ignore"):  # inf - inf is handled by same_inf
            ok = (np.abs(o - r) <= 1e-7 + 1e-3 * np.abs(r)) | both_nan | same_inf
        if not ok.all():
            i = int(np.argmin(ok.reshape(-1)))
            return "element %d: %r, expected %r" % (i, o.reshape(-1)[i], r.reshape(-1)[i])
    elif not np.array_equal(out, ref):
        i = int(np.argmax((out != ref).reshape(-1)))
        return "element %d: %r, expected %r" % (i, out.reshape(-1)[i], ref.reshape(-1)[i])
    return None


def run_test(parallaxc, test_dir, name, keep):
    """Returns (status, detail) with status in pass / FAIL / unsupported."""
    work = tempfile.mkdtemp(prefix="pxconf-")
    try:
        prog = os.path.join(work, "prog")
        cp = subprocess.run([parallaxc, "compile", "--infer", os.path.join(test_dir, "model.onnx"),
                             "-o", prog], capture_output=True, text=True, timeout=300)
        if cp.returncode != 0:
            err = (cp.stderr or cp.stdout).strip().replace("\n", " | ")
            if any(m in err for m in UNSUPPORTED_MARKERS):
                return "unsupported", err[:300]
            return "FAIL", "compile: " + err[:400]
        model = onnx.load(os.path.join(test_dir, "model.onnx"))
        inputs = runtime_inputs(model)
        outputs = [o.name for o in model.graph.output]
        sets = sorted(d for d in os.listdir(test_dir) if d.startswith("test_data_set_"))
        if not sets:
            return "FAIL", "no test_data_set folders"
        for s in sets:
            sdir = os.path.join(test_dir, s)
            data = os.path.join(work, s, "in")
            out = os.path.join(work, s, "out")
            os.makedirs(data)
            n_in = len([f for f in os.listdir(sdir) if f.startswith("input_")])
            if n_in != len(inputs):
                return "FAIL", "%s: %d input files for %d graph inputs" % (s, n_in, len(inputs))
            for k, iname in enumerate(inputs):
                shutil.copy(os.path.join(sdir, "input_%d.pb" % k),
                            os.path.join(data, file_name(iname) + ".pb"))
            rp = subprocess.run([prog, "--data", data, "--out", out], capture_output=True,
                                text=True, timeout=300)
            if rp.returncode != 0:
                return "FAIL", "%s: program exited %d: %s" % (s, rp.returncode,
                                                              rp.stderr.strip()[:300])
            for k, oname in enumerate(outputs):
                ref_path = os.path.join(sdir, "output_%d.pb" % k)
                if not os.path.exists(ref_path):
                    continue
                t = onnx.TensorProto()
                t.ParseFromString(open(ref_path, "rb").read())
                ref = numpy_helper.to_array(t)
                got = np.load(os.path.join(out, file_name(oname) + ".npy"))
                why = compare(got, ref)
                if why:
                    return "FAIL", "%s output %d ('%s'): %s" % (s, k, oname, why)
        return "pass", ""
    except subprocess.TimeoutExpired as e:
        return "FAIL", "timed out: %s" % " ".join(e.cmd[:2])
    except Exception as e:  # a broken test folder or output file is a failure, not a crash
        return "FAIL", "%s: %s" % (type(e).__name__, e)
    finally:
        if keep:
            shutil.copytree(work, os.path.join(keep, name), dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default="", help="comma-separated substrings of test names")
    ap.add_argument("--report", help="write a TSV line per test here")
    ap.add_argument("--keep", help="keep each test's work folder under this folder")
    ap.add_argument("--allowlist", default=os.path.join(HERE, "allowlist.txt"))
    args = ap.parse_args()

    args.parallaxc = os.path.abspath(args.parallaxc)
    allow = load_allowlist(args.allowlist)
    only = [s for s in args.only.split(",") if s]
    tests = []
    for suite in SUITES:
        sdir = os.path.join(TESTDATA, suite)
        if not os.path.isdir(sdir):
            continue
        for name in sorted(os.listdir(sdir)):
            d = os.path.join(sdir, name)
            if os.path.exists(os.path.join(d, "model.onnx")) and (not only or any(o in name for o in only)):
                tests.append((name, d))
    if not tests:
        print("error: no backend tests found under %s" % TESTDATA, file=sys.stderr)
        return 1

    results = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = {ex.submit(run_test, args.parallaxc, d, n, args.keep): n for n, d in tests}
        for f in cf.as_completed(futs):
            results[futs[f]] = f.result()

    passed = failed = allowed = unsupported = 0
    stale = []
    for name, _ in tests:
        status, detail = results[name]
        if status == "pass":
            passed += 1
            if name in allow:
                stale.append(name)
        elif status == "unsupported":
            unsupported += 1
        elif name in allow:
            allowed += 1
        else:
            failed += 1
            print("FAIL %s: %s" % (name, detail))
    if args.report:
        with open(args.report, "w") as f:
            for name, _ in tests:
                f.write("%s\t%s\t%s\n" % (name, *results[name]))
    for name in stale:
        print("note: allowlisted test %s passes now: remove it from the allowlist" % name)
    print("conformance: %d tests, %d unsupported, %d allowlisted failures" % (len(tests), unsupported, allowed))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
