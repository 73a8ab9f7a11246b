#!/usr/bin/python3
"""GEMM rate of a compiled MatMul layer against OpenBLAS's own cblas_sgemm on
the same shapes, single-threaded, measured in the same run.

usage: bench/gemm.py PARALLAXC [--m 64 --k 4096 --n 1024] [--reps 40] [--repeat 5]

Ours: `parallaxc compile --infer` of a one-MatMul model (x[M,K] @ W[K,N], W an
initializer); the program's `--bench-steps reps` times its compiled step on
one batch (mean per step). Peer: a C loop over cblas_sgemm on the same shapes,
timed inside its process (mean of reps calls); both run --repeat times,
interleaved, and the medians are compared.
Reported: GFLOP/s of each and ours/peer.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

os.environ["OPENBLAS_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402

for _alias, _t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _t)
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

PEER = r"""
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    int m = atoi(argv[1]), k = atoi(argv[2]), n = atoi(argv[3]), reps = atoi(argv[4]);
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n), *c = malloc(sizeof(float) * m * n);
    for (long i = 0; i < (long)m * k; i++) a[i] = (float)(i % 7) * 0.1f;
    for (long i = 0; i < (long)k * n; i++) b[i] = (float)(i % 5) * 0.1f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < reps; r++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.9f\n", ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / reps);
    return c[0] == 12345.0f;
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parallaxc")
    ap.add_argument("--m", type=int, default=64)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=11)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="pxgemm-")
    try:
        rng = np.random.RandomState(0)
        w = rng.rand(a.k, a.n).astype(np.float32)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])], "gemm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", a.k])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", a.n])],
            [numpy_helper.from_array(w, "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        mpath = os.path.join(work, "gemm.onnx")
        onnx.save(model, mpath)
        prog = os.path.join(work, "prog")
        subprocess.run([a.parallaxc, "compile", "--infer", mpath, "--batch", str(a.m), "-o", prog], check=True)
        d = os.path.join(work, "data")
        os.makedirs(d)
        np.save(os.path.join(d, "x.npy"), rng.rand(a.m, a.k).astype(np.float32))
        cmd = [prog, "--data", d, "--out", os.path.join(work, "out"), "--bench-steps", str(a.reps)]
        src = os.path.join(work, "peer.c")
        open(src, "w").write(PEER)
        peer_bin = os.path.join(work, "peer")
        cflags = subprocess.run(["pkg-config", "--cflags", "--libs", "openblas"], capture_output=True, text=True, check=True).stdout.split()
        subprocess.run(["cc", "-O2", "-o", peer_bin, src] + cflags, check=True)
        peer_cmd = [peer_bin, str(a.m), str(a.k), str(a.n), str(a.reps)]
        # Interleaved, so drift in the machine's speed hits both sides alike.
        ours_runs, peer_runs = [], []
        for _ in range(a.repeat):
            line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            ours_runs.append(float(line.split("mean ")[1].split(" us")[0]) * 1e-6)
            peer_runs.append(float(subprocess.run(peer_cmd, capture_output=True, text=True, check=True).stdout))
        ours = statistics.median(ours_runs)
        peer = statistics.median(peer_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    flop = 2.0 * a.m * a.k * a.n
    print("GEMM %dx%dx%d, 1 thread: parallax %.1f GFLOP/s, OpenBLAS sgemm %.1f GFLOP/s, ratio %.3f"
          % (a.m, a.k, a.n, flop / ours / 1e9, flop / peer / 1e9, peer / ours))


if __name__ == "__main__":
    main()
