#!/usr/bin/python3
"""The 1F1B schedule a --pp program runs, read from `parallaxc inspect MODEL
--stage parallel --graph` (the step's nodes in the order the program calls
them, each with its pp_* attributes).

Usage: pp_schedule.py GRAPH.txt STAGES MICRO_BATCHES [--check POINTS]

Prints, for each stage, the order of its work (F<m>: micro-batch m's
forward, B<m>: its backward, PRE/POST: the stage's work before and after the
micro-batches, UPD: the stage's AllReduce and updates), and the idle
fraction of each stage when the step is replayed in that order on one rank
per stage:
  - a matrix product (Gemm, MatMul) takes its FLOPs (2 x outputs x inner
    dim), every other node no time;
  - a send (PPTransfer on its `from` stage, PPBroadcast on its root) does not
    wait; a receive waits until its send was issued (MPI_Isend, MPI_Recv);
  - the step ends when the last stage ends (the loss mean over ranks that
    ends every step).
A stage's idle is its waits plus the time from its end to the step's end,
over the step. This is the schedule's own bubble, without timing noise:
the order and the FLOPs of the cut, not the machine.

With --check POINTS, exits 1 unless every stage runs S-s-1 warm-up
forwards, then alternates one forward and one backward, then drains the
backwards (1F1B), and every stage's replayed idle is within POINTS
percentage points of (S-1)/(M+S-1)."""
import re
import sys

NODE = re.compile(r"\s+%(\S+?)(?:, %\S+)* = (\S+?)(?:\[(.*?)\])?\((.*?)\)\s+#.*-> (.*)$")
VALUE = re.compile(r"\s+%(\S+): \w+\[([0-9,]*)\]")


def dims(text):
    return [int(d) for d in text.split(",") if d]


def parse(path):
    """(nodes in call order, shape of every value): a node is (op, attrs,
    inputs, outputs)."""
    shapes, nodes = {}, []
    for line in open(path):
        m = NODE.match(line)
        if m:
            name, op, attrs, ins, outs = m.groups()
            a = dict(kv.split("=", 1) for kv in (attrs or "").split(", ") if "=" in kv)
            out_shapes = re.findall(r"\[([0-9,]*)\]", outs)
            out_names = [n.strip().lstrip("%") for n in line.split(" = ")[0].split(",")]
            for n, s in zip(out_names, out_shapes):
                shapes[n] = dims(s)
            inputs = [i.strip().lstrip("%") for i in ins.split(",") if i.strip()]
            nodes.append((op.split(".")[-1], a, inputs, out_names))
            continue
        m = VALUE.match(line)
        if m:
            shapes[m.group(1)] = dims(m.group(2))
    return nodes, shapes


def flops(op, a, inputs, outputs, shapes):
    if op not in ("Gemm", "MatMul") or not outputs or outputs[0] not in shapes:
        return 0
    out, x = shapes[outputs[0]], shapes.get(inputs[0], [])
    if not x:
        return 0
    inner = x[0] if op == "Gemm" and a.get("transA") == "1" else x[-1]
    n = 1
    for d in out:
        n *= d
    return 2 * n * inner


def blocks(nodes, S):
    """Each stage's work, in order, as F<m>/B<m>/PRE/POST/UPD blocks."""
    seq = {s: [] for s in range(S)}
    names = {0: "PRE", 1: "F", 2: "B", 3: "POST"}
    for op, a, _, _ in nodes:
        if "pp_stage" not in a:
            continue
        if "pp_at" not in a:
            tag = "UPD"
        else:
            phase = int(a.get("pp_phase", 1))
            tag = names[phase] + (a["pp_mb"] if phase in (1, 2) else "")
        q = seq[int(a["pp_stage"])]
        if not q or q[-1] != tag:
            q.append(tag)
    return seq


def one_f_one_b(S, M, s):
    warm = min(S - 1 - s, M)
    order = ["F%d" % m for m in range(warm)]
    for i in range(M - warm):
        order += ["F%d" % (warm + i), "B%d" % i]
    return order + ["B%d" % m for m in range(M - warm, M)]


def replay(nodes, shapes, S):
    """Each stage's idle fraction when the calls run in this order."""
    work = {s: [] for s in range(S)}
    for op, a, ins, outs in nodes:
        if op == "PPTransfer":
            key = outs[0]
            work[int(a["from"])].append(("send", key))
            work[int(a["to"])].append(("recv", key))
        elif op == "PPBroadcast":
            root = int(a["from"])
            for s in range(S):
                work[s].append(("send" if s == root else "recv", outs[0]))
        elif "pp_stage" in a:
            work[int(a["pp_stage"])].append(("run", flops(op, a, ins, outs, shapes)))
    t, idle, pos, sent = [0.0] * S, [0.0] * S, [0] * S, {}
    while any(pos[s] < len(work[s]) for s in range(S)):
        moved = False
        for s in range(S):
            while pos[s] < len(work[s]):
                kind, x = work[s][pos[s]]
                if kind == "run":
                    t[s] += x
                elif kind == "send":
                    sent[x] = t[s]
                elif x not in sent:
                    break  # its send comes later in another stage's order
                elif sent[x] > t[s]:
                    idle[s] += sent[x] - t[s]
                    t[s] = sent[x]
                pos[s] += 1
                moved = True
        if not moved:
            sys.exit("the order deadlocks: every stage waits for a send not yet issued")
    step = max(t)
    if step <= 0:
        sys.exit("no matrix product on any stage: nothing to replay")
    return [(idle[s] + step - t[s]) / step for s in range(S)]


def main():
    if len(sys.argv) not in (4, 6) or (len(sys.argv) == 6 and sys.argv[4] != "--check"):
        sys.exit(__doc__)
    S, M = int(sys.argv[2]), int(sys.argv[3])
    tolerance = float(sys.argv[5]) if len(sys.argv) == 6 else None
    nodes, shapes = parse(sys.argv[1])
    if not nodes:
        sys.exit("%s: no node of a graph listing (inspect --graph)" % sys.argv[1])
    bubble = (S - 1) / (M + S - 1)
    ok = True
    seq = blocks(nodes, S)
    for s in range(S):
        work = [b for b in seq[s] if b[0] in "FB"]
        right = work == one_f_one_b(S, M, s)
        ok &= right
        print("stage %d order%s: %s" % (s, "" if right else " (NOT 1F1B)", " ".join(seq[s])))
    idle = replay(nodes, shapes, S)
    print("1F1B bubble (S-1)/(M+S-1) = %.3f" % bubble)
    for s in range(S):
        far = tolerance is not None and abs(idle[s] - bubble) * 100 > tolerance
        ok &= not far
        print("stage %d: replayed idle %.3f (%+.1f points)%s" %
              (s, idle[s], 100 * (idle[s] - bubble), " TOO FAR" if far else ""))
    if tolerance is not None and not ok:
        sys.exit(1)


main()
