#!/usr/bin/python3
"""lane_order.py SHARDED_DIR OUT_DIR --global-batch B --steps N [--shuffle SEED]
                 [--shuffle-buffer K]

Writes into OUT_DIR a single-folder dataset (one <input>.npy per input)
whose plain order (no --shuffle) is the order in which a training program
reads the sharded dataset SHARDED_DIR with those settings: sample s*B + j of
the copy is position j of step s's global batch. The order is computed here
from its definition (runtime/program/lane_order.h, docs/data.md), with its
own splitmix64, Fisher-Yates and shuffle buffers, so a run on the copy that
trains like the run on the shards checks the runtime's order independently.

Run with /usr/bin/python3 (Debian's numpy)."""
import argparse
import os

import numpy as np

MASK = (1 << 64) - 1


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class Rng:
    def __init__(self, state):
        self.state = state

    def below(self, n):
        threshold = ((1 << 64) - n) % n
        while True:
            self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
            x = mix(self.state)
            if x >= threshold:
                return x % n


def permutation(seed, epoch, n):
    rng = Rng(mix(seed ^ mix(epoch + 1)))
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def read_manifest(folder):
    inputs, shards = [], []
    with open(os.path.join(folder, "manifest.txt")) as f:
        for line in f:
            w = line.split()
            if w[0] == "input":
                inputs.append(w[1])
            elif w[0] == "shard":
                shards.append((w[1], int(w[2])))
    return inputs, shards


def lane_outputs(e, lane, steps_per_epoch, slots, seed):
    """Lane positions in the order the lane outputs them in epoch e."""
    if slots == 0:
        return list(range(steps_per_epoch))
    rng = Rng(mix(seed ^ mix(e + 1)) ^ mix(~lane & MASK))
    buf, nxt, live, out = list(range(slots)), slots, slots, []
    for _ in range(steps_per_epoch):
        u = rng.below(live)
        out.append(buf[u])
        if nxt < steps_per_epoch:
            buf[u] = nxt
            nxt += 1
        else:
            live -= 1
            buf[u] = buf[live]
    return out


def order(shards, global_batch, steps, shuffle, seed, shuffle_buffer):
    """out[s, j]: the sample (its number in manifest order) at position j of
    step s's global batch."""
    rows = [n for _, n in shards]
    first = np.concatenate([[0], np.cumsum(rows)])
    samples = int(first[-1])
    E = samples // global_batch
    slots = 0
    if shuffle and shuffle_buffer > 0:
        slots = min(E, -(-shuffle_buffer // global_batch))
    out = np.zeros((steps, global_batch), np.int64)
    for e in range(-(-steps // E)):
        place = permutation(seed, e, len(shards)) if shuffle else list(range(len(shards)))
        start = np.concatenate([[0], np.cumsum([rows[s] for s in place])])
        s0, s1 = e * E, min(steps, (e + 1) * E)
        if slots == 0:  # lane j outputs its positions in order: vectorized
            x = np.arange(global_batch)[None, :] * E + np.arange(s1 - s0)[:, None]
        else:
            x = np.zeros((s1 - s0, global_batch), np.int64)
            for j in range(global_batch):
                x[:, j] = np.array(lane_outputs(e, j, E, slots, seed)[:s1 - s0]) + j * E
        k = np.searchsorted(start, x, side="right") - 1
        out[s0:s1] = np.asarray(first)[np.asarray(place)[k]] + x - start[k]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sharded")
    ap.add_argument("out")
    ap.add_argument("--global-batch", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--shuffle", type=int)
    ap.add_argument("--shuffle-buffer", type=int, default=65536)
    a = ap.parse_args()
    inputs, shards = read_manifest(a.sharded)
    idx = order(shards, a.global_batch, a.steps, a.shuffle is not None, a.shuffle or 0,
                a.shuffle_buffer).reshape(-1)
    os.makedirs(a.out, exist_ok=True)
    first = np.concatenate([[0], np.cumsum([n for _, n in shards])])
    shard_of = np.searchsorted(first, idx, side="right") - 1
    for name in inputs:  # only the rows the steps read, shard by shard (mapped)
        rows = None
        for k, (folder, _) in enumerate(shards):
            here = np.nonzero(shard_of == k)[0]
            if not len(here):
                continue
            part = np.load(os.path.join(a.sharded, folder, name + ".npy"), mmap_mode="r")
            if rows is None:
                rows = np.zeros((len(idx),) + part.shape[1:], part.dtype)
            rows[here] = part[idx[here] - first[k]]
        np.save(os.path.join(a.out, name + ".npy"), rows)

if __name__ == "__main__":
    main()
