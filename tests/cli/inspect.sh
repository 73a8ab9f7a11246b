#!/bin/bash
# Usage: inspect.sh PARALLAXC SRCDIR
#
# End-to-end checks of `parallaxc inspect`:
#   - every format (text, dot, json, onnx) at every stage (imported, folded),
#     to stdout and with -o, on ONNX backend test models;
#   - the JSON document: exact key sets, types, bytes = numel * dtype size,
#     sync/partitions as planned for --ranks, no null dims after folding;
#   - sparse/dense classification against hand-labelled cases (a generated
#     model) and, on the example models, against an independent Python
#     implementation of the design.md §4 rule run on the folded ONNX output,
#     and the same at the imported stage as at the folded one;
#   - odd names (quotes, backslashes, newlines, control characters, Unicode)
#     round-trip exactly through JSON, and DOT output is accepted by Graphviz
#     when `dot` is installed;
#   - every examples/*/model.onnx (the test fails when there are none).
# Prints PASS/FAIL lines, then "N passed, M failed"; exits non-zero on failure.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PARALLAXC SRCDIR" >&2
    exit 2
fi
parallaxc=$1
src=$2
py=/usr/bin/python3 # Debian's interpreter: it has onnx and numpy
data=/usr/share/libonnx-testdata/data

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
pass() {
    echo "PASS $1"
    passed=$((passed + 1))
}
fail() { # NAME [LOG]
    echo "FAIL $1"
    if [ $# -ge 2 ] && [ -f "$2" ]; then sed 's/^/    /' "$2" | head -n 25; fi
    failed=$((failed + 1))
}
# expect_ok NAME CMD... : CMD must exit 0 (stdout to $tmp/out, stderr to $tmp/err).
expect_ok() {
    local name=$1
    shift
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 0 ]; then
        pass "$name"
        return 0
    fi
    echo "exit status $rc" >>"$tmp/err"
    fail "$name" "$tmp/err"
    return 1
}
# expect_status NAME STATUS NEEDLE CMD... : CMD must exit STATUS with NEEDLE on stderr.
expect_status() {
    local name=$1 want=$2 needle=$3
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne "$want" ]; then
        echo "exit status $rc, expected $want" >>"$tmp/err"
        fail "$name" "$tmp/err"
    elif ! grep -qF -- "$needle" "$tmp/err"; then
        echo "stderr does not mention: $needle" >>"$tmp/err"
        fail "$name" "$tmp/err"
    else
        pass "$name"
    fi
}

cat >"$tmp/shim.py" <<'EOF'
import numpy as np
for alias, typ in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, alias, typ)
EOF

# ---- JSON checker -----------------------------------------------------------
cat >"$tmp/check_json.py" <<'EOF'
"""check_json.py FILE [--stage S] [--ranks N] [--static] [--var NAME=CLASS]...
   [--no-var NAME]... [--names-of MODEL.onnx] [--rule-on FOLDED.onnx ORIGINAL.onnx]"""
import argparse
import json
import math
import os
import sys

exec(open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "shim.py")).read())
import onnx  # noqa: E402
from onnx import TensorProto  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--stage")
ap.add_argument("--ranks", type=int)
ap.add_argument("--static", action="store_true")
ap.add_argument("--var", action="append", default=[])
ap.add_argument("--no-var", action="append", default=[])
ap.add_argument("--names-of")
ap.add_argument("--rule-on", nargs=2)
ap.add_argument("--min-sparse", type=int, default=0)
ap.add_argument("--memory-plan", action="store_true", help="require a buffer plan that reuses memory")
ap.add_argument("--same-classes-as")
args = ap.parse_args()

problems = []
with open(args.file, "rb") as f:
    doc = json.loads(f.read().decode("utf-8"))  # strict: must be valid UTF-8 JSON

SIZES = {"float": 4, "double": 8, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1,
         "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
         "bool": 1, "complex64": 8, "complex128": 16}


def expect_keys(what, obj, keys):
    if not isinstance(obj, dict):
        problems.append("%s is not an object" % what)
        return False
    if set(obj) != set(keys):
        problems.append("%s has keys %s, expected %s" % (what, sorted(obj), sorted(keys)))
        return False
    return True


def check_shape(what, shape, static):
    if shape is None:
        if static:
            problems.append("%s: unknown rank in a static stage" % what)
        return
    if not isinstance(shape, list):
        problems.append("%s: shape %r is not a list" % (what, shape))
        return
    for d in shape:
        ok = d is None or isinstance(d, str) or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
        if not ok:
            problems.append("%s: bad dim %r" % (what, d))
        elif static and not isinstance(d, int):
            problems.append("%s: dim %r is not static" % (what, d))


# Memory per rank (its numbers: tests/cli/memory_per_rank.sh): checked here,
# then set aside; predicted_memory_layout only comes with a prediction.
if "predicted_memory_per_rank" not in doc:
    problems.append("document has no predicted_memory_per_rank")
per_rank = doc.pop("predicted_memory_per_rank", None)
doc.pop("predicted_memory_layout", None)
if doc.get("stage") == "imported" and per_rank is not None:
    problems.append("memory per rank at stage 'imported': shapes are not static there")
if per_rank is not None and (not isinstance(per_rank, list) or len(per_rank) != doc.get("ranks")):
    problems.append("predicted_memory_per_rank: not one entry per rank: %r" % (per_rank,))
expect_keys("document", doc, ["model", "stage", "ranks", "opset", "values", "nodes", "variables",
                              "trained", "memory", "predicted_bytes_per_step",
                              "predicted_seconds_per_step", "tensor_parallel"])
mem = doc.get("memory")
if doc.get("stage") == "imported" and mem is not None:
    problems.append("memory plan at stage 'imported': shapes are not static there")
pred = doc.get("predicted_bytes_per_step")
if doc.get("stage") == "imported":
    if pred is not None:
        problems.append("predicted bytes at the imported stage: %r" % (pred,))
elif expect_keys("predicted_bytes_per_step", pred, ["hybrid", "allreduce", "ps", "auto"]):
    if not all(isinstance(pred[k], int) and pred[k] >= 0 for k in pred):
        problems.append("predicted_bytes_per_step: %r" % (pred,))
    elif doc.get("ranks") == 1 and any(pred.values()):
        problems.append("one rank moves no bytes, predicted %r" % (pred,))
    elif pred["hybrid"] > max(pred["allreduce"], pred["ps"]):
        problems.append("hybrid predicted above both other modes: %r" % (pred,))
# The alpha-beta time model: nothing at one rank; --comm auto picks, per
# variable (and for the dense group), the faster way, so it is predicted no
# slower than hybrid.
secs = doc.get("predicted_seconds_per_step")
if doc.get("stage") == "imported":
    if secs is not None:
        problems.append("predicted seconds at the imported stage: %r" % (secs,))
elif expect_keys("predicted_seconds_per_step", secs, ["hybrid", "allreduce", "ps", "auto"]):
    if not all(isinstance(secs[k], (int, float)) and secs[k] >= 0 for k in secs):
        problems.append("predicted_seconds_per_step: %r" % (secs,))
    elif doc.get("ranks") == 1 and any(secs.values()):
        problems.append("one rank spends no time communicating, predicted %r" % (secs,))
    elif secs["auto"] > secs["hybrid"] * (1 + 1e-9):
        problems.append("auto predicted slower than hybrid: %r" % (secs,))
if mem is not None and expect_keys("memory", mem, ["arena_bytes", "unplanned_bytes", "constant_bytes"]):
    if not all(isinstance(mem[k], int) and mem[k] >= 0 for k in mem):
        problems.append("memory: %r" % mem)
    elif mem["arena_bytes"] > mem["unplanned_bytes"]:
        problems.append("memory: the plan (%d) needs more than no reuse (%d)" % (mem["arena_bytes"], mem["unplanned_bytes"]))
if args.memory_plan and (mem is None or not mem.get("arena_bytes", 0) < mem.get("unplanned_bytes", 0)):
    problems.append("no buffer plan with reuse: %r" % (mem,))
if args.stage and doc.get("stage") != args.stage:
    problems.append("stage is %r, expected %r" % (doc.get("stage"), args.stage))
if args.ranks and doc.get("ranks") != args.ranks:
    problems.append("ranks is %r, expected %r" % (doc.get("ranks"), args.ranks))
values = {}
for v in doc.get("values", []):
    if expect_keys("value %r" % v.get("name"), v, ["name", "dtype", "shape"]):
        check_shape("value %r" % v["name"], v["shape"], args.static)
        if v["name"] in values:
            problems.append("value %r listed twice" % v["name"])
        values[v["name"]] = v
        if args.static and v["dtype"] is None:
            problems.append("value %r has no dtype" % v["name"])
for n in doc.get("nodes", []):
    if expect_keys("node %r" % n.get("name"), n, ["name", "op", "domain", "inserted_by", "inputs", "outputs"]):
        for name in n["inputs"] + n["outputs"]:
            if name != "" and name not in values:
                problems.append("node %r refers to %r, which is not in values" % (n["name"], name))
ranks = doc.get("ranks", 1)
classes = {}
for v in doc.get("variables", []):
    if not expect_keys("variable %r" % v.get("name"), v,
                       ["name", "shape", "bytes", "class", "sync", "partitions",
                        "rows_touched_per_step", "row_cache_rows", "weight_decay", "sparsity"]):
        continue
    name = v["name"]
    classes[name] = v["class"]
    # masked weights only with --sparsity (tests/cli/sparse_train.sh checks those)
    if v["sparsity"] is not None:
        problems.append("variable %r: sparsity %r without --sparsity" % (name, v["sparsity"]))
    check_shape("variable %r" % name, v["shape"], True)
    if v["class"] not in ("sparse", "dense"):
        problems.append("variable %r: class %r" % (name, v["class"]))
    # the default --comm hybrid: parameter servers for sparse variables
    want_sync = "ps" if v["class"] == "sparse" else "allreduce"
    if v["sync"] != want_sync:
        problems.append("variable %r: sync %r, expected %r" % (name, v["sync"], want_sync))
    touched = v["rows_touched_per_step"]
    if doc.get("stage") != "imported" and not (isinstance(touched, (int, float)) and 0 < touched <= 1):
        problems.append("variable %r: rows_touched_per_step %r" % (name, touched))
    if v["class"] == "dense" and touched not in (1, None):
        problems.append("dense variable %r touches %r of its rows" % (name, touched))
    # row caches exist from stage parallel on (checked by check_parallel.py)
    if doc.get("stage") != "parallel" and v["row_cache_rows"] is not None:
        problems.append("variable %r: row_cache_rows %r before stage parallel" % (name, v["row_cache_rows"]))
    # the default --partitions auto for parameter-server variables, else 1
    want_parts = "auto" if v["sync"] == "ps" else 1
    if v["partitions"] != want_parts:
        problems.append("variable %r: partitions %r, expected %r" % (name, v["partitions"], want_parts))
    dtype = values.get(name, {}).get("dtype")
    if dtype not in SIZES:
        problems.append("variable %r: dtype %r is not a float type" % (name, dtype))
    elif isinstance(v["shape"], list) and all(isinstance(d, int) for d in v["shape"]):
        want = math.prod(v["shape"]) * SIZES[dtype]
        if v["bytes"] != want:
            problems.append("variable %r: bytes %r, expected %d" % (name, v["bytes"], want))
# "trained": what the step trains (a subset of the variables: BatchNorm
# running statistics are variables it updates, not trains) and why each
# other float initializer is not trained.
trained = doc.get("trained")
if expect_keys("trained", trained, ["from", "initializers", "not_trained"]):
    for name in trained["initializers"]:
        if name not in classes:
            problems.append("trained %r is not a variable" % name)
    for e in trained["not_trained"]:
        if expect_keys("not_trained entry", e, ["name", "reason"]) and \
                (e["name"] in trained["initializers"] or not e["reason"]):
            problems.append("not_trained entry %r" % (e,))
    floats = {n for n, v in values.items() if v.get("dtype") in ("float", "double", "float16",
                                                                  "bfloat16")}
    listed = set(trained["initializers"]) | {e["name"] for e in trained["not_trained"]}
    if not listed <= floats:
        problems.append("trained lists non-float or unknown values: %r" % sorted(listed - floats))
for spec in args.var:
    name, cls = spec.rsplit("=", 1)
    if classes.get(name) != cls:
        problems.append("variable %r is %r, expected %r" % (name, classes.get(name), cls))
for name in args.no_var:
    if name in classes:
        problems.append("%r should not be a variable" % name)
if args.same_classes_as:
    with open(args.same_classes_as) as f:
        other = {v["name"]: v["class"] for v in json.load(f)["variables"]}
    if other != classes:
        problems.append("classes differ from %s: %s vs %s" % (args.same_classes_as, classes, other))
if sum(c == "sparse" for c in classes.values()) < args.min_sparse:
    problems.append("fewer than %d sparse variables: %s" % (args.min_sparse, classes))


def load(path):
    return onnx.load(path)


if args.names_of:
    g = load(args.names_of).graph
    want = {i.name for i in g.input} | {i.name for i in g.initializer} | \
        {o for n in g.node for o in n.output if o}
    # An nn.EmbeddingBag Loop is imported as Gather (rows) + SegmentReduce,
    # which keeps the Loop's name and output.
    want_nodes = []
    for n in g.node:
        if n.op_type == "Loop":
            want_nodes += [n.name + "/Gather", n.name]
            want.add(n.name + "/rows")
        else:
            want_nodes.append(n.name)
    if set(values) != want:
        problems.append("value names differ from the model's:\n  json only: %r\n  model only: %r"
                        % (sorted(set(values) - want), sorted(want - set(values))))
    got_nodes = [n["name"] for n in doc["nodes"]]
    if got_nodes != want_nodes:
        problems.append("node names %r, expected %r" % (got_nodes, want_nodes))

if args.rule_on:
    # design.md §4, implemented independently on the folded ONNX model: a
    # trainable initializer is sparse iff every use is input 0 of a Gather on
    # axis 0 whose indices are not compile-time constants.
    folded, original = (load(p).graph for p in args.rule_on)
    FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
    trainable = [i.name for i in original.initializer if i.data_type in FLOATS]
    inits = {i.name: i for i in folded.initializer}
    consts = {name for name, i in inits.items() if name not in trainable}
    rank = {name: len(i.dims) for name, i in inits.items()}
    changed = True
    while changed:  # constness flows through nodes whose inputs are all constant
        changed = False
        for n in folded.node:
            if n.op_type in ("Dropout", "RandomNormal", "RandomUniform", "Multinomial"):
                continue
            if all(i in consts for i in n.input if i) and \
                    not all(o in consts for o in n.output if o):
                consts.update(o for o in n.output if o)
                changed = True
    outputs = {o.name for o in folded.output}
    for name in trainable:
        uses = [(n, k) for n in folded.node for k, i in enumerate(n.input) if i == name]
        sparse = bool(uses) and name not in outputs
        for n, k in uses:
            axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
            if axis < 0:
                axis += rank.get(name, 0)
            if n.op_type != "Gather" or k != 0 or axis != 0 or len(n.input) < 2 or \
                    n.input[1] in consts:
                sparse = False
        want = "sparse" if sparse else "dense"
        if name not in classes:
            problems.append("trainable initializer %r missing from variables" % name)
        elif classes[name] != want:
            problems.append("variable %r is %s; the independent rule says %s"
                            % (name, classes[name], want))
    print("classes: " + ", ".join("%s=%s" % kv for kv in sorted(classes.items())))

for p in problems[:25]:
    print(p)
sys.exit(1 if problems else 0)
EOF

# ---- generated models -------------------------------------------------------
cat >"$tmp/make_models.py" <<'EOF'
import os
import sys

exec(open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "shim.py")).read())
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

out = sys.argv[1]


def init(name, shape, dtype=np.float32):
    return numpy_helper.from_array(np.arange(np.prod(shape), dtype=dtype).reshape(shape), name)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, path)


# Sparsity cases; the expected class is in each weight's name (see inspect.sh).
F, I64 = TensorProto.FLOAT, TensorProto.INT64
nodes = [
    helper.make_node("Gather", ["sparse_twice", "ids"], ["g1"], name="g1"),
    helper.make_node("Gather", ["sparse_twice", "ids"], ["g2"], name="g2"),
    helper.make_node("Gather", ["dense_const_idx", "const_idx"], ["g3"], name="g3"),
    helper.make_node("Gather", ["dense_axis1", "ids"], ["g4"], name="g4", axis=1),
    helper.make_node("Gather", ["sparse_axis_neg", "ids"], ["g5"], name="g5", axis=-2),
    helper.make_node("Gather", ["dense_mixed", "ids"], ["g6"], name="g6"),
    helper.make_node("Transpose", ["dense_mixed"], ["mixed_t"], name="t6"),
    helper.make_node("MatMul", ["x", "mixed_t"], ["g6b"], name="m6"),
    helper.make_node("Constant", [], ["cnode_idx"], name="c7",
                     value=numpy_helper.from_array(np.array([1, 2], dtype=np.int64))),
    helper.make_node("Gather", ["dense_constant_node_idx", "cnode_idx"], ["g7"], name="g7"),
    helper.make_node("Add", ["ids", "one"], ["ids_plus_one"], name="a8"),
    helper.make_node("Gather", ["sparse_computed_idx", "ids_plus_one"], ["g8"], name="g8"),
    # positions 0..3 from the static dim 1 of x (its batch dim is symbolic)
    helper.make_node("Shape", ["x"], ["x_shape"], name="s9"),
    helper.make_node("Constant", [], ["c_one"], name="c9a",
                     value=numpy_helper.from_array(np.array(1, dtype=np.int64))),
    helper.make_node("Constant", [], ["c_zero"], name="c9b",
                     value=numpy_helper.from_array(np.array(0, dtype=np.int64))),
    helper.make_node("Gather", ["x_shape", "c_one"], ["x_len"], name="l9", axis=0),
    helper.make_node("Range", ["c_zero", "x_len", "c_one"], ["positions"], name="r9"),
    helper.make_node("Gather", ["dense_shape_idx", "positions"], ["g9"], name="g9"),
]
graph = helper.make_graph(
    nodes, "sparsity",
    [helper.make_tensor_value_info("ids", I64, ["batch", 3]),
     helper.make_tensor_value_info("x", F, ["batch", 4])],
    [helper.make_tensor_value_info(n, F, shape) for n, shape in (
        ("g1", ["batch", 3, 4]), ("g2", ["batch", 3, 4]), ("g3", [2, 4]),
        ("g4", [4, "batch", 3]), ("g5", ["batch", 3, 4]), ("g6", ["batch", 3, 4]),
        ("g6b", ["batch", 10]), ("g7", [2, 4]), ("g8", ["batch", 3, 4]), ("g9", [4, 4]))],
    [init("sparse_twice", (10, 4)), init("dense_const_idx", (10, 4)),
     init("const_idx", (2,), np.int64), init("dense_axis1", (4, 10)),
     init("sparse_axis_neg", (10, 4)), init("dense_mixed", (10, 4)),
     init("dense_constant_node_idx", (10, 4)), init("sparse_computed_idx", (10, 4)),
     init("one", (), np.int64), init("dense_shape_idx", (10, 4))])
save(graph, out + "/sparsity.onnx")

# Odd names everywhere.
odd_in, odd_c, odd_mid, odd_uni, odd_w = 'in"put\\x', "c\x01", "a\nb", "\u00e9\u20ac\U0001F600", 'w\t"'
graph = helper.make_graph(
    [helper.make_node("Add", [odd_in, odd_c], [odd_mid], name='node\n"1"'),
     helper.make_node("Relu", [odd_mid], [odd_uni], name="n\\2 \u00e9"),
     helper.make_node("Mul", [odd_uni, odd_w], ['out "final"'], name="")],
    'odd "graph"\n',
    [helper.make_tensor_value_info(odd_in, F, [2, 3]),
     helper.make_tensor_value_info(odd_c, F, [2, 3])],
    [helper.make_tensor_value_info('out "final"', F, [2, 3])],
    [init(odd_w, (3,))])
save(graph, out + "/odd.onnx")

# Symbolic and unknown dims.
graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["rx"], name="relu_x"),
     helper.make_node("Relu", ["y"], ["ry"], name="relu_y")],
    "symbolic",
    [helper.make_tensor_value_info("x", F, ["batch", 4]),
     helper.make_tensor_value_info("y", F, [None, 4])],
    [helper.make_tensor_value_info("rx", F, ["batch", 4]),
     helper.make_tensor_value_info("ry", F, [None, 4])])
save(graph, out + "/symbolic.onnx")
EOF

cat >"$tmp/onnx_ops.py" <<'EOF'
import os
import sys
exec(open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "shim.py")).read())
import onnx  # noqa: E402
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
print(" ".join(n.op_type for n in m.graph.node))
EOF

if ! "$py" "$tmp/make_models.py" "$tmp" >"$tmp/gen.log" 2>&1; then
    fail "generate test models" "$tmp/gen.log"
fi

have_dot=0
command -v dot >/dev/null 2>&1 && have_dot=1
[ $have_dot -eq 1 ] || echo "note: graphviz 'dot' not installed: DOT output is checked without it"

# check_dot NAME FILE: DOT output well-formed (and accepted by graphviz if present).
check_dot() {
    if ! head -n 1 "$2" | grep -q '^digraph ' || [ "$(tail -n 1 "$2")" != "}" ]; then
        fail "$1: not a digraph" "$2"
    elif [ $have_dot -eq 1 ] && ! dot -Tsvg "$2" -o "$tmp/graph.svg" 2>"$tmp/dot.err"; then
        fail "$1: dot -Tsvg rejects it" "$tmp/dot.err"
    else
        pass "$1"
    fi
}

# ---- every format and stage on backend test models ---------------------------
add=$data/node/test_add/model.onnx
for stage in imported folded; do
    if expect_ok "test_add $stage text" "$parallaxc" inspect "$add" --stage "$stage" --graph; then
        if grep -q '^  %sum = Add(%x, %y)  # .*-> float\[3,4,5\]$' "$tmp/out" &&
            grep -q '^  %x: float\[3,4,5\]$' "$tmp/out"; then
            pass "test_add $stage text content"
        else
            fail "test_add $stage text content" "$tmp/out"
        fi
    fi
    if expect_ok "test_add $stage json" "$parallaxc" inspect "$add" --stage "$stage" --format json; then
        cp "$tmp/out" "$tmp/add.json"
        if "$py" "$tmp/check_json.py" "$tmp/add.json" --stage "$stage" --ranks 1 --static \
            --names-of "$add" >"$tmp/log" 2>&1 &&
            grep -q '"name": "sum", "dtype": "float", "shape": \[3, 4, 5\]' "$tmp/add.json"; then
            pass "test_add $stage json content"
        else
            fail "test_add $stage json content" "$tmp/log"
        fi
    fi
    if expect_ok "test_add $stage dot" "$parallaxc" inspect "$add" --stage "$stage" --format dot; then
        cp "$tmp/out" "$tmp/add.dot"
        check_dot "test_add $stage dot content" "$tmp/add.dot"
    fi
    # ONNX to stdout and to a file; both must be valid ONNX with the same nodes.
    "$parallaxc" inspect "$add" --stage "$stage" --format onnx >"$tmp/add_stdout.onnx" 2>"$tmp/err"
    rc=$?
    "$parallaxc" inspect "$add" --stage "$stage" --format onnx -o "$tmp/add_file.onnx" \
        >"$tmp/out" 2>>"$tmp/err"
    rc2=$?
    if [ $rc -ne 0 ] || [ $rc2 -ne 0 ] || [ -s "$tmp/out" ]; then
        fail "test_add $stage onnx (status $rc/$rc2)" "$tmp/err"
    elif ! cmp -s "$tmp/add_stdout.onnx" "$tmp/add_file.onnx"; then
        fail "test_add $stage onnx: stdout and -o differ"
    elif [ "$("$py" "$tmp/onnx_ops.py" "$tmp/add_file.onnx" 2>"$tmp/log")" != "Add" ]; then
        fail "test_add $stage onnx: not a valid model with one Add" "$tmp/log"
    else
        pass "test_add $stage onnx"
    fi
done

# -o writes the file and nothing to stdout; "-o -" is stdout.
for fmt in text dot json; do
    "$parallaxc" inspect "$add" --format $fmt -o "$tmp/o.$fmt" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    "$parallaxc" inspect "$add" --format $fmt -o - >"$tmp/dash.$fmt" 2>>"$tmp/err"
    rc2=$?
    if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ ! -s "$tmp/out" ] && [ -s "$tmp/o.$fmt" ] &&
        cmp -s "$tmp/o.$fmt" "$tmp/dash.$fmt"; then
        pass "-o FILE and -o - for $fmt"
    else
        fail "-o FILE and -o - for $fmt (status $rc/$rc2)" "$tmp/err"
    fi
done

# The exported ONNX reads back in with the same values and nodes.
if "$parallaxc" inspect "$tmp/add_file.onnx" --format json >"$tmp/rt.json" 2>"$tmp/err" &&
    "$py" -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if a["values"] == b["values"] and a["nodes"] == b["nodes"] else 1)' \
        "$tmp/add.json" "$tmp/rt.json" 2>>"$tmp/err"; then
    pass "onnx output re-imports to the same graph"
else
    fail "onnx output re-imports to the same graph" "$tmp/err"
fi

# PyTorch-converted models: an embedding (sparse) and a linear layer (dense).
emb=$data/pytorch-converted/test_Embedding/model.onnx
lin=$data/pytorch-converted/test_Linear/model.onnx
for ranks in 1 4; do
    if expect_ok "Embedding json --ranks $ranks" "$parallaxc" inspect "$emb" --format json \
        --ranks $ranks; then
        if "$py" "$tmp/check_json.py" "$tmp/out" --ranks $ranks --static --var 1=sparse \
            >"$tmp/log" 2>&1; then
            pass "Embedding weight is sparse (ranks $ranks)"
        else
            fail "Embedding weight is sparse (ranks $ranks)" "$tmp/log"
        fi
    fi
    if expect_ok "Linear json --ranks $ranks" "$parallaxc" inspect "$lin" --format json \
        --ranks $ranks --stage folded; then
        if "$py" "$tmp/check_json.py" "$tmp/out" --ranks $ranks --static --var 1=dense \
            --var 2=dense >"$tmp/log" 2>&1; then
            pass "Linear weights are dense (ranks $ranks)"
        else
            fail "Linear weights are dense (ranks $ranks)" "$tmp/log"
        fi
    fi
done
if expect_ok "Linear --freeze 1" "$parallaxc" inspect "$lin" --format json --freeze 1; then
    if "$py" "$tmp/check_json.py" "$tmp/out" --var 2=dense --no-var 1 >"$tmp/log" 2>&1; then
        pass "frozen initializer is not a variable"
    else
        fail "frozen initializer is not a variable" "$tmp/log"
    fi
fi
if expect_ok "Embedding text" "$parallaxc" inspect "$emb"; then
    if grep -q '^variables (1):$' "$tmp/out" && grep -q '^  %1: float\[4,3\]  48 bytes  sparse' "$tmp/out"; then
        pass "Embedding text lists the sparse variable"
    else
        fail "Embedding text lists the sparse variable" "$tmp/out"
    fi
fi

# ---- sparsity cases ------------------------------------------------------------
sp=$tmp/sparsity.onnx
expect="--var sparse_twice=sparse --var dense_const_idx=dense --var dense_axis1=dense
    --var sparse_axis_neg=sparse --var dense_mixed=dense --var dense_constant_node_idx=dense
    --var sparse_computed_idx=sparse --var dense_shape_idx=dense --no-var const_idx
    --no-var one"
# Imported without binding the batch: classes must not depend on it.
for flags in "--stage imported" "--batch 2"; do
    stage=${flags##* }
    [ "$stage" = 2 ] && stage=folded
    # shellcheck disable=SC2086
    if expect_ok "sparsity model $stage" "$parallaxc" inspect "$sp" $flags --format json; then
        # shellcheck disable=SC2086
        if "$py" "$tmp/check_json.py" "$tmp/out" --stage $stage $expect >"$tmp/log" 2>&1; then
            pass "sparsity classes at $stage"
        else
            fail "sparsity classes at $stage" "$tmp/log"
        fi
    fi
done
if expect_ok "sparsity --freeze" "$parallaxc" inspect "$sp" --format json \
    --freeze sparse_twice,dense_axis1 --freeze dense_mixed; then
    if "$py" "$tmp/check_json.py" "$tmp/out" --no-var sparse_twice --no-var dense_axis1 \
        --no-var dense_mixed --var sparse_axis_neg=sparse >"$tmp/log" 2>&1; then
        pass "sparsity --freeze drops the named variables"
    else
        fail "sparsity --freeze drops the named variables" "$tmp/log"
    fi
fi

# ---- odd names -----------------------------------------------------------------
odd=$tmp/odd.onnx
for stage in imported folded; do
    if expect_ok "odd names json $stage" "$parallaxc" inspect "$odd" --stage $stage --format json; then
        if "$py" "$tmp/check_json.py" "$tmp/out" --static --names-of "$odd" >"$tmp/log" 2>&1; then
            pass "odd names round-trip through json ($stage)"
        else
            fail "odd names round-trip through json ($stage)" "$tmp/log"
        fi
    fi
    if expect_ok "odd names dot $stage" "$parallaxc" inspect "$odd" --stage $stage --format dot; then
        cp "$tmp/out" "$tmp/odd.dot"
        check_dot "odd names dot $stage accepted" "$tmp/odd.dot"
    fi
done
if expect_ok "odd names text" "$parallaxc" inspect "$odd" --graph; then
    # variables(1) and trained(1) with their section lines, a blank line, then header +
    # inputs(2) + initializers(1) + outputs(1) + nodes(3), with their section lines:
    # 2 + 2 + 1 + 1 + 3 + 2 + 2 + 4 = 17 lines; a raw newline would add one.
    if [ "$(wc -l <"$tmp/out")" -eq 17 ] &&
        grep -qF '  %"a\nb" = Add(%"in\"put\\x", %"c\x01")  # "node\n\"1\"" -> float[2,3]' "$tmp/out"; then
        pass "odd names text: escaped, one line each"
    else
        fail "odd names text: escaped, one line each" "$tmp/out"
    fi
fi

# The text summary comes first (variables, predicted bytes, memory) and the graph
# only with --graph; one rank is "1 rank".
if expect_ok "summary text" "$parallaxc" inspect "$src/examples/recommender/model.onnx" --batch 4 \
    --stage parallel; then
    if [ "$(head -n 1 "$tmp/out" | cut -c1-10)" = "variables " ] &&
        grep -q '^predicted bytes per rank per step (1 rank, ' "$tmp/out" &&
        grep -q '^memory plan: ' "$tmp/out" && grep -q '^graph (stage parallel): [0-9]* nodes; --graph lists them$' "$tmp/out" &&
        ! grep -q '^nodes (' "$tmp/out"; then
        pass "summary text: variables first, no graph without --graph, '1 rank'"
    else
        fail "summary text: variables first, no graph without --graph, '1 rank'" "$tmp/out"
    fi
fi
if expect_ok "summary text --graph" "$parallaxc" inspect "$src/examples/recommender/model.onnx" \
    --batch 4 --ranks 2 --stage parallel --graph; then
    vars_line=$(grep -n '^variables ' "$tmp/out" | head -n 1 | cut -d: -f1)
    nodes_line=$(grep -n '^nodes (' "$tmp/out" | head -n 1 | cut -d: -f1)
    if [ -n "$vars_line" ] && [ -n "$nodes_line" ] && [ "$vars_line" -lt "$nodes_line" ] &&
        grep -q '^predicted bytes per rank per step (2 ranks, ' "$tmp/out"; then
        pass "summary text --graph: the graph after the summary"
    else
        fail "summary text --graph: the graph after the summary" "$tmp/out"
    fi
fi

# ---- symbolic dims ---------------------------------------------------------------
sym=$tmp/symbolic.onnx
if expect_ok "symbolic imported json" "$parallaxc" inspect "$sym" --format json; then
    if grep -q '"name": "x", "dtype": "float", "shape": \["batch", 4\]' "$tmp/out" &&
        grep -q '"name": "y", "dtype": "float", "shape": \[null, 4\]' "$tmp/out" &&
        "$py" "$tmp/check_json.py" "$tmp/out" --stage imported >"$tmp/log" 2>&1; then
        pass "symbolic dims are names, unknown dims null"
    else
        fail "symbolic dims are names, unknown dims null" "$tmp/out"
    fi
fi
if expect_ok "symbolic --batch 3 (folded by default)" "$parallaxc" inspect "$sym" --batch 3 --format json; then
    if "$py" "$tmp/check_json.py" "$tmp/out" --stage folded --static >"$tmp/log" 2>&1 &&
        grep -q '"name": "ry", "dtype": "float", "shape": \[3, 4\]' "$tmp/out"; then
        pass "symbolic folded json is static"
    else
        fail "symbolic folded json is static" "$tmp/log"
    fi
fi

# ---- model errors: exit 1 with the diagnostic --------------------------------------
printf 'this is not an onnx model' >"$tmp/garbage.onnx"
expect_status "garbage model exits 1" 1 "error" "$parallaxc" inspect "$tmp/garbage.onnx"
expect_status "folded without bindings exits 1" 1 "error" "$parallaxc" inspect "$sym" --stage folded
expect_status "--freeze of a missing initializer exits 1" 1 "--freeze: 'nope'" \
    "$parallaxc" inspect "$add" --freeze nope
expect_status "-o into a missing folder exits 1" 1 "$tmp/no/such/dir.json" \
    "$parallaxc" inspect "$add" --format json -o "$tmp/no/such/dir.json"

# ---- the example models --------------------------------------------------------------
n_examples=0
for model in "$src"/examples/*/model.onnx; do
    [ -f "$model" ] || continue
    n_examples=$((n_examples + 1))
    rm -f "$tmp/example_imported.json"
    name=$(basename "$(dirname "$model")")
    expect_ok "example $name text" "$parallaxc" inspect "$model"
    if expect_ok "example $name imported json" "$parallaxc" inspect "$model" --format json; then
        cp "$tmp/out" "$tmp/example_imported.json"
        if "$py" "$tmp/check_json.py" "$tmp/out" --stage imported --names-of "$model" \
            >"$tmp/log" 2>&1; then
            pass "example $name imported json content"
        else
            fail "example $name imported json content" "$tmp/log"
        fi
    fi
    if expect_ok "example $name dot" "$parallaxc" inspect "$model" --batch 8 --format dot; then
        cp "$tmp/out" "$tmp/example.dot"
        check_dot "example $name dot accepted" "$tmp/example.dot"
    fi
    min_sparse=0
    [ "$name" = recommender ] && min_sparse=1 # its embedding tables are the point
    if expect_ok "example $name folded json" "$parallaxc" inspect "$model" --batch 8 --ranks 2 \
        --format json -o "$tmp/example.json" &&
        expect_ok "example $name folded onnx" "$parallaxc" inspect "$model" --batch 8 \
            --format onnx -o "$tmp/example.onnx"; then
        if "$py" "$tmp/check_json.py" "$tmp/example.json" --stage folded --ranks 2 --static \
            --min-sparse $min_sparse --memory-plan --rule-on "$tmp/example.onnx" "$model" \
            --same-classes-as "$tmp/example_imported.json" >"$tmp/log" 2>&1; then
            pass "example $name folded: static, classes match the rule ($(head -n 1 "$tmp/log"))"
        else
            fail "example $name folded json content" "$tmp/log"
        fi
    fi
done
if [ $n_examples -eq 0 ]; then
    fail "no examples/*/model.onnx under $src (run examples/export_all.sh)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
