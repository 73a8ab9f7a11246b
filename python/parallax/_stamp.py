"""The parallax.* metadata of an exported model (docs/metadata.md).

An ONNX file does not say which of its float initializers are the module's
parameters (trained) and which are buffers (a positional encoding, running
statistics: never trained by PyTorch), that two initializers are one tied
parameter (torch's constant folding turns `lm_head.weight = wte.weight`
into wte.weight plus an initializer holding its transpose), or which
embedding rows are padding_idx rows (never updated by PyTorch). stamp()
works that out from the module and writes it into the file's
metadata_props, where `parallaxc compile` and `inspect` read it:

    parallax.helper_version  "1"
    parallax.trainable       JSON array: the initializers to train, one per parameter
    parallax.ties            JSON array: initializers that are another one's copy
    parallax.padding_idx     JSON object: table initializer -> row
    parallax.parameters      JSON object: every parameter name -> its initializer
    parallax.buffers         JSON object: every exported buffer name -> its initializer

Parameters are found by name (torch names an initializer after the first of
a parameter's names) or, for initializers the exporter computed, by value:
an exporter-made initializer (named onnx::*) equal to a parameter, its
transpose, or a reshape of either. A parameter that reaches the loss but
is nowhere in the file (the exporter folded it into computed constants),
or whose copies cannot be told from unrelated constants, is an error that
names it and says how to export instead.
"""

import json

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

HELPER_VERSION = "1"
KEY_PREFIX = "parallax."
FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.BFLOAT16)
NO_FOLDING = "export with torch.onnx.export(..., do_constant_folding=False)"


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


def _named_buffers(model):
    return [(n, b) for n, b in model.named_buffers() if b is not None]


def _padding_rows(model):
    """{parameter name: padding_idx} of the nn.Embedding / nn.EmbeddingBag modules."""
    import torch
    rows = {}
    for mod_name, mod in model.named_modules():
        if isinstance(mod, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and \
                mod.padding_idx is not None:
            idx = int(mod.padding_idx)
            if idx < 0:
                idx += mod.weight.shape[0]
            rows[mod_name + ".weight" if mod_name else "weight"] = idx
    return rows


def _perm_to(src_shape, arr, target):
    """How target holds arr's values: (perm or None, shape differs) with
    target == reshape(transpose(arr, perm)), or None. Only the identity and
    the 2-D transpose are tried (what exporters make)."""
    if arr.size != target.size or arr.size == 0:
        return None
    if np.array_equal(arr.reshape(-1), target.reshape(-1)):
        return None, tuple(target.shape) != tuple(src_shape)
    if arr.ndim == 2:
        t = arr.T
        if np.array_equal(np.ascontiguousarray(t).reshape(-1), target.reshape(-1)):
            return [1, 0], tuple(target.shape) != (src_shape[1], src_shape[0])
    return None


def _compose(p0, pk, rank):
    """The perm c with transpose(x, pk) == transpose(transpose(x, p0), c)."""
    p0 = list(p0) if p0 else list(range(rank))
    pk = list(pk) if pk else list(range(rank))
    inv = [0] * rank
    for j, v in enumerate(p0):
        inv[v] = j
    c = [inv[v] for v in pk]
    return None if c == list(range(rank)) else c


def _params_reaching_loss(model, example_inputs):
    """Names of the parameter groups whose gradient the module's loss
    (model(*inputs), or its first element) depends on; None when the
    module cannot be run here. Buffers and the RNG are restored."""
    import torch
    if example_inputs is None:
        return None
    groups = _parameter_groups(model)
    params = [p for _, p in groups]
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    try:
        out = model(*example_inputs)
        loss = out[0] if isinstance(out, (tuple, list)) else out
        if not torch.is_tensor(loss) or loss.numel() != 1 or not loss.requires_grad:
            return None
        grads = torch.autograd.grad(loss.reshape(()), [p for p in params if p.requires_grad],
                                    allow_unused=True)
    finally:
        with torch.no_grad():
            model.load_state_dict(saved)
        torch.set_rng_state(rng)
    trained = [names for names, p in groups if p.requires_grad]
    return {names[0] for names, g in zip(trained, grads) if g is not None}


def metadata_for(model, onnx_model, example_inputs=None):
    """The parallax.* metadata_props of onnx_model (an onnx.ModelProto exported
    from model): {key: string}. Raises StampError when a parameter cannot be
    found in the file or its copies cannot be told from other constants.
    With example_inputs (the inputs the module was exported with), a
    parameter the loss depends on but the file lacks is an error."""
    inits = {}
    for t in onnx_model.graph.initializer:
        if t.data_type in FLOAT_TYPES:
            inits[t.name] = numpy_helper.to_array(t)
    groups = _parameter_groups(model)
    buffers = _named_buffers(model)
    named = {n for names, _ in groups for n in names} | {n for n, _ in buffers}
    # Exporter-made initializers: the only ones a parameter may hide in by value.
    made = [n for n in inits if n not in named and n.startswith("onnx::")]
    claimed = set()
    trainable, ties, parameters = [], [], {}
    reaching = _params_reaching_loss(model, example_inputs)
    for names, p in groups:
        arr = p.detach().cpu().numpy()
        found = []  # (initializer, perm, reshaped)
        for n in names:
            if n in inits and inits[n].shape == arr.shape and np.array_equal(inits[n], arr):
                found.append((n, None, False))
        copies = []
        for n in made:
            if n in claimed:
                continue
            how = _perm_to(arr.shape, arr, inits[n])
            if how is not None:
                copies.append((n, how[0], how[1]))
        if copies and arr.size and np.all(arr.reshape(-1) == arr.reshape(-1)[0]):
            raise StampError(
                "parameter %r holds one value (%r) everywhere, as do the exporter-made "
                "initializers %s: which of them are its copies cannot be told; %s, or give the "
                "parameter distinct values before exporting"
                % (names[0], float(arr.reshape(-1)[0]), ", ".join(repr(c[0]) for c in copies),
                   NO_FOLDING))
        found += copies
        if not found:
            if reaching is not None and names[0] in reaching:
                raise StampError(
                    "parameter %r reaches the loss but no initializer of the exported file holds "
                    "it: the exporter folded it into computed constants, which would not train; "
                    "%s" % (names[0], NO_FOLDING))
            continue
        claimed.update(f[0] for f in found)
        primary, perm0, _ = found[0]
        for n in names:
            entry = {"initializer": primary}
            if perm0:
                entry["perm"] = perm0
            parameters[n] = entry
        if p.requires_grad:
            trainable.append(primary)
        for n, perm, _ in found[1:]:
            tie = {"initializer": n, "of": primary}
            c = _compose(perm0, perm, arr.ndim)
            if c:
                tie["perm"] = c
            ties.append(tie)
    padding = {}
    for name, row in _padding_rows(model).items():
        entry = parameters.get(name)
        if entry is None:
            continue  # the table is not in the file (not used by the loss)
        if "perm" in entry:
            raise StampError("embedding %r with padding_idx is exported transposed as %r"
                             % (name, entry["initializer"]))
        padding[entry["initializer"]] = row
    buffer_map = {n: n for n, b in buffers if n in inits or
                  any(t.name == n for t in onnx_model.graph.initializer)}
    dump = lambda v: json.dumps(v, separators=(",", ":"))  # noqa: E731
    return {
        KEY_PREFIX + "helper_version": HELPER_VERSION,
        KEY_PREFIX + "trainable": dump(trainable),
        KEY_PREFIX + "ties": dump(ties),
        KEY_PREFIX + "padding_idx": dump(padding),
        KEY_PREFIX + "parameters": dump(parameters),
        KEY_PREFIX + "buffers": dump(buffer_map),
    }


def stamp(model, path, example_inputs=None):
    """Writes metadata_for(model, <the model at path>) into path's metadata_props
    (replacing any parallax.* keys there); returns the metadata."""
    meta = metadata_for(model, onnx.load(path), example_inputs)
    m = onnx.load(path, load_external_data=False)  # external data stays where it is
    kept = [e for e in m.metadata_props if not e.key.startswith(KEY_PREFIX)]
    del m.metadata_props[:]
    m.metadata_props.extend(kept)
    for k, v in meta.items():
        m.metadata_props.add(key=k, value=v)
    onnx.save(m, path)
    return meta
