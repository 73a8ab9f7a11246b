#!/usr/bin/python3
"""Independent NumPy evaluator for ONNX graphs: the reference the compiler is checked against.

Usage:
  onnx_ref_eval.py MODEL.onnx DATADIR [--batch N] [--offset K] [--output NAME]
                   [--reference reference.json] [--rtol 1e-5]

Loads rows [K, K+N) of DATADIR/<input>.npy (or <input>.pb, a TensorProto) for
every graph input that is not an initializer, runs the graph node by node and
prints the output (by default the only output, or the one named "loss") with
repr(). With --reference it also compares against reference.json's
losses[str(N)] and exits 1 when they differ by more than rtol.

Exit codes: 0 ok, 1 mismatch against --reference, 2 unsupported op/attribute or
bad input (the message names the node and op).

It shares no code with the compiler: it uses onnx only to parse the protobuf,
and computes every op with NumPy following the ONNX operator specification
(opset <= 17, plus the opset 18 "axes as input" form of the reductions).
Float tensors are computed in their own dtype (float32 stays float32), the way
PyTorch does, so losses agree to ~1e-6 relative.

Run with /usr/bin/python3 (Debian's onnx).
"""

import argparse
import json
import math
import os
import sys

import numpy as np

for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:  # onnx 1.12 predates NumPy 1.24
        setattr(np, _alias, _type)

import onnx  # noqa: E402
from onnx import mapping, numpy_helper  # noqa: E402


class Unsupported(Exception):
    """An op, attribute value or input this evaluator does not implement."""


class BadModel(Exception):
    """The model or its data is malformed (missing input, wrong shape, ...)."""


# --------------------------------------------------------------------------- helpers


def np_dtype(onnx_elem_type):
    # bfloat16 has no NumPy type (onnx maps it to uint16 bit patterns): refuse it.
    if onnx_elem_type == onnx.TensorProto.BFLOAT16 or \
            onnx_elem_type not in mapping.TENSOR_TYPE_TO_NP_TYPE:
        raise Unsupported("tensor element type %d" % onnx_elem_type)
    return mapping.TENSOR_TYPE_TO_NP_TYPE[onnx_elem_type]


def attrs_of(node):
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    attrs["__outputs"] = len(node.output)  # ops like Split size themselves by it
    return attrs


def to_str(value):
    return value.decode() if isinstance(value, bytes) else value


def norm_axis(axis, rank):
    if not -rank <= axis < max(rank, 1):
        raise BadModel("axis %d out of range for rank %d" % (axis, rank))
    return axis + rank if axis < 0 else axis


def int_list(array):
    return [int(v) for v in np.asarray(array).reshape(-1)]


def same_dtype(result, like):
    return np.asarray(result).astype(like.dtype, copy=False)


# --------------------------------------------------------------------------- elementwise


def _binary(fn):
    def op(ins, at):
        a, b = ins
        return [same_dtype(fn(a, b), a)]

    return op


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        if np.any(b == 0):
            raise BadModel("integer division by zero")
        # ONNX integer Div truncates toward zero, like C.
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q)
    return a / b


def _unary(fn):
    def op(ins, at):
        x = ins[0]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            return [same_dtype(fn(x), x)]

    return op


def _compare(fn):
    return lambda ins, at: [np.asarray(fn(ins[0], ins[1]))]


_erf = np.frompyfunc(math.erf, 1, 1)


def op_erf(ins, at):
    x = ins[0]
    return [np.asarray(_erf(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)]


def op_sigmoid(ins, at):
    x = ins[0]
    with np.errstate(over="ignore"):
        # Stable either side of 0; np.where evaluates both, errstate hides overflow.
        pos = 1 / (1 + np.exp(-x))
        ex = np.exp(x)
        neg = ex / (1 + ex)
    return [same_dtype(np.where(x >= 0, pos, neg), x)]


def op_clip(ins, at):
    x = ins[0]
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else at.get("min")
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else at.get("max")
    if lo is not None:
        x = np.maximum(x, np.asarray(lo, dtype=x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi, dtype=x.dtype))
    return [x]


def op_where(ins, at):
    cond, a, b = ins
    return [np.where(cond, a, b).astype(a.dtype, copy=False)]


def op_mod(ins, at):
    a, b = ins
    # fmod=1: sign of the dividend (C fmod); fmod=0: sign of the divisor (Python %).
    fn = np.fmod if at.get("fmod", 0) else np.mod
    return [same_dtype(fn(a, b), a)]


def op_variadic(fn):
    def op(ins, at):
        out = ins[0]
        for x in ins[1:]:
            out = fn(out, x)
        return [same_dtype(out, ins[0])]

    return op


def op_cast(ins, at):
    x = ins[0]
    to = np_dtype(at["to"])
    if np.issubdtype(to, np.integer) and np.issubdtype(x.dtype, np.floating):
        x = np.trunc(x)
    return [x.astype(to)]


def op_leaky_relu(ins, at):
    x = ins[0]
    alpha = at.get("alpha", 0.01)
    return [same_dtype(np.where(x >= 0, x, x * x.dtype.type(alpha)), x)]


# --------------------------------------------------------------------------- shape ops


def op_shape(ins, at):
    shape = list(ins[0].shape)
    start = at.get("start", 0)
    end = at.get("end", len(shape))
    return [np.array(shape[slice(start, end)], dtype=np.int64)]


def op_size(ins, at):
    return [np.array(ins[0].size, dtype=np.int64)]


def op_reshape(ins, at):
    data, shape = ins
    shape = int_list(shape)
    allowzero = at.get("allowzero", 0)
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= data.ndim:
                raise BadModel("Reshape: 0 at position %d but input has rank %d" % (i, data.ndim))
            out.append(data.shape[i])
        else:
            out.append(d)
    if out.count(-1) > 1:
        raise BadModel("Reshape: more than one -1 in %s" % shape)
    try:
        return [data.reshape(out)]
    except ValueError as e:
        raise BadModel("Reshape %s -> %s: %s" % (data.shape, shape, e))


def op_transpose(ins, at):
    x = ins[0]
    perm = at.get("perm", list(range(x.ndim))[::-1])
    return [np.transpose(x, perm)]


def op_concat(ins, at):
    parts = [x for x in ins if x is not None]
    axis = norm_axis(at["axis"], parts[0].ndim)
    return [np.concatenate(parts, axis=axis)]


def _axes(ins, at, index=1):
    if "axes" in at:
        return list(at["axes"])
    if len(ins) > index and ins[index] is not None:
        return int_list(ins[index])
    return None


def op_unsqueeze(ins, at):
    x = ins[0]
    axes = _axes(ins, at)
    rank = x.ndim + len(axes)
    for axis in sorted(norm_axis(a, rank) for a in axes):
        x = np.expand_dims(x, axis)
    return [x]


def op_squeeze(ins, at):
    x = ins[0]
    axes = _axes(ins, at)
    if axes is None:
        return [np.squeeze(x)]
    axes = tuple(norm_axis(a, x.ndim) for a in axes)
    for a in axes:
        if x.shape[a] != 1:
            raise BadModel("Squeeze axis %d has size %d" % (a, x.shape[a]))
    return [np.squeeze(x, axis=axes)]


def op_flatten(ins, at):
    x = ins[0]
    axis = at.get("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    return [x.reshape(outer, -1) if x.size else x.reshape(outer, int(np.prod(x.shape[axis:])))]


def op_slice(ins, at):
    data = ins[0]
    if "starts" in at:  # opset < 10: attributes, no steps
        ins = [data, at["starts"], at["ends"], at.get("axes")]
    starts = int_list(ins[1])
    ends = int_list(ins[2])
    axes = int_list(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
    steps = int_list(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = norm_axis(axis, data.ndim)
        dim = data.shape[axis]
        if step == 0:
            raise BadModel("Slice step 0")
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start = min(max(start, 0), dim)
            end = min(max(end, 0), dim)
            index[axis] = slice(start, end, step)
        else:
            start = min(max(start, 0), dim - 1)
            end = min(max(end, -1), dim - 1)
            index[axis] = slice(start, end if end >= 0 else None, step)
    return [data[tuple(index)]]


def op_gather(ins, at):
    data, indices = ins
    axis = norm_axis(at.get("axis", 0), data.ndim)
    dim = data.shape[axis]
    indices = np.asarray(indices).astype(np.int64)
    if np.any(indices < -dim) or np.any(indices >= dim):
        raise BadModel("Gather index out of range [%d, %d)" % (-dim, dim))
    indices = np.where(indices < 0, indices + dim, indices)
    return [np.take(data, indices, axis=axis)]


def op_expand(ins, at):
    x, shape = ins
    shape = int_list(shape)
    # ONNX Expand is bidirectional broadcasting (a 1 in shape keeps x's dim).
    target = np.broadcast_shapes(x.shape, tuple(shape))
    return [np.broadcast_to(x, target).copy()]


def op_tile(ins, at):
    return [np.tile(ins[0], int_list(ins[1]))]


def op_constant_of_shape(ins, at):
    value = at.get("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return [np.full(int_list(ins[0]), fill[0], dtype=fill.dtype)]


def op_constant(ins, at):
    if "value" in at:
        return [numpy_helper.to_array(at["value"])]
    if "value_float" in at:
        return [np.array(at["value_float"], dtype=np.float32)]
    if "value_floats" in at:
        return [np.array(at["value_floats"], dtype=np.float32)]
    if "value_int" in at:
        return [np.array(at["value_int"], dtype=np.int64)]
    if "value_ints" in at:
        return [np.array(at["value_ints"], dtype=np.int64)]
    raise Unsupported("Constant without value/value_float(s)/value_int(s)")


def op_range(ins, at):
    start, limit, delta = (np.asarray(x).reshape(()) for x in ins)
    if delta == 0:
        raise BadModel("Range delta 0")
    count = max(int(math.ceil((limit - start) / delta)), 0)
    return [(start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype)]


def op_trilu(ins, at):
    x = ins[0]
    k = int(np.asarray(ins[1]).reshape(())) if len(ins) > 1 and ins[1] is not None else 0
    return [np.triu(x, k) if at.get("upper", 1) else np.tril(x, k)]


def op_split(ins, at):
    x = ins[0]
    axis = norm_axis(at.get("axis", 0), x.ndim)
    sizes = at.get("split")
    if sizes is None and len(ins) > 1 and ins[1] is not None:
        sizes = int_list(ins[1])
    if sizes is None:
        parts = at.get("num_outputs", at["__outputs"])
        if x.shape[axis] % parts:
            raise Unsupported("Split of %d into %d uneven parts" % (x.shape[axis], parts))
        sizes = [x.shape[axis] // parts] * parts
    bounds = np.cumsum(sizes)[:-1]
    return list(np.split(x, bounds, axis=axis))


# --------------------------------------------------------------------------- reductions


def _reduce(fn):
    def op(ins, at):
        x = ins[0]
        axes = _axes(ins, at)
        keepdims = bool(at.get("keepdims", 1))
        if not axes:
            if at.get("noop_with_empty_axes", 0):
                return [x]
            axes = list(range(x.ndim))
        axes = tuple(norm_axis(a, x.ndim) for a in axes)
        return [same_dtype(fn(x, axis=axes, keepdims=keepdims), x)]

    return op


def _reduce_sum_square(x, axis, keepdims):
    return np.sum(x * x, axis=axis, keepdims=keepdims)


def _reduce_l2(x, axis, keepdims):
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))


def _reduce_log_sum_exp(x, axis, keepdims):
    peak = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis)


def op_argmax(fn):
    def op(ins, at):
        x = ins[0]
        axis = norm_axis(at.get("axis", 0), x.ndim)
        if at.get("select_last_index", 0):
            flipped = np.flip(x, axis)
            out = x.shape[axis] - 1 - fn(flipped, axis=axis)
        else:
            out = fn(x, axis=axis)
        if at.get("keepdims", 1):
            out = np.expand_dims(out, axis)
        return [out.astype(np.int64)]

    return op


# --------------------------------------------------------------------------- nn


def op_matmul(ins, at):
    a, b = ins
    return [same_dtype(np.matmul(a, b), a)]


def op_gemm(ins, at):
    a, b = ins[0], ins[1]
    if at.get("transA", 0):
        a = a.T
    if at.get("transB", 0):
        b = b.T
    out = a.dtype.type(at.get("alpha", 1.0)) * (a @ b)
    if len(ins) > 2 and ins[2] is not None:
        out = out + a.dtype.type(at.get("beta", 1.0)) * ins[2]
    return [same_dtype(out, a)]


def _log_softmax(x, axis):
    peak = np.max(x, axis=axis, keepdims=True)
    shifted = x - peak
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def op_softmax(ins, at):
    x = ins[0]
    axis = norm_axis(at.get("axis", -1), x.ndim)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return [same_dtype(e / np.sum(e, axis=axis, keepdims=True), x)]


def op_log_softmax(ins, at):
    x = ins[0]
    return [same_dtype(_log_softmax(x, norm_axis(at.get("axis", -1), x.ndim)), x)]


def _nll(log_prob, target, weight, ignore_index, reduction):
    """log_prob [N, C, d1..], target [N, d1..] -> loss per ONNX NegativeLogLikelihoodLoss."""
    classes = log_prob.shape[1]
    target = target.astype(np.int64)
    ignored = target == ignore_index if ignore_index is not None else np.zeros(target.shape, bool)
    safe = np.where(ignored, 0, target)
    if np.any((safe < 0) | (safe >= classes)):
        raise BadModel("loss target out of range [0, %d)" % classes)
    picked = np.take_along_axis(log_prob, np.expand_dims(safe, 1), axis=1).squeeze(1)
    w = weight[safe] if weight is not None else np.ones(target.shape, log_prob.dtype)
    w = np.where(ignored, 0, w).astype(log_prob.dtype)
    loss = -picked * w
    if reduction == "none":
        return loss.astype(log_prob.dtype)
    if reduction == "sum":
        return np.asarray(np.sum(loss), dtype=log_prob.dtype)
    if reduction == "mean":
        return np.asarray(np.sum(loss) / np.sum(w), dtype=log_prob.dtype)
    raise Unsupported("loss reduction %r" % reduction)


def op_nll_loss(ins, at):
    weight = ins[2] if len(ins) > 2 else None
    return [_nll(ins[0], ins[1], weight, at.get("ignore_index"),
                 to_str(at.get("reduction", "mean")))]


def op_softmax_ce_loss(ins, at):
    scores, labels = ins[0], ins[1]
    weight = ins[2] if len(ins) > 2 else None
    log_prob = same_dtype(_log_softmax(scores, 1), scores)
    loss = _nll(log_prob, labels, weight, at.get("ignore_index"),
                to_str(at.get("reduction", "mean")))
    return [loss, log_prob]


def op_layer_norm(ins, at):
    x, scale = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    axis = norm_axis(at.get("axis", -1), x.ndim)
    eps = x.dtype.type(at.get("epsilon", 1e-5))
    axes = tuple(range(axis, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = np.mean(centered * centered, axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(var + eps)
    y = centered * inv_std * scale
    if bias is not None:
        y = y + bias
    return [same_dtype(y, x), same_dtype(mean, x), same_dtype(inv_std, x)]


def op_batch_norm(ins, at):
    x, scale, bias, mean, var = ins[:5]
    if at.get("training_mode", 0):
        raise Unsupported("BatchNormalization training_mode=1")
    eps = x.dtype.type(at.get("epsilon", 1e-5))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return [same_dtype(y * scale.reshape(shape) + bias.reshape(shape), x)]


def op_lstm(ins, at):
    def opt(i):
        return ins[i] if len(ins) > i and ins[i] is not None else None

    x, w, r = ins[0], ins[1], ins[2]
    b, seq_lens, h0, c0, peep = opt(3), opt(4), opt(5), opt(6), opt(7)
    hidden = at["hidden_size"]
    direction = to_str(at.get("direction", "forward"))
    acts = [to_str(a) for a in at.get("activations", [])]
    if acts and [a.lower() for a in acts] != ["sigmoid", "tanh", "tanh"] * (len(acts) // 3):
        raise Unsupported("LSTM activations %s" % acts)
    if at.get("clip") is not None or at.get("input_forget", 0):
        raise Unsupported("LSTM clip/input_forget")
    layout = at.get("layout", 0)
    if layout:
        x = np.swapaxes(x, 0, 1)  # -> [seq, batch, input]
        h0 = np.swapaxes(h0, 0, 1) if h0 is not None else None
        c0 = np.swapaxes(c0, 0, 1) if c0 is not None else None
    seq, batch = x.shape[0], x.shape[1]
    if seq_lens is not None and np.any(seq_lens != seq):
        raise Unsupported("LSTM with sequence_lens shorter than the sequence")
    dirs = 2 if direction == "bidirectional" else 1
    dt = x.dtype
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        bias = b[d, : 4 * hidden] + b[d, 4 * hidden:] if b is not None else np.zeros(4 * hidden, dt)
        h = h0[d] if h0 is not None else np.zeros((batch, hidden), dt)
        c = c0[d] if c0 is not None else np.zeros((batch, hidden), dt)
        p_i, p_o, p_f = (np.split(peep[d], 3) if peep is not None
                         else (np.zeros(hidden, dt),) * 3)
        y = np.zeros((seq, batch, hidden), dt)
        steps = range(seq - 1, -1, -1) if reverse else range(seq)
        for t in steps:
            gates = x[t] @ w[d].T + h @ r[d].T + bias
            gi, go, gf, gc = np.split(gates, 4, axis=1)  # ONNX order: i, o, f, c
            i = op_sigmoid([gi + p_i * c], {})[0]
            f = op_sigmoid([gf + p_f * c], {})[0]
            c = f * c + i * np.tanh(gc)
            o = op_sigmoid([go + p_o * c], {})[0]
            h = (o * np.tanh(c)).astype(dt)
            c = c.astype(dt)
            y[t] = h
        ys.append(y)
        hs.append(h)
        cs.append(c)
    y = np.stack(ys, axis=1)  # [seq, dirs, batch, hidden]
    y_h, y_c = np.stack(hs), np.stack(cs)
    if layout:
        y = np.transpose(y, (2, 0, 1, 3))
        y_h, y_c = np.swapaxes(y_h, 0, 1), np.swapaxes(y_c, 0, 1)
    return [y, y_h, y_c]


def _spatial_attrs(at, x, kernel):
    nd = len(kernel)
    strides = list(at.get("strides", [1] * nd))
    dilations = list(at.get("dilations", [1] * nd))
    pads = list(at.get("pads", [0] * (2 * nd)))
    auto_pad = to_str(at.get("auto_pad", "NOTSET"))
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * nd)
        for i in range(nd):
            size = x.shape[2 + i]
            out = -(-size // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size, 0)
            small, big = total // 2, total - total // 2
            pads[i], pads[i + nd] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * nd)
    elif auto_pad != "NOTSET":
        raise Unsupported("auto_pad %s" % auto_pad)
    return strides, dilations, pads


def _windows(x, kernel, strides, dilations, pads, fill, ceil_mode=False):
    """x [N, C, *spatial] -> [N, C, *out, *kernel] view of the (padded) windows."""
    nd = len(kernel)
    pad_width = [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)]
    out_sizes = []
    for i in range(nd):
        span = x.shape[2 + i] + pads[i] + pads[i + nd] - (kernel[i] - 1) * dilations[i] - 1
        if ceil_mode:
            out = -(-span // strides[i]) + 1
            # The last window must start inside the input or left padding.
            if (out - 1) * strides[i] >= x.shape[2 + i] + pads[i]:
                out -= 1
        else:
            out = span // strides[i] + 1
        out_sizes.append(out)
        needed = (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
        extra = needed - (x.shape[2 + i] + pads[i] + pads[i + nd])
        if extra > 0:
            pad_width[2 + i] = (pads[i], pads[i + nd] + extra)
    padded = np.pad(x, pad_width, mode="constant", constant_values=fill)
    n, c = x.shape[:2]
    out = np.empty((n, c) + tuple(out_sizes) + tuple(kernel), dtype=x.dtype)
    for offsets in np.ndindex(*kernel):
        index = [slice(None), slice(None)]
        for i in range(nd):
            start = offsets[i] * dilations[i]
            index.append(slice(start, start + (out_sizes[i] - 1) * strides[i] + 1, strides[i]))
        out[(Ellipsis,) + tuple(offsets)] = padded[tuple(index)]
    return out


def op_conv(ins, at):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    kernel = list(w.shape[2:])
    if "kernel_shape" in at and list(at["kernel_shape"]) != kernel:
        raise BadModel("Conv kernel_shape %s != weight %s" % (at["kernel_shape"], kernel))
    strides, dilations, pads = _spatial_attrs(at, x, kernel)
    group = at.get("group", 1)
    nd = len(kernel)
    cols = _windows(x, kernel, strides, dilations, pads, 0)  # [N, C, *out, *k]
    n, c = x.shape[:2]
    m = w.shape[0]
    out_sizes = cols.shape[2:2 + nd]
    cin, mout = c // group, m // group
    outs = []
    for g in range(group):
        part = cols[:, g * cin:(g + 1) * cin]  # [N, cin, *out, *k]
        part = np.moveaxis(part, 1, 1 + nd)  # [N, *out, cin, *k]
        part = part.reshape(n, int(np.prod(out_sizes)), -1)
        wg = w[g * mout:(g + 1) * mout].reshape(mout, -1)
        outs.append(np.matmul(part, wg.T))  # [N, P, mout]
    y = np.concatenate(outs, axis=2)
    y = np.moveaxis(y, 2, 1).reshape((n, m) + tuple(out_sizes))
    if b is not None:
        y = y + b.reshape((1, m) + (1,) * nd)
    return [same_dtype(y, x)]


def op_max_pool(ins, at):
    x = ins[0]
    kernel = list(at["kernel_shape"])
    strides, dilations, pads = _spatial_attrs(at, x, kernel)
    if at.get("storage_order", 0):
        raise Unsupported("MaxPool storage_order=1")
    cols = _windows(x, kernel, strides, dilations, pads, -np.inf, bool(at.get("ceil_mode", 0)))
    nd = len(kernel)
    y = np.max(cols, axis=tuple(range(2 + nd, 2 + 2 * nd)))
    return [same_dtype(y, x)]  # the Indices output is not provided


def op_average_pool(ins, at):
    x = ins[0]
    kernel = list(at["kernel_shape"])
    strides, dilations, pads = _spatial_attrs(at, x, kernel)
    nd = len(kernel)
    axes = tuple(range(2 + nd, 2 + 2 * nd))
    ceil = bool(at.get("ceil_mode", 0))
    sums = np.sum(_windows(x, kernel, strides, dilations, pads, 0, ceil), axis=axes)
    if at.get("count_include_pad", 0):
        counts = np.prod(kernel)
    else:
        ones = np.ones((1, 1) + x.shape[2:], x.dtype)
        counts = np.sum(_windows(ones, kernel, strides, dilations, pads, 0, ceil), axis=axes)
    return [same_dtype(sums / counts, x)]


def op_global_average_pool(ins, at):
    x = ins[0]
    return [same_dtype(np.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True), x)]


def op_dropout(ins, at):
    x = ins[0]
    training = len(ins) > 2 and ins[2] is not None and bool(np.asarray(ins[2]))
    if training:
        raise Unsupported("Dropout with training_mode=true")
    return [x, np.ones(x.shape, dtype=bool)]


# --------------------------------------------------------------------------- op table

OPS = {
    # elementwise arithmetic
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Pow": _binary(np.power),
    "Mod": op_mod,
    "Max": op_variadic(np.maximum),
    "Min": op_variadic(np.minimum),
    "Sum": op_variadic(np.add),
    "Neg": _unary(np.negative),
    "Abs": _unary(np.abs),
    "Sqrt": _unary(np.sqrt),
    "Reciprocal": _unary(lambda x: 1 / x),
    "Exp": _unary(np.exp),
    "Log": _unary(np.log),
    "Tanh": _unary(np.tanh),
    "Relu": _unary(lambda x: np.maximum(x, 0)),
    "Floor": _unary(np.floor),
    "Ceil": _unary(np.ceil),
    "Sign": _unary(np.sign),
    "Softplus": _unary(lambda x: np.logaddexp(0, x)),
    "Sigmoid": op_sigmoid,
    "Erf": op_erf,
    "LeakyRelu": op_leaky_relu,
    "Clip": op_clip,
    "Identity": lambda ins, at: [ins[0]],
    "Dropout": op_dropout,
    "Cast": op_cast,
    # comparison / logic
    "Equal": _compare(np.equal),
    "Greater": _compare(np.greater),
    "Less": _compare(np.less),
    "GreaterOrEqual": _compare(np.greater_equal),
    "LessOrEqual": _compare(np.less_equal),
    "And": _compare(np.logical_and),
    "Or": _compare(np.logical_or),
    "Xor": _compare(np.logical_xor),
    "Not": lambda ins, at: [np.logical_not(ins[0])],
    "Where": op_where,
    # shapes and data movement
    "Shape": op_shape,
    "Size": op_size,
    "Reshape": op_reshape,
    "Transpose": op_transpose,
    "Concat": op_concat,
    "Unsqueeze": op_unsqueeze,
    "Squeeze": op_squeeze,
    "Flatten": op_flatten,
    "Slice": op_slice,
    "Gather": op_gather,
    "Expand": op_expand,
    "Tile": op_tile,
    "Split": op_split,
    "Constant": op_constant,
    "ConstantOfShape": op_constant_of_shape,
    "Range": op_range,
    "Trilu": op_trilu,
    # reductions
    "ReduceMean": _reduce(np.mean),
    "ReduceSum": _reduce(np.sum),
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
    "ReduceProd": _reduce(np.prod),
    "ReduceSumSquare": _reduce(_reduce_sum_square),
    "ReduceL2": _reduce(_reduce_l2),
    "ReduceLogSumExp": _reduce(_reduce_log_sum_exp),
    "ArgMax": op_argmax(np.argmax),
    "ArgMin": op_argmax(np.argmin),
    # neural network
    "MatMul": op_matmul,
    "Gemm": op_gemm,
    "Softmax": op_softmax,
    "LogSoftmax": op_log_softmax,
    "SoftmaxCrossEntropyLoss": op_softmax_ce_loss,
    "NegativeLogLikelihoodLoss": op_nll_loss,
    "LayerNormalization": op_layer_norm,
    "BatchNormalization": op_batch_norm,
    "LSTM": op_lstm,
    "Conv": op_conv,
    "MaxPool": op_max_pool,
    "AveragePool": op_average_pool,
    "GlobalAveragePool": op_global_average_pool,
}


# --------------------------------------------------------------------------- graph


def check_supported(graph):
    """Name every unsupported op up front, before any compute."""
    missing = sorted({"%s%s" % (n.domain + "::" if n.domain not in ("", "ai.onnx") else "",
                                n.op_type)
                      for n in graph.node
                      if n.domain not in ("", "ai.onnx") or n.op_type not in OPS})
    if missing:
        raise Unsupported("unsupported op(s): %s" % ", ".join(missing))


def evaluate(model, feeds):
    """Run model.graph on feeds {input name: array}; returns {value name: array}."""
    graph = model.graph
    check_supported(graph)
    for init in graph.initializer:
        np_dtype(init.data_type)  # refuses bfloat16 and unknown element types
    env = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    for vi in graph.input:
        if vi.name in feeds:
            env[vi.name] = feeds[vi.name]
        elif vi.name not in env:
            raise BadModel("no data for graph input %r" % vi.name)
    for node in graph.node:
        ins = []
        for name in node.input:
            if name == "":
                ins.append(None)
            elif name not in env:
                raise BadModel("node %r (%s) reads %r before it is computed"
                               % (node.name, node.op_type, name))
            else:
                ins.append(env[name])
        try:
            outs = OPS[node.op_type](ins, attrs_of(node))
        except (Unsupported, BadModel) as e:
            raise type(e)("node %r (%s): %s" % (node.name, node.op_type, e))
        except (ValueError, IndexError, TypeError, KeyError) as e:
            raise BadModel("node %r (%s) failed: %s: %s"
                           % (node.name, node.op_type, type(e).__name__, e))
        for name, value in zip(node.output, outs):
            if name:
                env[name] = np.asarray(value)
        for name in node.output[len(outs):]:
            if name:
                raise Unsupported("node %r (%s): output %r not provided"
                                  % (node.name, node.op_type, name))
    return env


def load_rows(data_dir, name, offset, batch):
    path = os.path.join(data_dir, name + ".npy")
    if os.path.exists(path):
        array = np.load(path, mmap_mode="r")
    elif os.path.exists(os.path.join(data_dir, name + ".pb")):
        tensor = onnx.TensorProto()
        with open(os.path.join(data_dir, name + ".pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        array = numpy_helper.to_array(tensor)
    else:
        raise BadModel("no %s.npy or %s.pb in %s" % (name, name, data_dir))
    if batch is None:
        return np.array(array)
    if array.ndim == 0 or array.shape[0] < offset + batch:
        raise BadModel("%s has %d samples, need rows [%d, %d)"
                       % (path, array.shape[0] if array.ndim else 0, offset, offset + batch))
    return np.array(array[offset:offset + batch])


def check_input_shape(vi, array):
    """Static dims in the model's input type must match the data."""
    dims = vi.type.tensor_type.shape.dim
    if not vi.type.tensor_type.HasField("shape"):
        return
    if len(dims) != array.ndim:
        raise BadModel("input %r has rank %d in the model, %d in the data"
                       % (vi.name, len(dims), array.ndim))
    for i, d in enumerate(dims):
        if d.HasField("dim_value") and d.dim_value != array.shape[i]:
            raise BadModel("input %r dim %d is %d in the model, %d in the data"
                           % (vi.name, i, d.dim_value, array.shape[i]))
    want = np_dtype(vi.type.tensor_type.elem_type)
    if array.dtype != want:
        raise BadModel("input %r is %s in the model, %s in the data"
                       % (vi.name, np.dtype(want).name, array.dtype.name))


def pick_output(graph, wanted):
    names = [o.name for o in graph.output]
    if wanted:
        if wanted not in names:
            raise BadModel("no graph output %r (outputs: %s)" % (wanted, ", ".join(names)))
        return wanted
    if len(names) == 1:
        return names[0]
    if "loss" in names:
        return "loss"
    raise BadModel("several outputs (%s): choose one with --output" % ", ".join(names))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("data_dir")
    parser.add_argument("--batch", type=int, default=None, help="rows per input (default: all)")
    parser.add_argument("--offset", type=int, default=0, help="first row")
    parser.add_argument("--output", default=None, help="output to print")
    parser.add_argument("--reference", default=None, help="reference.json to compare with")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args(argv)
    try:
        model = onnx.load(args.model)
    except Exception as e:  # protobuf raises several types on garbage
        print("onnx_ref_eval: cannot load %s: %s" % (args.model, e), file=sys.stderr)
        return 2
    try:
        graph = model.graph
        check_supported(graph)
        inits = {init.name for init in graph.initializer}
        feeds = {}
        for vi in graph.input:
            if vi.name in inits:
                continue
            feeds[vi.name] = load_rows(args.data_dir, vi.name, args.offset, args.batch)
            check_input_shape(vi, feeds[vi.name])
        name = pick_output(graph, args.output)
        value = evaluate(model, feeds)[name]
    except (Unsupported, BadModel) as e:
        print("onnx_ref_eval: %s: %s" % (args.model, e), file=sys.stderr)
        return 2
    if value.size == 1:
        print(repr(float(value.reshape(()))))
    else:
        np.set_printoptions(threshold=sys.maxsize)
        print("%s %s %s" % (name, value.dtype, list(value.shape)))
        print(value)
    if args.reference:
        with open(args.reference) as f:
            ref = json.load(f)
        key = str(args.batch) if args.batch is not None else str(ref.get("samples"))
        if args.offset or key not in ref.get("losses", {}):
            print("onnx_ref_eval: %s has no loss for batch %s at offset 0"
                  % (args.reference, key), file=sys.stderr)
            return 2
        want = ref["losses"][key]
        got = float(value.reshape(()))
        rel = abs(got - want) / max(abs(want), 1e-30)
        if not rel <= args.rtol:
            print("onnx_ref_eval: MISMATCH got %r want %r (rel %.3g > %g)"
                  % (got, want, rel, args.rtol), file=sys.stderr)
            return 1
        print("matches reference %r (rel %.3g)" % (want, rel), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
