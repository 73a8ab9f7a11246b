"""parallax.export: a torch.nn module to the ONNX file parallaxc trains.

Parallax differentiates the graph's scalar float output, so the exported
forward must return the loss. A model that returns logits is wrapped with
loss_fn: the graph then takes the model's inputs and a `target`, and returns
`loss` and the model's `output` (which `compile --infer --outputs output`
computes later without the target).

The export is the one the compiler expects (each point is a way a plain
torch.onnx.export trains a different model):
  - training mode: Dropout is kept and BatchNorm exports its batch
    statistics and running-statistics update; an eval-mode export drops
    Dropout and folds BatchNorm into the Conv before it;
  - no constant folding: folding merges parameters that happen to be equal
    (a fresh LayerNorm's weight and bias) into one initializer, which then
    trains as one tied parameter, and renames transposed Linear weights;
  - dim 0 of every input and of every output but the loss is the symbolic
    `batch`, so `parallaxc compile --batch N` chooses the batch;
  - opset 17.
The file's metadata_props say which initializers are the module's
parameters, which are tied copies and which embedding rows are padding_idx
rows (stamp(), docs/metadata.md); the standard losses torch 1.13 cannot
export go through register_loss_symbolics(). The module itself is left as
it was: its train/eval mode, its buffers
(tracing runs forward once, which would update BatchNorm's running
statistics) and the random number generator's state are restored.
"""
import contextlib
import copy
import inspect
import os
import warnings

import torch

from . import __version__
from ._stamp import stamp
from ._symbolics import register_loss_symbolics
from .checks import check_onnx

OPSET = 17


class ExportError(ValueError):
    """The module cannot be exported as a Parallax training graph; the message
    says why and what to change."""


class _WithLoss(torch.nn.Module):
    """forward(*inputs, target) -> (loss_fn(model(*inputs), target), model output).

    It shares the model's parameter, buffer and submodule tables instead of
    holding the model as a submodule, so that everything named after it
    (the exported initializers, the metadata) carries the model's own names,
    not "model.embed.weight"."""

    def __init__(self, model, loss_fn):
        super().__init__()
        self.__dict__["_parameters"] = model._parameters
        self.__dict__["_buffers"] = model._buffers
        self.__dict__["_modules"] = model._modules
        self.__dict__["wrapped_model"] = model
        self.__dict__["loss_fn"] = loss_fn

    def forward(self, *args):
        out = self.wrapped_model(*args[:-1])
        loss = self.loss_fn(out, args[-1])
        return (loss, out) if isinstance(out, torch.Tensor) else loss


def _forward_names(model, count):
    """The names of forward()'s first count positional parameters, or
    input0.. when the signature does not give that many."""
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) >= count:
        return names[:count]
    return ["input%d" % i for i in range(count)]


@contextlib.contextmanager
def _left_as_it_was(model):
    """Runs the block in training mode and then restores the module: every
    submodule's mode, every buffer's value, and the RNG state."""
    modes = [(m, m.training) for m in model.modules()]
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    rng = torch.get_rng_state()
    model.train()
    try:
        yield
    finally:
        with torch.no_grad():
            for b, saved in buffers:
                b.copy_(saved)
        for m, training in modes:
            m.training = training
        torch.set_rng_state(rng)


def _flatten(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _check_loss(value, wrapped):
    if not isinstance(value, torch.Tensor):
        raise ExportError("forward returned %s, not a tensor: Parallax trains the graph's "
                          "scalar loss output" % type(value).__name__)
    if value.dim() != 0 or not value.is_floating_point():
        fix = ("the loss_fn returned a tensor of shape %s: use a reduction that gives a scalar "
               "(reduction='mean')" % list(value.shape) if wrapped else
               "pass loss_fn=... (e.g. torch.nn.CrossEntropyLoss()) to export a model that "
               "returns %s, or wrap it so that forward returns the loss" %
               ("logits" if value.is_floating_point() else "a %s tensor" % value.dtype))
        raise ExportError("the model's first output is a %s tensor of shape %s, not a float "
                          "scalar loss: Parallax trains the graph's scalar loss output; %s"
                          % (value.dtype, list(value.shape), fix))


def export(model, example_inputs, path, loss_fn=None, input_names=None, output_names=None,
           check=True):
    """Exports model for `parallaxc compile` and returns the list of problems the
    file's checks found (empty when it is fine; each is also warned).

    model           a torch.nn.Module. Without loss_fn its forward must return the
                    loss (a float scalar), or a tuple whose first element is the
                    loss and whose others are outputs to compute later.
    example_inputs  a tensor or a tuple of tensors in forward()'s order, with a
                    batch of at least 2 along dim 0; with loss_fn, the target last.
    path            the .onnx file to write.
    loss_fn         loss_fn(model(*inputs), target) -> scalar loss; the graph then
                    returns (loss, output).
    input_names     the graph's input names (default: forward()'s parameter names,
                    then "target" with loss_fn); they name the data files,
                    DIR/<name>.npy.
    output_names    the graph's output names (default: "loss", then "output" or
                    "output1", "output2", ...).
    check           run the export checks on the written file.
    """
    if not isinstance(model, torch.nn.Module):
        raise ExportError("model must be a torch.nn.Module, not %s" % type(model).__name__)
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) \
        else (example_inputs,)
    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise ExportError("example_inputs must be a tensor or a tuple of tensors")
    if loss_fn is not None and len(inputs) < 2:
        raise ExportError("with loss_fn, example_inputs are the model's inputs and then the "
                          "target: give at least two tensors")
    for i, t in enumerate(inputs):
        if t.dim() == 0 or t.shape[0] < 2:
            raise ExportError("example input %d has shape %s: give a batch of at least 2 "
                              "samples along dim 0, so that nothing specialises on one sample"
                              % (i, list(t.shape)))

    eval_modules = [name or type(model).__name__ for name, m in model.named_modules()
                    if not m.training]
    if eval_modules:
        warnings.warn("parallax.export: %s in eval mode (model.eval()); exported in training "
                      "mode, so that Dropout and BatchNorm train as in PyTorch (the module is "
                      "left in eval mode); call model.train() before export to silence this"
                      % (", ".join(eval_modules[:4]) + (", ..." if len(eval_modules) > 4 else "")
                         + (" is" if len(eval_modules) == 1 else " are")), stacklevel=2)

    wrapped = loss_fn is not None
    graph_module = _WithLoss(model, loss_fn) if wrapped else model
    with _left_as_it_was(model), torch.no_grad():
        outputs = _flatten(graph_module(*(copy.deepcopy(t) for t in inputs)))
    _check_loss(outputs[0], wrapped)

    if input_names is None:
        n_model = len(inputs) - 1 if wrapped else len(inputs)
        input_names = _forward_names(model, n_model) + (["target"] if wrapped else [])
    input_names = list(input_names)
    if len(input_names) != len(inputs) or len(set(input_names)) != len(input_names):
        raise ExportError("input_names %s: give %d distinct names, one per example input"
                          % (input_names, len(inputs)))
    if output_names is None:
        output_names = ["loss"] + (["output"] if len(outputs) == 2 else
                                   ["output%d" % i for i in range(1, len(outputs))])
    output_names = list(output_names)
    if len(output_names) != len(outputs):
        raise ExportError("output_names %s: the model returns %d outputs"
                          % (output_names, len(outputs)))
    dynamic_axes = {n: {0: "batch"} for n in input_names + output_names[1:]}

    register_loss_symbolics()
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ExportError("cannot write %s: folder %s does not exist" % (path, directory))
    with _left_as_it_was(model):
        torch.onnx.export(graph_module, inputs, path, opset_version=OPSET,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes)
    with _left_as_it_was(model):
        # the file holds the buffers as the trace left them: write them back
        # as the module has them (restored above)
        stamp(graph_module, path, inputs,
              buffers={n: b.detach().clone() for n, b in graph_module.named_buffers()})
    problems = check_onnx(path) if check else []
    for p in problems:
        warnings.warn("parallax.export: %s" % p, stacklevel=2)
    return problems


__all__ = ["export", "ExportError", "OPSET", "__version__"]
