/* Shape functions of the ops that rearrange a tensor without computing on
 * it: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand,
 * Tile. */
#include "shape_util.h"

#include <string.h>

int px_shape_shape(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    px_shape s = px_su_unknown_rank(1);
    int r = x->shape.rank;
    if (r >= 0) {
        /* opset 15 added start/end: negative counts from the back, clamped */
        int64_t start = px_attr_int(n, "start", 0), end = px_attr_int(n, "end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = start < 0 ? 0 : start > r ? r : start;
        end = end < 0 ? 0 : end > r ? r : end;
        px_su_set_dim(&s, 0, end > start ? end - start : 0);
    }
    return px_su_set(n, 0, PX_I64, &s, d);
}

int px_shape_size(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    px_shape s = px_shape_scalar();
    return px_su_set(n, 0, PX_I64, &s, d);
}

/* Known product of the known dims of s in [from, to); *unknown counts the
 * others. -1 on overflow. */
static int known_product(const px_node *n, px_diag *d, const px_shape *s, int from, int to,
                         int64_t *prod, int *unknown) {
    *prod = 1;
    *unknown = 0;
    for (int i = from; i < to; i++) {
        if (s->dims[i] < 0) {
            (*unknown)++;
            continue;
        }
        if (px_mul_checked(*prod, s->dims[i], prod))
            return px_su_error(d, n, "element count of the input overflows");
    }
    return 0;
}

/* Dim `di` of out is the product of dims [from, to) of s: static when they
 * all are, a copy when exactly one is unknown and the rest multiply to 1. */
static int product_dim(const px_node *n, px_diag *d, const px_shape *s, int from, int to,
                       px_shape *out, int di) {
    int64_t prod;
    int unknown;
    if (known_product(n, d, s, from, to, &prod, &unknown)) return -1;
    if (unknown == 0 || prod == 0) {
        px_su_set_dim(out, di, prod);
    } else if (unknown == 1 && prod == 1) {
        for (int i = from; i < to; i++)
            if (s->dims[i] < 0) px_su_copy_dim(out, di, s, i);
    } else {
        out->dims[di] = -1;
        out->sym_id[di] = 0;
    }
    return 0;
}

/* Resolves Reshape's single -1 entry (at index `hole` of out) from the
 * element count: input dims that the output copies (0 entries, recorded in
 * copied[]) cancel, and what remains must be static, or be one symbolic dim
 * that the known dims cancel exactly (then the -1 is that dim). */
static int reshape_fill_hole(const px_node *n, px_diag *d, const px_shape *in, const int *copied,
                             px_shape *out, int hole) {
    int64_t p_in = 1, p_out = 1;
    int rest = -1, n_rest = 0;
    for (int i = 0; i < in->rank; i++) {
        if (in->dims[i] >= 0) {
            if (px_mul_checked(p_in, in->dims[i], &p_in))
                return px_su_error(d, n, "element count of the input overflows");
        } else if (!copied[i]) {
            rest = i;
            n_rest++;
        }
    }
    for (int i = 0; i < out->rank; i++)
        if (i != hole && out->dims[i] >= 0 && px_mul_checked(p_out, out->dims[i], &p_out))
            return px_su_error(d, n, "element count of the target shape overflows");
    out->dims[hole] = -1;
    out->sym_id[hole] = 0;
    if (p_out == 0) {
        if (n_rest == 0 && p_in != 0)
            return px_su_error(d, n, "cannot infer the -1 dim: other target dims contain 0");
        return 0;
    }
    if (n_rest == 0) {
        if (p_in % p_out != 0) {
            char sb[256];
            return px_su_error(d, n,
                               "cannot reshape %lld elements (input %s) into a shape whose "
                               "other dims multiply to %lld",
                               (long long)p_in, px_shape_str(in, sb, sizeof sb), (long long)p_out);
        }
        px_su_set_dim(out, hole, p_in / p_out);
    } else if (n_rest == 1 && p_in == p_out) {
        px_su_copy_dim(out, hole, in, rest);
    }
    return 0;
}

int px_shape_reshape(px_graph *g, px_node *n, px_diag *d) {
    px_value *x, *sv;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "data", d, &x) ||
        px_su_need(n, 1, "shape", d, &sv))
        return -1;
    if (px_su_want_int(n, d, sv, "shape")) return -1;
    int64_t t[PX_MAX_RANK];
    int count = 0;
    int k = px_su_const_ints(n, d, sv, "shape", t, PX_MAX_RANK, &count);
    if (k < 0) return -1;
    if (k == 0) {
        int64_t len = px_su_len1d(sv);
        px_shape s = px_su_unknown_rank(len > PX_MAX_RANK ? -1 : (int)len);
        return px_su_set(n, 0, x->dtype, &s, d);
    }
    int allowzero = px_su_opset(g) >= 14 && px_attr_int(n, "allowzero", 0) != 0;
    const px_shape *in = &x->shape;
    px_shape out = px_su_unknown_rank(count);
    int copied[PX_MAX_RANK] = {0}, hole = -1, has_zero = 0;
    for (int i = 0; i < count; i++) {
        if (t[i] < -1)
            return px_su_error(d, n, "target shape entry %d is %lld", i, (long long)t[i]);
        if (t[i] == -1) {
            if (hole >= 0) return px_su_error(d, n, "target shape has more than one -1");
            hole = i;
        } else if (t[i] == 0 && !allowzero) {
            if (in->rank < 0) continue; /* copies a dim we do not know */
            if (i >= in->rank)
                return px_su_error(d, n,
                                   "target shape entry %d is 0 (copy) but the input has rank %d", i,
                                   in->rank);
            px_su_copy_dim(&out, i, in, i);
            if (in->dims[i] < 0) copied[i] = 1;
        } else {
            has_zero |= t[i] == 0;
            px_su_set_dim(&out, i, t[i]);
        }
    }
    if (allowzero && has_zero && hole >= 0)
        return px_su_error(d, n, "target shape has both 0 and -1 with allowzero=1");
    if (in->rank < 0) return px_su_set(n, 0, x->dtype, &out, d);
    if (hole >= 0) {
        if (reshape_fill_hole(n, d, in, copied, &out, hole)) return -1;
    } else if (px_shape_is_static(in) && px_shape_is_static(&out) &&
               px_shape_numel(in) != px_shape_numel(&out)) {
        char a[256], b[256];
        return px_su_error(d, n, "cannot reshape %s (%lld elements) into %s (%lld elements)",
                           px_shape_str(in, a, sizeof a), (long long)px_shape_numel(in),
                           px_shape_str(&out, b, sizeof b), (long long)px_shape_numel(&out));
    }
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_flatten(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "input", d, &x)) return -1;
    px_shape out = px_su_unknown_rank(2);
    int r = x->shape.rank, axis;
    if (r >= 0) {
        /* axis in [-r, r]: negative counts from the back, r puts all dims first */
        int64_t a = px_attr_int(n, "axis", 1);
        if (a < -r || a > r)
            return px_su_error(d, n, "axis %lld is out of range for rank %d (valid: [%d, %d])",
                               (long long)a, r, -r, r);
        axis = (int)(a < 0 ? a + r : a);
        if (product_dim(n, d, &x->shape, 0, axis, &out, 0) ||
            product_dim(n, d, &x->shape, axis, r, &out, 1))
            return -1;
    }
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_squeeze(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 2, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    int64_t axes[PX_MAX_RANK];
    int count, present, known;
    if (px_su_ints_attr_or_input(n, d, "axes", 1, "axes", axes, PX_MAX_RANK, &count, &present,
                                 &known))
        return -1;
    const px_shape *in = &x->shape;
    px_shape out = px_shape_unknown();
    if (in->rank < 0) return px_su_set(n, 0, x->dtype, &out, d);
    int drop[PX_MAX_RANK] = {0};
    if (!present) {
        /* every dim of size 1; an unknown dim might be 1, so the rank is open */
        for (int i = 0; i < in->rank; i++) {
            if (in->dims[i] < 0) return px_su_set(n, 0, x->dtype, &out, d);
            drop[i] = in->dims[i] == 1;
        }
    } else if (!known) {
        out = px_su_unknown_rank(count >= 0 && count <= in->rank ? in->rank - count : -1);
        return px_su_set(n, 0, x->dtype, &out, d);
    } else {
        if (px_su_norm_axes(n, d, axes, count, in->rank, "axes")) return -1;
        for (int i = 0; i < count; i++) {
            int a = (int)axes[i];
            if (in->dims[a] >= 0 && in->dims[a] != 1)
                return px_su_error(d, n, "cannot squeeze axis %d of size %lld", a,
                                   (long long)in->dims[a]);
            drop[a] = 1;
        }
    }
    out.rank = 0;
    for (int i = 0; i < in->rank; i++)
        if (!drop[i]) px_su_copy_dim(&out, out.rank++, in, i);
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_unsqueeze(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 2, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    int64_t axes[PX_MAX_RANK];
    int count, present, known;
    if (px_su_ints_attr_or_input(n, d, "axes", 1, "axes", axes, PX_MAX_RANK, &count, &present,
                                 &known))
        return -1;
    if (!present)
        return px_su_error(d, n, "missing 'axes' (attribute before opset 13, input after)");
    const px_shape *in = &x->shape;
    px_shape out = px_shape_unknown();
    if (in->rank < 0 || count < 0) return px_su_set(n, 0, x->dtype, &out, d);
    int r = in->rank + count;
    if (r > PX_MAX_RANK)
        return px_su_error(d, n, "output rank %d exceeds the supported %d", r, PX_MAX_RANK);
    out = px_su_unknown_rank(r);
    if (!known) return px_su_set(n, 0, x->dtype, &out, d);
    if (px_su_norm_axes(n, d, axes, count, r, "axes")) return -1;
    int ones[PX_MAX_RANK] = {0};
    for (int i = 0; i < count; i++) ones[axes[i]] = 1;
    for (int i = 0, j = 0; i < r; i++) {
        if (ones[i])
            px_su_set_dim(&out, i, 1);
        else
            px_su_copy_dim(&out, i, in, j++);
    }
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_transpose(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    int count = 0;
    const int64_t *perm = px_attr_ints(n, "perm", &count);
    int has_perm = px_node_attr(n, "perm") != NULL;
    int r = x->shape.rank;
    if (r < 0) {
        px_shape out = px_su_unknown_rank(has_perm && count <= PX_MAX_RANK ? count : -1);
        return px_su_set(n, 0, x->dtype, &out, d);
    }
    if (has_perm && count != r)
        return px_su_error(d, n, "perm has %d entries but the input has rank %d", count, r);
    px_shape out = px_su_unknown_rank(r);
    int seen[PX_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) {
        int64_t p = has_perm ? perm[i] : r - 1 - i;
        if (p < 0 || p >= r || seen[p])
            return px_su_error(d, n, "perm is not a permutation of [0, %d)", r);
        seen[p] = 1;
        px_su_copy_dim(&out, i, &x->shape, (int)p);
    }
    return px_su_set(n, 0, x->dtype, &out, d);
}

/* An exporter traces a state made of zeros at the export's batch
 * (torch.zeros(layers, batch, hidden) before an RNN, then Expand to the
 * running batch): compiled at another batch, the constant's batch dim and
 * the shape asked disagree. A constant whose elements are all one value
 * holds no per-sample data, so where its dims conflict with `target` they
 * become 1 (a new constant for this node; the value expands to the shape
 * asked), with a warning naming the node. 1 when rebound, 0 if not
 * applicable, -1 on error. */
static int rebind_uniform(px_graph *g, px_node *n, const px_value *x, const px_shape *target,
                          px_diag *d) {
    if (x->kind != PX_VALUE_CONSTANT || !x->data || x->shape.rank < 1) return 0;
    int64_t numel = px_tensor_numel(x->data);
    if (numel < 1) return 0;
    double v = px_tensor_get_f64(x->data, 0);
    for (int64_t i = 1; i < numel; i++)
        if (px_tensor_get_f64(x->data, i) != v) return 0;
    px_shape fixed = x->shape;
    int conflicts = 0;
    for (int i = 0; i < x->shape.rank; i++) {
        int ti = target->rank - x->shape.rank + i;
        if (ti < 0) continue;
        int64_t a = x->shape.dims[i], b = target->dims[ti];
        if (a >= 0 && b >= 0 && a != b && a != 1 && b != 1) {
            fixed.dims[i] = 1;
            conflicts++;
        }
    }
    if (!conflicts) return 0;
    px_tensor *t = px_tensor_new(x->dtype, &fixed, d);
    if (!t) return -1;
    for (int64_t i = 0; i < px_tensor_numel(t); i++) px_tensor_set_f64(t, i, v);
    px_value *c = px_graph_add_constant(g, x->name, t);
    if (!c) return -1;
    char sx[256], st[256];
    px_warning(d,
               "'%s' (Expand): the constant '%s' of shape %s (every element %g) is expanded to "
               "%s: read as that value at the shape asked (a state traced at the export's batch, "
               "as torch.zeros(..., batch, ...) exports)",
               n->name, x->name, px_shape_str(&x->shape, sx, sizeof sx), v,
               px_shape_str(target, st, sizeof st));
    px_node_set_input(n, 0, c);
    return 1;
}

int px_shape_expand(px_graph *g, px_node *n, px_diag *d) {
    px_value *x, *sv;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "input", d, &x) ||
        px_su_need(n, 1, "shape", d, &sv))
        return -1;
    if (px_su_want_int(n, d, sv, "shape")) return -1;
    int64_t t[PX_MAX_RANK];
    int count = 0;
    int k = px_su_const_ints(n, d, sv, "shape", t, PX_MAX_RANK, &count);
    if (k < 0) return -1;
    px_shape out;
    if (k == 1) {
        px_shape target = px_su_unknown_rank(count);
        for (int i = 0; i < count; i++) {
            if (t[i] < 0)
                return px_su_error(d, n, "shape entry %d is negative (%lld)", i, (long long)t[i]);
            px_su_set_dim(&target, i, t[i]);
        }
        int rebound = rebind_uniform(g, n, x, &target, d);
        if (rebound < 0) return -1;
        if (rebound) x = n->inputs[0];
        if (px_su_broadcast(n, d, &x->shape, &target, &out)) return -1;
        return px_su_set(n, 0, x->dtype, &out, d);
    }
    int64_t len = px_su_len1d(sv);
    if (x->shape.rank < 0 || len < 0 || len > PX_MAX_RANK) {
        out = px_shape_unknown();
        return px_su_set(n, 0, x->dtype, &out, d);
    }
    int r = x->shape.rank > len ? x->shape.rank : (int)len;
    out = px_su_unknown_rank(r);
    /* an input dim other than 1 survives whatever the shape says there */
    for (int i = 0; i < x->shape.rank; i++) {
        int oi = r - x->shape.rank + i;
        if (x->shape.dims[i] > 1 || x->shape.dims[i] == 0) px_su_copy_dim(&out, oi, &x->shape, i);
    }
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_tile(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x, *rv;
    if (px_su_arity(n, 2, 3, d) || px_su_need(n, 0, "input", d, &x) ||
        px_su_need(n, 1, "repeats", d, &rv))
        return -1;
    if (px_su_want_int(n, d, rv, "repeats")) return -1;
    int r = x->shape.rank;
    int64_t reps[PX_MAX_RANK];
    int count = 0;
    int k = px_su_const_ints(n, d, rv, "repeats", reps, PX_MAX_RANK, &count);
    if (k < 0) return -1;
    int64_t len = k ? count : px_su_len1d(rv);
    if (r >= 0 && len >= 0 && len != r)
        return px_su_error(d, n, "repeats has %lld entries but the input has rank %d",
                           (long long)len, r);
    if (r < 0) r = len >= 0 && len <= PX_MAX_RANK ? (int)len : -1;
    px_shape out = px_su_unknown_rank(r);
    if (k == 1 && x->shape.rank >= 0) {
        for (int i = 0; i < r; i++) {
            if (reps[i] < 0)
                return px_su_error(d, n, "repeats entry %d is negative (%lld)", i,
                                   (long long)reps[i]);
            if (reps[i] == 1) {
                px_su_copy_dim(&out, i, &x->shape, i);
            } else if (reps[i] == 0) {
                px_su_set_dim(&out, i, 0);
            } else if (x->shape.dims[i] >= 0) {
                int64_t v;
                if (px_mul_checked(x->shape.dims[i], reps[i], &v))
                    return px_su_error(d, n, "absurd size: dim %d (%lld) times %lld overflows", i,
                                       (long long)x->shape.dims[i], (long long)reps[i]);
                px_su_set_dim(&out, i, v);
            }
        }
    }
    return px_su_set(n, 0, x->dtype, &out, d);
}
