#!/usr/bin/python3
"""Checks for tests/cli/train_runtime.sh (run with /usr/bin/python3).

Independent re-implementations of what the training runtime promises, to
compare its files against:
  data DIR N D SEED            writes x, cat, y, sample_id .npy (sample_id = row)
  order PREFIX RANKS B STEPS N [SEED]
                               the trace of the fake program (PREFIX.<rank>,
                               lines "t rank ids...") equals design.md's order
  reference OPTIM DATA STEPS GLOBAL_B CSV ONNX [SEED]
                               trains the fake model in float64 numpy and
                               compares the losses CSV (steps K..STEPS) and
                               the saved weights
  onnx ONNX                    loads with onnx, checks the model, prints initializers
  ckpt CKPT ONNX STEP          parses the checkpoint format (manifest and
                               pieces, every hash) and compares its weights
                               with the ONNX file, bit for bit
  same_ckpt CKPT1 CKPT2        two checkpoints hold the same state bit for
                               bit, whatever ranks and partitions wrote them
  stats JSON STEPS RANKS       the --stats file has the documented keys
Exit status 0 when the check passes; messages say what differs."""
import json
import struct
import sys

import numpy as np

for alias, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, t)  # python3-onnx 1.12 predates NumPy 1.24

M64 = (1 << 64) - 1
W0 = [0.5, -0.25, 0.125, 1.0]
BIAS0 = 0.1
EMB0 = [0.0, 0.1, -0.1, 0.2, -0.2, 0.3, -0.3, 0.4]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def permutation(seed, epoch, n):
    state = mix(seed ^ mix((epoch + 1) & M64))
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        bound = i + 1
        threshold = (1 << 64) % bound
        while True:
            state = (state + 0x9E3779B97F4A7C15) & M64
            x = mix(state)
            if x >= threshold:
                break
        j = x % bound
        p[i], p[j] = p[j], p[i]
    return p


def global_batch_ids(step, n, gb, seed):
    spe = n // gb
    e = step // spe
    pos = [(step % spe) * gb + k for k in range(gb)]
    if seed is None:
        return pos
    perm = permutation(seed, e, n)
    return [perm[q] for q in pos]


def cmd_data(d, n, dim, seed):
    n, dim, seed = int(n), int(dim), int(seed)
    rng = np.random.default_rng(seed)
    np.save(f"{d}/x.npy", rng.standard_normal((n, dim)).astype(np.float32))
    np.save(f"{d}/y.npy", rng.standard_normal(n).astype(np.float32))
    np.save(f"{d}/cat.npy", rng.integers(0, 8, n).astype(np.int64))
    np.save(f"{d}/sample_id.npy", np.arange(n, dtype=np.int64))


def cmd_order(prefix, ranks, b, steps, n, seed=None):
    ranks, b, steps, n = int(ranks), int(b), int(steps), int(n)
    seed = None if seed is None else int(seed)
    for r in range(ranks):
        lines = open(f"{prefix}.{r}").read().split("\n")[:-1]
        if len(lines) != steps:
            fail(f"rank {r} traced {len(lines)} steps, expected {steps}")
        for s, line in enumerate(lines):
            f = [int(v) for v in line.split()]
            want = global_batch_ids(s, n, ranks * b, seed)[r * b:(r + 1) * b]
            if f[0] != s + 1 or f[1] != r or f[2:] != want:
                fail(f"rank {r} step {s + 1}: read samples {f[2:]} (t={f[0]}), expected {want}")
    print(f"order ok: {ranks} rank(s), {steps} steps, seed {seed}")


def read_csv(path):
    lines = open(path).read().split("\n")
    if lines[0] != "step,loss,lr" or lines[-1] != "":
        fail(f"{path}: not a 'step,loss,lr' CSV")
    rows = [line.split(",") for line in lines[1:-1]]
    return [int(s) for s, _, _ in rows], np.array([float(v) for _, v, _ in rows])


def onnx_initializers(path):
    import onnx
    from onnx import numpy_helper

    m = onnx.load(path)
    onnx.checker.check_model(m)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def cmd_reference(optim, d, steps, gb, csv, onnx_path, seed=None):
    steps, gb = int(steps), int(gb)
    seed = None if seed is None else int(seed)
    x = np.load(f"{d}/x.npy").astype(np.float64)
    y = np.load(f"{d}/y.npy").astype(np.float64)
    cat = np.load(f"{d}/cat.npy")
    n = len(y)
    w = np.array(W0 + [0.0] * (x.shape[1] - 4))
    bias = np.array([BIAS0])
    emb = np.array(EMB0)
    params = [w, bias, emb]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    lr = 0.1 if optim == "sgd" else 0.05
    b1, b2, eps = 0.9, 0.999, 1e-8
    losses = []
    for s in range(steps):
        ids = global_batch_ids(s, n, gb, seed)
        X, Y, C = x[ids], y[ids], cat[ids]
        diff = X @ w + bias[0] + emb[C] - Y
        losses.append(0.5 * np.mean(diff * diff))
        r = diff / gb
        gemb = np.zeros_like(emb)
        np.add.at(gemb, C, r)
        grads = [X.T @ r, np.array([r.sum()]), gemb]
        t = s + 1
        for i, (p, g) in enumerate(zip(params, grads)):
            if optim == "sgd":
                p -= lr * g
                continue
            # Adam; the PS variable's rows are lazy: untouched rows keep
            # their value and moments (px_train.h).
            rows = np.unique(C) if i == 2 else slice(None)
            m[i][rows] = b1 * m[i][rows] + (1 - b1) * g[rows]
            v[i][rows] = b2 * v[i][rows] + (1 - b2) * g[rows] ** 2
            denom = np.sqrt(v[i][rows]) / np.sqrt(1 - b2**t) + eps
            p[rows] -= lr / (1 - b1**t) * m[i][rows] / denom
    # A resumed run's file may hold only its own steps: first..steps.
    got_steps, got = read_csv(csv)
    first = got_steps[0] if got_steps else 1
    if got_steps != list(range(first, steps + 1)):
        fail(f"{csv}: steps {got_steps[:5]}..., expected {first}..{steps}")
    losses = losses[first - 1:]
    if not np.allclose(got, losses, rtol=1e-5, atol=1e-6):
        fail(f"losses differ from the reference:\n  got  {got}\n  want {np.array(losses)}")
    init = onnx_initializers(onnx_path)
    for name, want in (("w", w), ("bias", bias), ("emb", emb)):
        if name not in init or init[name].dtype != np.float32:
            fail(f"{onnx_path}: no float32 initializer '{name}'")
        if not np.allclose(init[name], want, rtol=1e-5, atol=1e-6):
            fail(f"{onnx_path}: '{name}' = {init[name]}, reference {want}")
    print(f"reference ok ({optim}, {steps} steps): final loss {got[-1]:.6f} vs {losses[-1]:.6f}, "
          f"max weight error {max(np.abs(init[k] - p).max() for k, p in zip(('w', 'bias', 'emb'), params)):.2e}")


def cmd_onnx(path):
    init = onnx_initializers(path)
    if sorted(init) != ["bias", "emb", "half", "w"]:
        fail(f"{path}: initializers {sorted(init)}, expected half (frozen) + w, bias, emb")
    if init["half"] != np.float32(0.5):
        fail(f"{path}: the frozen initializer 'half' changed: {init['half']}")
    print("onnx ok:", {k: v.tolist() for k, v in init.items()})


M64_INIT = 0x6a09e667f3bcc909


def px_hash64(h, data):
    """runtime/program/hash64.c, one call."""
    def rnd(h, w):
        h ^= (w * 0x9e3779b97f4a7c15) & M64
        h = ((h << 27) | (h >> 37)) & M64
        return (h * 0xff51afd7ed558ccd + 0x52dce729) & M64
    n = len(data)
    words = n // 8
    for (w,) in struct.iter_unpack("<Q", data[:8 * words]):
        h = rnd(h, w)
    tail = int.from_bytes(data[8 * words:], "little")
    return rnd(rnd(h, tail), n)


def hash_pieces(data):
    """The manifest checksum: px_hash64 over 1 MiB pieces."""
    h = M64_INIT
    for off in range(0, len(data), 1 << 20):
        h = px_hash64(h, data[off:off + (1 << 20)])
    return h


def read_checkpoint(path):
    """Parses a version 4 checkpoint (runtime/program/checkpoint.h): the
    manifest and its pieces; returns (step, n_slots, {name: (weights, slots)})
    with every block hash and the checksum checked; the masks of masked
    weights are read and checked for shape, not returned."""
    import os
    data = open(path, "rb").read()
    if data[:8] != b"PXCKPT\r\n" or data[-8:] != b"PXCKEND\n":
        fail(f"{path}: bad magic")
    (sum_,) = struct.unpack_from("<Q", data, len(data) - 16)
    if hash_pieces(data[:-16]) != sum_:
        fail(f"{path}: checksum mismatch")
    off = 8

    def i64(n=1):
        nonlocal off
        v = struct.unpack_from(f"<{n}q", data, off)
        off += 8 * n
        return v if n > 1 else v[0]

    def text():
        nonlocal off
        n = i64()
        off += n
        return data[off - n:off].decode()

    version, _ident, _kind, n_slots, n_vars, step = i64(6)
    i64(9)  # run state
    text()  # model
    i64()  # nonce
    pieces = []
    for _ in range(i64()):
        name, size = text(), i64()
        f = os.path.join(os.path.dirname(path), name)
        if "/" in name or os.path.getsize(f) != size:
            fail(f"{path}: piece {name} missing or not {size} bytes")
        pieces.append(open(f, "rb").read())
    if version != 4:
        fail(f"{path}: version {version}")
    out = {}
    for _ in range(n_vars):
        name = text()
        rank = i64()
        dims = [i64() for _ in range(rank)]
        rows, dim, n_segs = i64(), i64(), i64()
        if rows != (dims[0] if rank else 1) or rows * dim != int(np.prod(dims)):
            fail(f"{path}: '{name}' stored as {rows} rows of {dim}")
        arrays = np.zeros((rows, 1 + n_slots, dim), np.float32)
        nxt = 0
        for _ in range(n_segs):
            piece, row0, nrows, at, block = i64(5)
            if row0 != nxt:
                fail(f"{path}: '{name}' segments leave a gap at row {nxt}")
            nxt += nrows
            row_bytes = 4 * dim * (1 + n_slots)
            for b in range(0, nrows, block):
                k = min(block, nrows - b)
                blob = pieces[piece][at + b * row_bytes:at + (b + k) * row_bytes]
                if px_hash64(M64_INIT, blob) != i64() % (1 << 64):
                    fail(f"{path}: '{name}' rows {row0 + b}.. do not match their hash")
                arrays[row0 + b:row0 + b + k] = np.frombuffer(blob, np.float32).reshape(k, 1 + n_slots, dim)
        if nxt != rows:
            fail(f"{path}: '{name}' segments cover {nxt} of {rows} rows")
        out[name] = (arrays[:, 0].reshape(dims), [arrays[:, 1 + k].reshape(dims) for k in range(n_slots)])
    for _ in range(i64()):  # masks: variable, entries, bitmap
        var, entries = i64(2)
        if not 0 <= var < n_vars:
            fail(f"{path}: a mask of variable {var}")
        off += (entries + 63) // 64 * 8
    if off + 16 != len(data):
        fail(f"{path}: {len(data) - off - 16} bytes unaccounted for")
    return step, n_slots, out


def cmd_ckpt(path, onnx_path, step):
    st, n_slots, arrays = read_checkpoint(path)
    if st != int(step) or len(arrays) != 3:
        fail(f"{path}: step {st}, {len(arrays)} variables")
    init = onnx_initializers(onnx_path)
    for name, (w, _) in arrays.items():
        if init[name].tobytes() != w.tobytes():
            fail(f"{path}: '{name}' differs from {onnx_path}")
    print(f"checkpoint ok: step {st}, {n_slots} slot(s), weights = ONNX's")


def cmd_same_ckpt(a, b):
    """Two checkpoints hold the same state, bit for bit, whatever their layout."""
    sa, na, va = read_checkpoint(a)
    sb, nb, vb = read_checkpoint(b)
    if (sa, na, sorted(va)) != (sb, nb, sorted(vb)):
        fail(f"{a} and {b}: step {sa}/{sb}, slots {na}/{nb}, variables {sorted(va)}/{sorted(vb)}")
    for name in va:
        for x, y in zip([va[name][0]] + va[name][1], [vb[name][0]] + vb[name][1]):
            if x.tobytes() != y.tobytes():
                fail(f"{a} and {b}: '{name}' differs")
    print(f"same state: step {sa}, {len(va)} variables")


def cmd_stats(path, steps, ranks):
    s = json.load(open(path))
    if s["steps"] != int(steps) or len(s["ranks"]) != int(ranks):
        fail(f"{path}: steps {s['steps']}, {len(s['ranks'])} ranks")
    if not s["samples_per_second"] > 0:
        fail(f"{path}: samples_per_second {s['samples_per_second']}")
    kinds = {"allreduce", "ps_pull", "ps_push", "other"}
    for i, r in enumerate(s["ranks"]):
        if r["rank"] != i or set(r["bytes_sent_per_step"]) != kinds or \
                set(r["bytes_received_per_step"]) != kinds:
            fail(f"{path}: rank entry {r}")
    if int(ranks) > 1 and not s["ranks"][0]["bytes_sent_per_step"]["allreduce"] > 0:
        fail(f"{path}: no allreduce traffic counted with {ranks} ranks")
    print(f"stats ok: {s['samples_per_second']:.0f} samples/s")


if __name__ == "__main__":
    cmds = {"data": cmd_data, "order": cmd_order, "reference": cmd_reference, "onnx": cmd_onnx,
            "ckpt": cmd_ckpt, "same_ckpt": cmd_same_ckpt, "stats": cmd_stats}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__)
        sys.exit(2)
    cmds[sys.argv[1]](*sys.argv[2:])
