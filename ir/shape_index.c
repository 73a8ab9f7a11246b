/* Shape functions of the ops that select, join or pad along axes: Concat,
 * Split, Slice, Gather, GatherElements, Pad. */
#include "px_slice_clamp.h"
#include "shape_util.h"

#include <stdint.h>
#include <string.h>

int px_shape_concat(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    if (px_su_arity(n, 1, -1, d)) return -1;
    if (!px_node_attr(n, "axis")) return px_su_error(d, n, "missing required attribute 'axis'");
    px_value *first;
    if (px_su_need(n, 0, "input", d, &first)) return -1;
    int r = -1;
    for (int i = 0; i < n->n_inputs; i++) {
        px_value *v;
        if (px_su_need(n, i, "input", d, &v) || px_su_same_dtype(n, d, first, v)) return -1;
        if (v->shape.rank < 0) continue;
        if (r >= 0 && v->shape.rank != r)
            return px_su_error(d, n, "input '%s' has rank %d, earlier inputs rank %d", v->name,
                               v->shape.rank, r);
        r = v->shape.rank;
    }
    px_shape out = px_su_unknown_rank(r);
    if (r < 0) return px_su_set(n, 0, first->dtype, &out, d);
    int axis;
    if (px_su_norm_axis(n, d, px_attr_int(n, "axis", 0), r, 0, "axis", &axis)) return -1;
    int64_t sum = 0;
    int sum_known = 1;
    for (int k = 0; k < r; k++) {
        int have = 0; /* set once out.dims[k] holds a candidate */
        for (int i = 0; i < n->n_inputs; i++) {
            const px_shape *s = &n->inputs[i]->shape;
            if (s->rank < 0) { /* says nothing about the dim, except the sum is open */
                if (k == axis) sum_known = 0;
                continue;
            }
            if (k == axis) {
                if (s->dims[k] < 0)
                    sum_known = 0;
                else
                    sum += s->dims[k];
                continue;
            }
            if (!have) {
                px_su_copy_dim(&out, k, s, k);
                have = 1;
            } else if (s->dims[k] >= 0 && out.dims[k] >= 0 && s->dims[k] != out.dims[k]) {
                char a[256], b[256];
                return px_su_error(d, n, "inputs disagree on dim %d: %s vs %s", k,
                                   px_shape_str(&n->inputs[0]->shape, a, sizeof a),
                                   px_shape_str(s, b, sizeof b));
            } else if (s->dims[k] >= 0) {
                px_su_copy_dim(&out, k, s, k);
            } else if (out.dims[k] < 0 && !px_su_dim_same(&out, k, s, k)) {
                out.sym_id[k] = 0;
            }
        }
        if (k == axis) {
            out.dims[k] = sum_known ? sum : -1;
            out.sym_id[k] = 0;
        }
    }
    return px_su_set(n, 0, first->dtype, &out, d);
}

int px_shape_split(px_graph *g, px_node *n, px_diag *d) {
    px_value *x;
    if (px_su_arity(n, 1, 2, d) || px_su_need(n, 0, "input", d, &x)) return -1;
    int outs = n->n_outputs;
    int64_t split[256];
    int count, present, known;
    if (px_su_ints_attr_or_input(n, d, "split", 1, "split", split, 256, &count, &present, &known))
        return -1;
    int r = x->shape.rank;
    px_shape base = x->shape;
    int axis = 0;
    if (r >= 0 && px_su_norm_axis(n, d, px_attr_int(n, "axis", 0), r, 0, "axis", &axis)) return -1;
    int has_num = px_node_attr(n, "num_outputs") != NULL;
    int64_t num = px_attr_int(n, "num_outputs", outs);
    if (has_num && num != outs)
        return px_su_error(d, n, "num_outputs=%lld but the node has %d outputs", (long long)num,
                           outs);
    if (present && has_num)
        return px_su_error(d, n, "give either 'split' or 'num_outputs', not both");
    if (present && count >= 0 && count != outs)
        return px_su_error(d, n, "split has %d entries but the node has %d outputs", count, outs);
    int64_t dim = r >= 0 ? x->shape.dims[axis] : -1;
    if (present && known) {
        int64_t total = 0;
        for (int i = 0; i < count; i++) {
            if (split[i] < 0)
                return px_su_error(d, n, "split entry %d is negative (%lld)", i,
                                   (long long)split[i]);
            total += split[i];
        }
        if (dim >= 0 && total != dim)
            return px_su_error(d, n, "split sizes sum to %lld but axis %d has size %lld",
                               (long long)total, axis, (long long)dim);
    }
    for (int i = 0; i < outs; i++) {
        px_shape s = base;
        if (r >= 0) {
            int64_t len = -1;
            if (present) {
                len = known ? split[i] : -1;
            } else if (dim >= 0 && has_num) {
                /* opset 18: ceil-sized chunks, the last one smaller */
                int64_t chunk = (dim + outs - 1) / outs;
                len = i < outs - 1 ? chunk : dim - chunk * (outs - 1);
                if (len < 0)
                    return px_su_error(d, n, "cannot split size %lld into %d chunks of %lld",
                                       (long long)dim, outs, (long long)chunk);
            } else if (dim >= 0) {
                if (dim % outs != 0)
                    return px_su_error(d, n, "axis %d of size %lld does not split evenly into %d",
                                       axis, (long long)dim, outs);
                len = dim / outs;
            }
            s.dims[axis] = len;
            s.sym_id[axis] = 0;
        }
        if (px_su_set(n, i, x->dtype, &s, d)) return -1;
    }
    (void)g;
    return 0;
}

/* Length of a slice of a dim of size dim (ONNX Slice-13 clamping rules). */
static int64_t slice_len(int64_t dim, int64_t start, int64_t end, int64_t step) {
    int64_t first, len;
    px_slice_axis(dim, start, end, step, &first, &len);
    return len;
}

/* Reads one of Slice's int lists: attribute (opset < 10) or input. */
static int slice_list(const px_node *n, px_diag *d, const char *name, int input, int64_t *out,
                      int *count, int *present, int *known) {
    return px_su_ints_attr_or_input(n, d, name, input, name, out, PX_MAX_RANK, count, present,
                                    known);
}

int px_shape_slice(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 5, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    int64_t starts[PX_MAX_RANK], ends[PX_MAX_RANK], axes[PX_MAX_RANK], steps[PX_MAX_RANK];
    int ns, ne, na, nt, ps, pe, pa, pt, ks, ke, ka, kt;
    if (slice_list(n, d, "starts", 1, starts, &ns, &ps, &ks) ||
        slice_list(n, d, "ends", 2, ends, &ne, &pe, &ke) ||
        slice_list(n, d, "axes", 3, axes, &na, &pa, &ka) ||
        slice_list(n, d, "steps", 4, steps, &nt, &pt, &kt))
        return -1;
    if (!ps || !pe) return px_su_error(d, n, "missing 'starts' or 'ends'");
    int r = x->shape.rank;
    px_shape out = px_su_unknown_rank(r);
    if (r < 0) return px_su_set(n, 0, x->dtype, &out, d);
    if (ns >= 0 && ne >= 0 && ns != ne)
        return px_su_error(d, n, "starts has %d entries but ends has %d", ns, ne);
    int len = ns >= 0 ? ns : ne;
    if ((pa && na >= 0 && len >= 0 && na != len) || (pt && nt >= 0 && len >= 0 && nt != len))
        return px_su_error(d, n, "axes/steps lengths differ from starts (%d)", len);
    if (len > r) return px_su_error(d, n, "slices %d axes of a rank-%d input", len, r);
    if ((pa && !ka) || len < 0) /* which axes are sliced is not known */
        return px_su_set(n, 0, x->dtype, &out, d);
    if (!pa)
        for (int i = 0; i < len; i++) axes[i] = i;
    if (px_su_norm_axes(n, d, axes, len, r, "axes")) return -1;
    int sliced[PX_MAX_RANK] = {0};
    for (int i = 0; i < len; i++) {
        int a = (int)axes[i];
        sliced[a] = 1;
        int64_t step = pt ? (kt ? steps[i] : 0) : 1;
        if (pt && kt && step == 0) return px_su_error(d, n, "steps entry %d is 0", i);
        if (!ks || !ke || (pt && !kt)) continue; /* stays unknown */
        int64_t dim = x->shape.dims[a];
        if (dim >= 0) {
            px_su_set_dim(&out, a, slice_len(dim, starts[i], ends[i], step));
        } else if (step == 1 && starts[i] == 0 && ends[i] >= INT32_MAX) {
            px_su_copy_dim(&out, a, &x->shape, a); /* the whole dim */
        }
    }
    for (int a = 0; a < r; a++)
        if (!sliced[a]) px_su_copy_dim(&out, a, &x->shape, a);
    return px_su_set(n, 0, x->dtype, &out, d);
}

/* When indices are constant and the gathered dim is known, rejects indices
 * outside [-dim, dim). */
static int check_const_indices(const px_node *n, px_diag *d, const px_value *idx, int64_t dim) {
    if (dim < 0 || !px_value_is_const(idx) || !idx->data) return 0;
    int64_t count = px_tensor_numel(idx->data);
    for (int64_t i = 0; i < count; i++) {
        int64_t v = px_tensor_get_i64(idx->data, i);
        if (v < -dim || v >= dim)
            return px_su_error(d, n, "index %lld in '%s' is out of range for a dim of size %lld",
                               (long long)v, idx->name, (long long)dim);
    }
    return 0;
}

int px_shape_gather(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x, *idx;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "data", d, &x) ||
        px_su_need(n, 1, "indices", d, &idx))
        return -1;
    if (idx->dtype != PX_I32 && idx->dtype != PX_I64)
        return px_su_error(d, n, "indices '%s' must be int32 or int64, got %s", idx->name,
                           px_dtype_name(idx->dtype));
    int r = x->shape.rank, q = idx->shape.rank, axis;
    if (r == 0) return px_su_error(d, n, "data '%s' must have rank >= 1", x->name);
    px_shape out = px_shape_unknown();
    if (r < 0) return px_su_set(n, 0, x->dtype, &out, d);
    if (px_su_norm_axis(n, d, px_attr_int(n, "axis", 0), r, 0, "axis", &axis)) return -1;
    if (check_const_indices(n, d, idx, x->shape.dims[axis])) return -1;
    if (q < 0) return px_su_set(n, 0, x->dtype, &out, d);
    if (q + r - 1 > PX_MAX_RANK)
        return px_su_error(d, n, "output rank %d exceeds the supported %d", q + r - 1, PX_MAX_RANK);
    out = px_su_unknown_rank(q + r - 1);
    int k = 0;
    for (int i = 0; i < axis; i++) px_su_copy_dim(&out, k++, &x->shape, i);
    for (int i = 0; i < q; i++) px_su_copy_dim(&out, k++, &idx->shape, i);
    for (int i = axis + 1; i < r; i++) px_su_copy_dim(&out, k++, &x->shape, i);
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_gather_elements(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x, *idx;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "data", d, &x) ||
        px_su_need(n, 1, "indices", d, &idx))
        return -1;
    if (idx->dtype != PX_I32 && idx->dtype != PX_I64)
        return px_su_error(d, n, "indices '%s' must be int32 or int64, got %s", idx->name,
                           px_dtype_name(idx->dtype));
    int r = x->shape.rank >= 0 ? x->shape.rank : idx->shape.rank, axis;
    if (x->shape.rank >= 0 && idx->shape.rank >= 0 && x->shape.rank != idx->shape.rank)
        return px_su_error(d, n, "data has rank %d but indices rank %d", x->shape.rank,
                           idx->shape.rank);
    if (r == 0) return px_su_error(d, n, "data '%s' must have rank >= 1", x->name);
    if (r > 0 && px_su_norm_axis(n, d, px_attr_int(n, "axis", 0), r, 0, "axis", &axis)) return -1;
    return px_su_set(n, 0, x->dtype, &idx->shape, d);
}

/* ScatterElements(data, indices, updates): data's shape and dtype; indices
 * and updates share a shape of data's rank. reduction none, add, mul
 * (opset 16), max or min (opset 18). */
int px_shape_scatter_elements(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x, *idx, *upd;
    if (px_su_arity(n, 3, 3, d) || px_su_need(n, 0, "data", d, &x) ||
        px_su_need(n, 1, "indices", d, &idx) || px_su_need(n, 2, "updates", d, &upd))
        return -1;
    if (idx->dtype != PX_I32 && idx->dtype != PX_I64)
        return px_su_error(d, n, "indices '%s' must be int32 or int64, got %s", idx->name,
                           px_dtype_name(idx->dtype));
    if (px_su_same_dtype(n, d, x, upd)) return -1;
    const char *red = px_attr_string(n, "reduction", "none");
    if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") &&
        strcmp(red, "min"))
        return px_su_error(d, n, "unknown reduction '%s'", red);
    int r = x->shape.rank, axis;
    if ((r >= 0 && idx->shape.rank >= 0 && r != idx->shape.rank) ||
        (idx->shape.rank >= 0 && upd->shape.rank >= 0 && idx->shape.rank != upd->shape.rank))
        return px_su_error(d, n, "data, indices and updates must have one rank (%d, %d, %d)", r,
                           idx->shape.rank, upd->shape.rank);
    if (px_shape_is_static(&idx->shape) && px_shape_is_static(&upd->shape) &&
        !px_shape_equal(&idx->shape, &upd->shape))
        return px_su_error(d, n, "indices '%s' and updates '%s' must have one shape", idx->name,
                           upd->name);
    if (r == 0) return px_su_error(d, n, "data '%s' must have rank >= 1", x->name);
    if (r > 0 && px_su_norm_axis(n, d, px_attr_int(n, "axis", 0), r, 0, "axis", &axis)) return -1;
    return px_su_set(n, 0, x->dtype, &x->shape, d);
}

int px_shape_pad(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 4, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    const char *mode = px_attr_string(n, "mode", "constant");
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
        strcmp(mode, "wrap"))
        return px_su_error(d, n, "unknown mode '%s'", mode);
    px_value *cv = px_su_in(n, 2);
    if (cv && cv->dtype != x->dtype)
        return px_su_error(d, n, "constant_value '%s' has type %s, data has %s", cv->name,
                           px_dtype_name(cv->dtype), px_dtype_name(x->dtype));
    int64_t pads[2 * PX_MAX_RANK], axes[PX_MAX_RANK];
    int np, pp, kp, na, pa, ka;
    if (px_su_ints_attr_or_input(n, d, "pads", 1, "pads", pads, 2 * PX_MAX_RANK, &np, &pp, &kp) ||
        px_su_ints_attr_or_input(n, d, NULL, 3, "axes", axes, PX_MAX_RANK, &na, &pa, &ka))
        return -1;
    if (!pp) return px_su_error(d, n, "missing 'pads' (attribute before opset 11, input after)");
    int r = x->shape.rank;
    px_shape out = px_su_unknown_rank(r);
    if (r < 0) return px_su_set(n, 0, x->dtype, &out, d);
    if (!pa) {
        na = r;
        ka = 1;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (np >= 0 && na >= 0 && np != 2 * na)
        return px_su_error(d, n, "pads has %d entries, expected %d (2 per padded axis)", np,
                           2 * na);
    if (!ka || !kp) return px_su_set(n, 0, x->dtype, &out, d);
    if (px_su_norm_axes(n, d, axes, na, r, "axes")) return -1;
    out = x->shape;
    for (int i = 0; i < na; i++) {
        int a = (int)axes[i];
        int64_t lo = pads[i], hi = pads[i + na], dim = x->shape.dims[a];
        if (lo == 0 && hi == 0) continue;
        if (dim < 0) {
            out.dims[a] = -1;
            out.sym_id[a] = 0;
            continue;
        }
        if (lo > INT64_MAX / 4 || hi > INT64_MAX / 4 || lo < -INT64_MAX / 4 || hi < -INT64_MAX / 4)
            return px_su_error(d, n, "absurd pad amounts on axis %d", a);
        int64_t v = dim + lo + hi;
        if (v < 0)
            return px_su_error(d, n, "pads %lld,%lld shrink axis %d of size %lld below zero",
                               (long long)lo, (long long)hi, a, (long long)dim);
        px_su_set_dim(&out, a, v);
    }
    return px_su_set(n, 0, x->dtype, &out, d);
}
