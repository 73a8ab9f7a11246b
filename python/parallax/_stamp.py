"""Training-mode export and the parallax.* metadata (docs/metadata.md).

An ONNX file does not say which of its float initializers are the module's
parameters (trained) and which are buffers (a positional encoding, running
statistics: never trained by PyTorch), that two initializers are one tied
parameter (torch's constant folding turns `lm_head.weight = wte.weight`
into wte.weight plus an initializer holding its transpose), or which
embedding rows are padding_idx rows (never updated by PyTorch). stamp()
works that out from the module and writes it into the file's
metadata_props, where `parallaxc compile` and `inspect` read it;
export_training() exports a module for training and stamps the file.

Where the exporter's constant folding computed initializers, stamp()
finds out what each holds by exporting a copy of the module again with
every parameter and buffer element set to a distinct code (`reexport`): an
initializer of codes of one parameter in its order, transposed or not, is
that parameter; one of codes of parameters in another arrangement (an
RNN's gates reordered, attention's in_proj weight split into q, k and v)
is a piece of them, trained as a variable of its own, which the
elementwise optimizers make exactly PyTorch's training; anything else
computed from parameters is refused, naming it.
"""

import copy
import json

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

HELPER_VERSION = "1"
KEY_PREFIX = "parallax."
NO_FOLDING = "export with torch.onnx.export(..., do_constant_folding=False)"
CODE_EXP = 16  # codes are (1 + m/2^23) * 2^-(CODE_EXP + e): small, distinct, exact


class StampError(ValueError):
    """The module and the exported file cannot be matched safely."""


def _parameter_groups(model):
    """[(names, parameter)] in named_parameters() order; a parameter reached
    under several names (tied weights) is one group, its first name first."""
    groups, index = [], {}
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        for short, p in mod._parameters.items():
            if p is None:
                continue
            name = mod_name + "." + short if mod_name else short
            if id(p) not in index:
                index[id(p)] = len(groups)
                groups.append(([], p))
            if name not in groups[index[id(p)]][0]:
                groups[index[id(p)]][0].append(name)
    return groups


def _padding_rows(model):
    """{parameter name: padding_idx} of the nn.Embedding / nn.EmbeddingBag modules."""
    import torch
    rows = {}
    for mod_name, mod in model.named_modules():
        if isinstance(mod, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and \
                mod.padding_idx is not None:
            idx = int(mod.padding_idx)
            rows[(mod_name + "." if mod_name else "") + "weight"] = \
                idx + mod.weight.shape[0] if idx < 0 else idx
    return rows


def _float_tensors(model):
    """[(names, tensor, is_parameter)]: parameter groups, then float buffers."""
    out = [(names, p, True) for names, p in _parameter_groups(model)]
    seen = {id(p) for _, p, _ in out}
    for name, b in model.named_buffers():
        if b is not None and b.is_floating_point() and id(b) not in seen:
            seen.add(id(b))
            out.append(([name], b, False))
    return out


def _codes(start, n):
    i = np.arange(start, start + n, dtype=np.int64)
    bits = ((127 - CODE_EXP - (i >> 23)) << 23) | (i & 0x7FFFFF)
    return bits.astype(np.uint32).view(np.float32)


def _decode(a):
    """The element numbers the codes in a stand for; -1 where not a code."""
    bits = np.ascontiguousarray(a, dtype=np.float32).reshape(-1).view(np.uint32).astype(np.int64)
    e = 127 - CODE_EXP - (bits >> 23)
    ok = (bits >> 31 == 0) & (e >= 0) & (e < 127 - CODE_EXP - 1)
    return np.where(ok, (e << 23) | (bits & 0x7FFFFF), -1)


def _coded_initializers(model, reexport):
    """{initializer name: element numbers} of the file reexport(copy, path) writes
    from a copy of model whose float parameters and buffers hold codes; and the
    [start, end) numbers of each of _float_tensors(model)."""
    import os
    import tempfile

    import torch
    coded = copy.deepcopy(model)
    spans, start = [], 0
    with torch.no_grad():
        for names, t, _ in _float_tensors(coded):
            n = t.numel()
            if t.dtype == torch.float32:
                t.copy_(torch.from_numpy(_codes(start, n)).reshape(t.shape))
            spans.append((start, start + n))
            start += n
    rng = torch.get_rng_state()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "coded.onnx")
        try:
            reexport(coded, path)
        finally:
            torch.set_rng_state(rng)
        inits = {t.name: _decode(numpy_helper.to_array(t))
                 for t in onnx.load(path).graph.initializer
                 if t.data_type == onnx.TensorProto.FLOAT}
    # An initializer named after a parameter or buffer is it (a training-mode
    # trace moves BatchNorm's running statistics away from their codes).
    for (names, _, _), (lo, hi) in zip(_float_tensors(model), spans):
        for n in names:
            if n in inits:
                inits[n] = np.arange(lo, hi)
    return inits, spans


def _arrangement(numbers, span, shape):
    """How numbers (an initializer's codes) hold the tensor of span: "same",
    [1, 0] (its transpose), or None (some other arrangement)."""
    lo, hi = span
    if numbers.size != hi - lo:
        return None
    local = numbers - lo
    if np.array_equal(local, np.arange(hi - lo)):
        return "same"
    if len(shape) == 2 and np.array_equal(
            local, np.arange(hi - lo).reshape(shape).T.reshape(-1)):
        return [1, 0]
    return None


def _numbers_by_value(tensors, spans, init):
    """Without a coded re-export: the element numbers of the parameter that
    init holds whole (its values exactly, or its transpose's), else -1s (a
    constant). A parameter holding one value everywhere cannot be told from
    a constant of the same size: refused."""
    arr = numpy_helper.to_array(init)
    for (ns, t, is_param), (lo, hi) in zip(tensors, spans):
        p = t.detach().cpu().numpy()
        if not is_param or p.size != arr.size or p.size == 0:
            continue
        flat = arr.reshape(-1)
        same = np.array_equal(p.reshape(-1), flat)
        tr = p.ndim == 2 and np.array_equal(np.ascontiguousarray(p.T).reshape(-1), flat)
        if not (same or tr):
            continue
        if np.all(p.reshape(-1) == p.reshape(-1)[0]):
            raise StampError(
                "parameter %r holds one value (%r) everywhere, as does the exporter-made "
                "initializer %r: whether it is a copy cannot be told; pass reexport=, %s, or "
                "give the parameter distinct values before exporting"
                % (ns[0], float(p.reshape(-1)[0]), init.name, NO_FOLDING))
        idx = np.arange(lo, hi)
        return idx if same else idx.reshape(p.shape).T.reshape(-1)
    return np.full(arr.size, -1)


def metadata_for(model, onnx_model, example_inputs=None, reexport=None):
    """The parallax.* metadata_props of onnx_model (an onnx.ModelProto exported
    from model in training mode): {key: string}.

    reexport(module, path) must export module as onnx_model was exported.
    Where the exporter computed initializers (constant folding), it tells
    exactly what each holds; without it, only whole copies of a parameter
    (or of its transpose) are recognised, and a parameter the loss depends
    on but held in no such copy is refused.
    Raises StampError naming the parameter or initializer that cannot be
    trained as PyTorch trains the module."""
    tensors = _float_tensors(model)
    float_inits = [t for t in onnx_model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT]
    names = {n for ns, _, _ in tensors for n in ns}
    made = [t.name for t in float_inits if t.name not in names]
    if made and reexport is not None:
        numbers, spans = _coded_initializers(model, reexport)
    else:  # initializers named after a tensor are it; others are matched by value
        numbers, spans, start = {}, [], 0
        by_name = {n: k for k, (ns, _, _) in enumerate(tensors) for n in ns}
        for ns, t, _ in tensors:
            spans.append((start, start + t.numel()))
            start += t.numel()
        for t in float_inits:
            if t.name in by_name:
                lo, hi = spans[by_name[t.name]]
                numbers[t.name] = np.arange(lo, hi)
            else:
                numbers[t.name] = _numbers_by_value(tensors, spans, t)
    starts = np.array([lo for lo, _ in spans], dtype=np.int64)

    def owner_of(num):  # the tensor index of each element number
        return np.searchsorted(starts, num, side="right") - 1

    holders = {}  # tensor index -> [(initializer, arrangement or None)]
    folded = {}  # piece initializer -> tensor indices it draws from
    for t in float_inits:
        if t.name not in numbers:
            raise StampError("initializer %r of the file is not in the re-exported one: the "
                             "two exports differ" % t.name)
        num = numbers[t.name]
        if num.size == 0 or np.all(num < 0):
            continue  # a constant computed from no parameter or buffer
        if np.any(num < 0):
            owners = sorted({int(k) for k in owner_of(num[num >= 0])})
            raise StampError(
                "initializer %r is computed from %s by the exporter's constant folding (it "
                "mixes their values with other arithmetic): it would not train as PyTorch "
                "trains them; %s" % (t.name, ", ".join(repr(tensors[k][0][0]) for k in owners),
                                     NO_FOLDING))
        owners = sorted({int(k) for k in owner_of(num)})
        k = owners[0]
        how = _arrangement(num, spans[k], tuple(tensors[k][1].shape)) if len(owners) == 1 \
            else None
        if how is not None:
            holders.setdefault(k, []).append((t.name, how))
        else:
            if any(not tensors[j][2] for j in owners) and any(tensors[j][2] for j in owners):
                raise StampError("initializer %r mixes parameters and buffers (%s)"
                                 % (t.name, ", ".join(tensors[j][0][0] for j in owners)))
            folded[t.name] = owners
            for j in owners:
                holders.setdefault(j, []).append((t.name, None))

    # Every element of a parameter must live in one place, or in whole copies.
    for k, held in holders.items():
        pieces = [h for h in held if h[1] is None]
        if pieces and len(held) > 1:
            wholes = [h[0] for h in held if h[1] is not None]
            if wholes or len({h[0] for h in pieces}) < len(pieces) or \
                    _overlaps([numbers[h[0]] for h in pieces]):
                raise StampError(
                    "%s %r is held by the exporter in pieces that overlap %s: tied that way it "
                    "cannot train as one; %s"
                    % ("parameter" if tensors[k][2] else "buffer", tensors[k][0][0],
                       ", ".join(repr(h[0]) for h in held), NO_FOLDING))

    reaching = _params_reaching_loss(model, example_inputs)
    trainable, ties, parameters, buffers = [], [], {}, {}
    for k, (ns, t, is_param) in enumerate(tensors):
        held = holders.get(k, [])
        wholes = [h for h in held if h[1] is not None]
        if not held:
            if is_param and reaching is not None and ns[0] in reaching:
                raise StampError(
                    "parameter %r reaches the loss but the exported file holds none of it: the "
                    "exporter folded it into computed constants, which would not train; %s"
                    % (ns[0], NO_FOLDING))
            continue
        if not is_param:
            if wholes and wholes[0][1] == "same":
                buffers[ns[0]] = wholes[0][0]
            continue
        if wholes:
            primary, perm0 = wholes[0]
            for n in ns:
                parameters[n] = {"initializer": primary}
                if perm0 != "same":
                    parameters[n]["perm"] = perm0
            if t.requires_grad:
                trainable.append(primary)
            for name, perm in wholes[1:]:
                tie = {"initializer": name, "of": primary}
                if perm != perm0:
                    tie["perm"] = [1, 0]
                ties.append(tie)
    for name, owners in folded.items():
        grads = {bool(tensors[j][1].requires_grad) for j in owners if tensors[j][2]}
        if grads == {True}:
            trainable.append(name)
        elif len(grads) > 1:
            raise StampError("initializer %r mixes trainable and frozen parameters" % name)
    padding = {}
    for name, row in _padding_rows(model).items():
        entry = parameters.get(name)
        if entry is None:
            continue  # the table is not in the file (not used by the loss)
        if "perm" in entry:
            raise StampError("embedding %r with padding_idx is exported transposed as %r"
                             % (name, entry["initializer"]))
        padding[entry["initializer"]] = row
    dump = lambda v: json.dumps(v, separators=(",", ":"))  # noqa: E731
    return {
        KEY_PREFIX + "helper_version": HELPER_VERSION,
        KEY_PREFIX + "trainable": dump(trainable),
        KEY_PREFIX + "ties": dump(ties),
        KEY_PREFIX + "padding_idx": dump(padding),
        KEY_PREFIX + "parameters": dump(parameters),
        KEY_PREFIX + "buffers": dump(buffers),
        KEY_PREFIX + "folded": dump({n: [tensors[j][0][0] for j in o] for n, o in folded.items()}),
    }


def _overlaps(arrays):
    allnum = np.concatenate(arrays)
    return np.unique(allnum).size != allnum.size


def _params_reaching_loss(model, example_inputs):
    """Names of the parameter groups whose gradient the module's loss
    (model(*inputs), or its first element) depends on; None when the
    module cannot be run here. Buffers and the random state are restored."""
    import torch
    if example_inputs is None:
        return None
    groups = [(ns, p) for ns, p in _parameter_groups(model) if p.requires_grad]
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    try:
        out = model(*example_inputs)
        loss = out[0] if isinstance(out, (tuple, list)) else out
        if not torch.is_tensor(loss) or loss.numel() != 1 or not loss.requires_grad:
            return None
        grads = torch.autograd.grad(loss.reshape(()), [p for _, p in groups], allow_unused=True)
    finally:
        with torch.no_grad():
            model.load_state_dict(saved)
        torch.set_rng_state(rng)
    return {ns[0] for (ns, _), g in zip(groups, grads) if g is not None}


def stamp(model, path, example_inputs=None, reexport=None, buffers=None):
    """Writes metadata_for(model, <the model at path>, example_inputs, reexport)
    into path's metadata_props (replacing any parallax.* keys there) and
    returns the metadata. buffers ({name: tensor}, e.g. the module's buffers
    before a training-mode export's trace moved them) replaces the values of
    the buffer initializers in the file."""
    meta = metadata_for(model, onnx.load(path), example_inputs, reexport)
    m = onnx.load(path, load_external_data=False)  # external data stays where it is
    kept = [e for e in m.metadata_props if not e.key.startswith(KEY_PREFIX)]
    del m.metadata_props[:]
    m.metadata_props.extend(kept)
    for k, v in meta.items():
        m.metadata_props.add(key=k, value=v)
    where = json.loads(meta[KEY_PREFIX + "buffers"])
    for t in m.graph.initializer:
        for name, init in where.items():
            if init == t.name and buffers is not None and name in buffers:
                t.CopyFrom(numpy_helper.from_array(buffers[name].detach().cpu().numpy(), t.name))
    onnx.save(m, path)
    return meta


def export_training(model, example_inputs, path, input_names, output_names=("loss",),
                    do_constant_folding=False, opset_version=17, dynamic_axes=None):
    """torch.onnx.export of model in training mode (BatchNorm with batch
    statistics, Dropout kept), with the loss symbolics registered, then
    stamp(): the file says what trains. The module, its buffers and the
    random state are as they were before (a training-mode export's trace
    would move BatchNorm's running statistics; the file holds them as they
    were). dynamic_axes defaults to a symbolic dim 0 ("batch") for every
    input and every output but the first (the loss). Returns the metadata."""
    import torch

    from ._symbolics import register_loss_symbolics
    register_loss_symbolics()
    names, outs = list(input_names), list(output_names)
    if dynamic_axes is None:
        dynamic_axes = {n: {0: "batch"} for n in names + outs[1:]}
    args = tuple(example_inputs)

    def export(module, out_path):
        was_training = module.training
        module.train()
        try:
            torch.onnx.export(module, args, out_path, opset_version=opset_version,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=do_constant_folding, input_names=names,
                              output_names=outs, dynamic_axes=dynamic_axes)
        finally:
            module.train(was_training)

    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    try:
        export(model, path)
    finally:
        with torch.no_grad():
            model.load_state_dict(state)
        torch.set_rng_state(rng)
    return stamp(model, path, args, reexport=export, buffers=dict(model.named_buffers()))
