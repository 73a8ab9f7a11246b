"""parallax.load_state_dict: trained weights from an ONNX file back into the
torch.nn module they were exported from.

The program's `--save trained.onnx` writes the exported graph with the
trained initializers and the export's metadata. Each state_dict entry takes
the initializer the metadata's parameters/buffers maps name for it (which
also covers initializers the exporter transposed), or else the one of its
own name: never a guess by shape or position. What does not map is
reported, and with strict=True (the default) refused before anything is
copied.
"""
import json

import numpy as np
import torch

from ._onnx import numpy_helper, onnx

FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.BFLOAT16}


class LoadError(ValueError):
    """The file's weights do not map onto the module; the message lists what
    did not map."""


class LoadReport:
    """What load_state_dict did.

    loaded       state_dict names copied from the file
    tied         names that share their tensor with a loaded one (set through it)
    missing      parameters the file does not hold (left as they were)
    missing_buffers  buffers the file does not hold (left as they were), e.g.
                 BatchNorm's num_batches_tracked, which the graph does not carry
    unexpected   float initializers of the file that are no entry of the module
    mismatched   (name, shape in the module, shape in the file)
    """

    def __init__(self):
        self.loaded, self.tied, self.missing, self.missing_buffers = [], [], [], []
        self.unexpected, self.mismatched = [], []

    @property
    def ok(self):
        return not (self.missing or self.unexpected or self.mismatched)

    def __str__(self):
        lines = ["loaded %d of the module's tensors from the file" % len(self.loaded)]
        if self.tied:
            lines.append("tied to a loaded tensor: %s" % ", ".join(self.tied))
        if self.mismatched:
            lines.append("shape or dtype differs (module vs file): %s" % ", ".join(
                "%s %s vs %s" % m for m in self.mismatched))
        if self.missing:
            lines.append("parameters not in the file (left as they were; a parameter the "
                         "exported forward did not use is not exported): %s"
                         % ", ".join(self.missing))
        if self.missing_buffers:
            lines.append("buffers not in the file (left as they were): %s"
                         % ", ".join(self.missing_buffers))
        if self.unexpected:
            lines.append("float initializers of the file that are no entry of the module: %s"
                         % ", ".join(self.unexpected))
        return "\n".join(lines)

    __repr__ = __str__


def _file(path):
    """(name -> TensorProto of every initializer, the parallax.* metadata or
    None). External data is resolved relative to the model's folder, as
    onnx.load does."""
    model = onnx.load(path)
    inits = {init.name: init for init in model.graph.initializer}
    meta = {p.key: p.value for p in model.metadata_props}
    if "parallax.parameters" not in meta:
        return inits, None
    return inits, {
        "parameters": json.loads(meta["parallax.parameters"]),
        "buffers": json.loads(meta.get("parallax.buffers", "{}")),
        "copies": {t["initializer"] for t in json.loads(meta.get("parallax.ties", "[]"))},
    }


def _where(name, inits, meta):
    """(initializer name, perm or None) that holds the state_dict entry name,
    or None. With metadata, its parameters/buffers maps say; an entry they do
    not name is looked up by its own name."""
    if meta is not None:
        if name in meta["parameters"]:
            entry = meta["parameters"][name]
            return entry["initializer"], entry.get("perm")
        if name in meta["buffers"]:
            return meta["buffers"][name], None
    return (name, None) if name in inits else None


def _value_for(tensor, init, perm, reshape_ok):
    """The initializer's values in the tensor's layout, or None when they do
    not fit: the file holds reshape(transpose(tensor, perm), its own shape)."""
    value = numpy_helper.to_array(init)
    held = [tensor.shape[p] for p in perm] if perm else list(tensor.shape)
    if list(value.shape) != held:
        if not reshape_ok or value.size != tensor.numel():
            return None
        value = value.reshape(held)
    if perm:
        value = np.transpose(value, np.argsort(perm))
    return value


def load_state_dict(module, path, strict=True):
    """Copies the trained initializers of the ONNX file at path into the
    module's parameters and buffers, and returns a LoadReport.

    Each state_dict entry takes the initializer the file's parallax.*
    metadata names for it (docs/metadata.md: parallax.export writes it), or
    else the initializer of its own name. strict=True raises LoadError,
    copying nothing, when a parameter is not in the file (one the exported
    graph did not use is not either), or a float initializer of the file is
    no entry of the module. strict=False copies what maps and reports the
    rest; a shape mismatch is refused either way.
    """
    if not isinstance(module, torch.nn.Module):
        raise LoadError("module must be a torch.nn.Module, not %s" % type(module).__name__)
    inits, meta = _file(path)
    state = module.state_dict(keep_vars=True)
    params = {name for name, t in state.items() if isinstance(t, torch.nn.Parameter)}
    report = LoadReport()
    plan, used, loaded_ptrs = [], set(), {}
    for name, tensor in state.items():
        if tensor.numel() > 0 and tensor.data_ptr() in loaded_ptrs:
            report.tied.append("%s (= %s)" % (name, loaded_ptrs[tensor.data_ptr()]))
            continue
        where = _where(name, inits, meta)
        if where is None or where[0] not in inits:
            (report.missing if name in params else report.missing_buffers).append(name)
            continue
        init = inits[where[0]]
        value = _value_for(tensor, init, where[1], meta is not None)
        if value is None:
            report.mismatched.append((name, list(tensor.shape),
                                      list(numpy_helper.to_array(init).shape)))
            continue
        if tensor.is_floating_point() != (init.data_type in FLOAT_TYPES):
            report.mismatched.append((name, str(tensor.dtype), str(value.dtype)))
            continue
        plan.append((tensor, value))
        used.add(where[0])
        report.loaded.append(name)
        loaded_ptrs[tensor.data_ptr()] = name
    copies = meta["copies"] if meta is not None else set()
    report.unexpected = sorted(n for n, i in inits.items()
                               if n not in used and n not in copies and
                               i.data_type in FLOAT_TYPES)
    if report.mismatched or (strict and not report.ok):
        raise LoadError("%s does not map onto %s:\n%s" % (path, type(module).__name__, report))
    with torch.no_grad():
        for tensor, value in plan:
            tensor.copy_(torch.from_numpy(np.array(value, copy=True)).to(tensor.dtype))
    return report


__all__ = ["load_state_dict", "LoadReport", "LoadError"]
