#!/bin/bash
# Usage: metadata.sh PARALLAXC SRCDIR
#
# The parallax.* metadata (docs/metadata.md) as compile and inspect use it:
#   - a model with a registered positional-encoding buffer `pe` (read through
#     Slice) and an nn.Embedding(padding_idx=0) table: exported plainly, compile
#     warns about pe and lists what it trains, inspect's "trained:" section
#     lists pe; exported through python/parallax, pe is not trained (inspect
#     says why, JSON too), and after training (SGD and Adam, 1 rank and 2 ranks,
#     --comm hybrid, allreduce and ps) the saved model's pe and the table's
#     padding row are exactly as exported while other rows moved;
#   - a GPT-2-style tied lm_head exported with constant folding and no metadata:
#     compile warns naming both initializers;
#   - an initializer named like a PyTorch buffer that would be trained: warned;
#   - metadata of another version, or naming no initializer: compile fails
#     naming the key.
. "$(dirname "$0")/lib.sh" "$@"
cd "$tmp"
export OMP_NUM_THREADS=1
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)

if ! "$py" - "$src" >export.log 2>&1 <<'PY'; then
import os, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(sys.argv[1], "python"))
import numpy as np
import parallax
import onnx
from onnx import TensorProto, helper
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
V, T, D = 12, 5, 4


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D, padding_idx=0)
        self.register_buffer("pe", torch.randn(8, D))
        self.out = nn.Linear(D, 3)

    def forward(self, ids, y):
        h = self.emb(ids) + self.pe[:ids.shape[1]]
        return F.cross_entropy(self.out(h).reshape(-1, 3), y.reshape(-1))


m = Tagger()
rng = np.random.RandomState(0)
ids = rng.randint(0, V, (16, T)).astype(np.int64)
ids[:, -1] = 0  # every sample pads its last position
y = rng.randint(0, 3, (16, T)).astype(np.int64)
os.makedirs("data")
np.save("data/ids.npy", ids)
np.save("data/y.npy", y)
ex = (torch.from_numpy(ids[:4]), torch.from_numpy(y[:4]))
kw = dict(opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
          input_names=["ids", "y"], output_names=["loss"],
          dynamic_axes={"ids": {0: "b"}, "y": {0: "b"}})
torch.onnx.export(m, ex, "plain.onnx", do_constant_folding=False, **kw)
parallax.export_training(m, ex, "stamped.onnx", ["ids", "y"])


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, ids, y):
        return F.cross_entropy(self.head(self.wte(ids)).reshape(-1, V), y.reshape(-1))


torch.onnx.export(Tied(), ex, "tied.onnx", do_constant_folding=True, **kw)
inits = {t.name for t in onnx.load("tied.onnx").graph.initializer}
assert len(inits) == 2 and "wte.weight" in inits, inits

f = helper.make_tensor_value_info
g = helper.make_graph(
    [helper.make_node("Mul", ["x", "bn.running_var"], ["p"]),
     helper.make_node("ReduceSum", ["p"], ["loss"], keepdims=0)], "g",
    [f("x", TensorProto.FLOAT, ["b", 3])], [f("loss", TensorProto.FLOAT, [])],
    [helper.make_tensor("bn.running_var", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "buffer_name.onnx")

for name, version, trainable in (("version.onnx", "9", '["emb.weight"]'),
                                 ("unknown.onnx", "1", '["emb.weight", "nope"]')):
    mm = onnx.load("stamped.onnx")
    for e in mm.metadata_props:
        if e.key == "parallax.helper_version":
            e.value = version
        if e.key == "parallax.trainable":
            e.value = trainable
    onnx.save(mm, name)
PY
    fail "export: $(tail -c 1500 export.log)"
    exit 1
fi

# Without metadata: the warning about pe and the list of what trains.
if "$parallaxc" compile plain.onnx -o plain_prog --batch 4 >log 2>&1 &&
    grep -q "warning: initializer 'pe' is read only through Slice" log &&
    grep -q "note: the model has no parallax.trainable metadata: training every float initializer not --freeze'd (4): 'pe', 'emb.weight', 'out.weight', 'out.bias'" log; then
    pass "no metadata: compile warns about pe and lists the 4 trained initializers"
else
    fail "no metadata: compile's warnings: $(head -c 1200 log)"
fi
if "$parallaxc" inspect plain.onnx --batch 4 >out 2>log && grep -q '^trained: 4 initializers (every float' out &&
    grep -q '^  %pe$' out; then
    pass "no metadata: inspect's trained section lists pe"
else
    fail "no metadata: inspect: $(head -c 1200 out) $(head -c 600 log)"
fi

# With metadata: pe is not trained, and says why.
if "$parallaxc" inspect stamped.onnx --batch 4 >out 2>log &&
    grep -q '^trained: 3 initializers (parallax.trainable)$' out &&
    grep -q '^  %pe  # not in parallax.trainable: a buffer or a constant$' out &&
    ! grep -q "warning" log; then
    pass "metadata: inspect's trained section leaves pe out, no warning"
else
    fail "metadata: inspect: $(head -c 1200 out) $(head -c 600 log)"
fi
if "$parallaxc" inspect stamped.onnx --batch 4 --format json >out.json 2>log &&
    "$py" -c '
import json, sys
t = json.load(open(sys.argv[1]))["trained"]
assert t["from"] == "parallax.trainable", t
assert sorted(t["initializers"]) == ["emb.weight", "out.bias", "out.weight"], t
assert {"name": "pe", "reason": "not in parallax.trainable: a buffer or a constant"} in t["not_trained"], t
' out.json 2>>log; then
    pass "metadata: inspect --format json has the same trained set"
else
    fail "metadata: inspect json: $(head -c 1200 log)"
fi

# Training leaves pe and the padding row as exported, in every mode and at 2 ranks.
check_frozen() { # LABEL SAVED.onnx
    "$py" - "$1" "$2" <<'PY'
import sys
import numpy as np
for a, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if a not in np.__dict__:
        setattr(np, a, t)
import onnx
from onnx import numpy_helper
a = {t.name: numpy_helper.to_array(t) for t in onnx.load("stamped.onnx").graph.initializer}
b = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[2]).graph.initializer}
problems = []
if not np.array_equal(a["pe"], b["pe"]):
    problems.append("pe changed")
if not np.array_equal(a["emb.weight"][0], b["emb.weight"][0]):
    problems.append("padding row 0 changed: %s -> %s" % (a["emb.weight"][0], b["emb.weight"][0]))
if np.array_equal(a["emb.weight"][1:], b["emb.weight"][1:]):
    problems.append("no other row moved")
if problems:
    sys.exit("%s: %s" % (sys.argv[1], "; ".join(problems)))
PY
}
for opt in sgd adam; do
    for comm in hybrid allreduce ps; do
        label="$opt --comm $comm"
        if ! "$parallaxc" compile stamped.onnx -o prog --batch 2 --optimizer $opt --lr 0.1 \
            --comm $comm >log 2>&1; then
            fail "$label: compile: $(head -c 800 log)"
            continue
        fi
        if ./prog --data data --steps 4 --save one.onnx --log-every 0 >log 2>&1 &&
            "${mpi[@]}" ./prog --data data --steps 4 --save two.onnx --log-every 0 >>log 2>&1 &&
            check_frozen "$label, 1 rank" one.onnx >>log 2>&1 &&
            check_frozen "$label, 2 ranks" two.onnx >>log 2>&1; then
            pass "$label: pe and the padding row unchanged at 1 and 2 ranks"
        else
            fail "$label: $(tail -c 1200 log)"
        fi
    done
done

# A tie the exporter made, without metadata: warned, naming both.
if "$parallaxc" compile tied.onnx -o tied_prog --batch 4 >log 2>&1 &&
    grep -qE "warning: initializers '(wte.weight|onnx::MatMul_[0-9]+)' and '(wte.weight|onnx::MatMul_[0-9]+)' hold the same values \(the second is the first transposed\)" log; then
    pass "no metadata: the exporter's transposed copy of a tied weight is warned about"
else
    fail "tied without metadata: $(head -c 1200 log)"
fi

if "$parallaxc" compile buffer_name.onnx -o bn_prog --batch 4 >log 2>&1 &&
    grep -q "warning: initializer 'bn.running_var' has the name of a PyTorch buffer" log; then
    pass "no metadata: a trained initializer with a buffer's name is warned about"
else
    fail "buffer name: $(head -c 1200 log)"
fi

for c in "version:'parallax.helper_version' is '9'" "unknown:'parallax.trainable': 'nope' is not an initializer"; do
    name=${c%%:*}
    want=${c#*:}
    "$parallaxc" compile "$name.onnx" -o bad_prog --batch 4 >log 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -qF "$want" log && [ ! -e bad_prog ]; then
        pass "bad metadata ($name) refused naming the key"
    else
        fail "bad metadata ($name): status $rc: $(head -c 800 log)"
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
