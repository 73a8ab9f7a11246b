"""ONNX symbolics for the standard losses (and the nn.EmbeddingBag form)
that torch 1.13 cannot export.

torch.onnx.export refuses aten::mse_loss, aten::binary_cross_entropy,
aten::l1_loss, aten::smooth_l1_loss, aten::huber_loss,
cross_entropy(label_smoothing > 0) and nn.EmbeddingBag(padding_idx=...).
register_loss_symbolics() registers symbolics that write each as plain ONNX
ops with PyTorch's arithmetic (reduction 'none', 'mean' or 'sum'; class
weights; ignore_index; padding entries left out of their bags, modes sum
and mean), so that a model exports unchanged. It is idempotent and only
adds custom symbolics: every other op exports as torch does.
"""

import torch
from torch.onnx import symbolic_helper as sh

_MIN_OPSET, _MAX_OPSET = 9, 17
_REDUCTIONS = ("none", "mean", "sum")
_registered = False


def _const(g, value, dtype=torch.float32):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def _reduce(g, x, reduction):
    """x reduced over all its elements as `reduction` says (0 none, 1 mean, 2 sum)."""
    if reduction == 0:
        return x
    if reduction == 1:
        return g.op("ReduceMean", x, keepdims_i=0)
    return sh._reducesum_helper(g, x, keepdims_i=0)


def _reduction(value):
    r = sh._maybe_get_const(value, "i")
    if not isinstance(r, int) or not 0 <= r < len(_REDUCTIONS):
        raise RuntimeError("parallax symbolics: reduction must be a constant, got %r" % (r,))
    return r


def _mse_loss(g, input, target, reduction):
    d = g.op("Sub", input, target)
    return _reduce(g, g.op("Mul", d, d), _reduction(reduction))


def _l1_loss(g, input, target, reduction):
    return _reduce(g, g.op("Abs", g.op("Sub", input, target)), _reduction(reduction))


def _piecewise_l2_l1(g, input, target, beta, scale_l1):
    """PyTorch's smooth L1 (scale_l1 False: 0.5 d^2 / beta inside, |d| - 0.5 beta
    outside) and Huber (scale_l1 True: 0.5 d^2 inside, beta (|d| - 0.5 beta)
    outside) terms, elementwise, for |d| < beta inside."""
    ad = g.op("Abs", g.op("Sub", input, target))
    inside = g.op("Mul", g.op("Mul", ad, ad), _const(g, 0.5 if scale_l1 else 0.5 / beta))
    outside = g.op("Sub", ad, _const(g, 0.5 * beta))
    if scale_l1:
        outside = g.op("Mul", outside, _const(g, beta))
    return g.op("Where", g.op("Less", ad, _const(g, beta)), inside, outside)


def _smooth_l1_loss(g, input, target, reduction, beta):
    beta = float(sh._maybe_get_const(beta, "f"))
    if beta == 0:
        return _l1_loss(g, input, target, reduction)
    return _reduce(g, _piecewise_l2_l1(g, input, target, beta, False), _reduction(reduction))


def _huber_loss(g, input, target, reduction, delta):
    delta = float(sh._maybe_get_const(delta, "f"))
    return _reduce(g, _piecewise_l2_l1(g, input, target, delta, True), _reduction(reduction))


def _binary_cross_entropy(g, input, target, weight, reduction):
    """-(y log(x) + (1 - y) log(1 - x)), each log clamped at -100 as PyTorch does."""
    floor = _const(g, -100.0)
    log_x = g.op("Max", g.op("Log", input), floor)
    log_1mx = g.op("Max", g.op("Log", g.op("Sub", _const(g, 1.0), input)), floor)
    one_minus_y = g.op("Sub", _const(g, 1.0), target)
    loss = g.op("Neg", g.op("Add", g.op("Mul", target, log_x), g.op("Mul", one_minus_y, log_1mx)))
    if not sh._is_none(weight):
        loss = g.op("Mul", loss, weight)
    return _reduce(g, loss, _reduction(reduction))


def _cross_entropy_loss(g, input, target, weight, reduction, ignore_index, label_smoothing):
    """cross_entropy with label smoothing e over C classes, as PyTorch computes it:
    (1 - e) * nll + (e / C) * smooth, where smooth is the (class-weighted) sum of
    -log_softmax over the classes, 0 where the target is ignore_index, reduced
    by the same denominator as nll (the count, or the weights, of the kept
    targets). Without smoothing: torch's own SoftmaxCrossEntropyLoss."""
    from torch.onnx import symbolic_opset12

    eps = sh._maybe_get_const(label_smoothing, "f")
    if eps is None or not isinstance(eps, float) or eps == 0.0:
        return symbolic_opset12.cross_entropy_loss(g, input, target, weight, reduction,
                                                   ignore_index, label_smoothing)
    r = _reduction(reduction)
    ignore = int(sh._maybe_get_const(ignore_index, "i"))
    rank = sh._get_tensor_rank(input)
    classes = sh._get_tensor_dim_size(input, 1)
    has_weight = not sh._is_none(weight)
    if has_weight and (rank is None or classes is None):
        raise RuntimeError("parallax symbolics: cross_entropy with label_smoothing and "
                           "class weights needs the rank and the class count of its input")
    ce_in = [input, target] + ([weight] if has_weight else [])
    nll = g.op("SoftmaxCrossEntropyLoss", *ce_in, reduction_s=_REDUCTIONS[r],
               ignore_index_i=ignore)
    logp = g.op("LogSoftmax", input, axis_i=1)
    if has_weight:
        shape = [1, classes] + [1] * (rank - 2)
        logp = g.op("Mul", logp, g.op("Reshape", weight, _const(g, shape, torch.int64)))
    smooth = g.op("Neg", sh._reducesum_helper(g, logp, axes_i=[1], keepdims_i=0))
    ignored = g.op("Equal", target, _const(g, ignore, torch.int64))
    smooth = g.op("Where", ignored, _const(g, 0.0), smooth)
    if r == 1:
        kept = g.op("Cast", g.op("Not", ignored), to_i=1)  # float
        if has_weight:
            safe = g.op("Where", ignored, _const(g, 0, torch.int64), target)
            kept = g.op("Mul", kept, g.op("Gather", weight, safe, axis_i=0))
        smooth = g.op("Div", sh._reducesum_helper(g, smooth, keepdims_i=0),
                      sh._reducesum_helper(g, kept, keepdims_i=0))
    elif r == 2:
        smooth = sh._reducesum_helper(g, smooth, keepdims_i=0)
    if classes is not None:
        share = _const(g, eps / classes)
    else:  # the class count from the input's shape at run time
        dim1 = g.op("Gather", g.op("Shape", input), _const(g, 1, torch.int64), axis_i=0)
        share = g.op("Div", _const(g, eps), g.op("Cast", dim1, to_i=1))
    return g.op("Add", g.op("Mul", nll, _const(g, 1.0 - eps)), g.op("Mul", smooth, share))


def _embedding_bag(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                   per_sample_weights, include_last_offset, padding_idx):
    """nn.EmbeddingBag with padding_idx, which torch 1.13 refuses to export:
    the padding entries count for nothing. mode sum: torch's own Loop with a
    0/1 per-sample weight (0 at padding entries); mode mean: that sum divided
    by each bag's count of other entries (at least 1: an all-padding bag is
    zeros, as in PyTorch), counted with a cumulative sum over the entries.
    Without padding_idx: torch's own export."""
    from torch.onnx import symbolic_opset11
    pad = sh._maybe_get_const(padding_idx, "i")
    if pad is None or sh._is_value(pad) or pad < 0:
        return symbolic_opset11.embedding_bag(g, weight, indices, offsets, scale_grad_by_freq,
                                              mode, sparse, per_sample_weights,
                                              include_last_offset, padding_idx)
    mode = sh._maybe_get_const(mode, "i")
    last = sh._maybe_get_const(include_last_offset, "i")
    if mode not in (0, 1):
        raise RuntimeError("parallax symbolics: nn.EmbeddingBag(mode='max', padding_idx=...) "
                           "cannot be exported; use mode 'sum' or 'mean', or mask the padding "
                           "ids out of the bags")
    if not sh._is_none(per_sample_weights):
        raise RuntimeError("parallax symbolics: nn.EmbeddingBag with both padding_idx and "
                           "per_sample_weights cannot be exported; put 0 in the weights of the "
                           "padding entries instead")
    keep = g.op("Cast", g.op("Not", g.op("Equal", indices, _const(g, pad, torch.int64))), to_i=1)
    summed, _, _, _ = symbolic_opset11.embedding_bag(
        g, weight, indices, offsets, scale_grad_by_freq, 0, sparse, keep, last, -1)
    if mode == 0:
        return summed, None, None, None
    # mean: each bag's count of kept entries, from a cumulative sum of keep
    zero = _const(g, [0.0])
    csum = g.op("Concat", zero, g.op("CumSum", keep, _const(g, 0, torch.int64)), axis_i=0)
    n = g.op("Shape", indices)
    bounds = offsets if last else g.op("Concat", offsets, n, axis_i=0)
    starts = sh._slice_helper(g, bounds, axes=[0], starts=[0], ends=[-1])
    ends = sh._slice_helper(g, bounds, axes=[0], starts=[1], ends=[9223372036854775807])
    count = g.op("Sub", g.op("Gather", csum, ends, axis_i=0),
                 g.op("Gather", csum, starts, axis_i=0))
    count = g.op("Unsqueeze", g.op("Max", count, _const(g, 1.0)), _const(g, [1], torch.int64))
    return g.op("Div", summed, count), None, None, None


_SYMBOLICS = {
    "aten::mse_loss": (_mse_loss, _MIN_OPSET),
    "aten::l1_loss": (_l1_loss, _MIN_OPSET),
    "aten::smooth_l1_loss": (_smooth_l1_loss, _MIN_OPSET),
    "aten::huber_loss": (_huber_loss, _MIN_OPSET),
    "aten::binary_cross_entropy": (_binary_cross_entropy, _MIN_OPSET),
    "aten::cross_entropy_loss": (_cross_entropy_loss, 12),  # SoftmaxCrossEntropyLoss: 12
    "aten::embedding_bag": (_embedding_bag, 11),  # torch's own: opset 11
}


def register_loss_symbolics():
    """Registers the loss symbolics for every opset from the loss's first to 17."""
    global _registered
    if _registered:
        return
    for name, (fn, first) in _SYMBOLICS.items():
        for opset in range(first, _MAX_OPSET + 1):
            torch.onnx.register_custom_op_symbolic(name, fn, opset)
    _registered = True
