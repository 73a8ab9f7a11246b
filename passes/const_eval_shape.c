/* Constant evaluation of data-movement and shape ops: Constant, Identity,
 * Shape, Size, Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, Flatten,
 * Transpose, Expand, Tile, ConstantOfShape, Range, Trilu. Data moves as raw
 * elements (memcpy), so every fixed-size dtype is handled exactly. */
#include "const_eval_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LABEL(n) ce_label((n), lb, sizeof lb)

static int data_ok(const px_tensor *t) {
    return t && t->dtype != PX_STRING && px_dtype_size(t->dtype) > 0;
}

/* Same bytes, new shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity). */
static int copy_reshaped(const px_tensor *x, const px_shape *shape, px_tensor **out, px_diag *d) {
    int st = ce_alloc(x->dtype, shape, out, d);
    if (st != PX_EVAL_OK) return st;
    if ((*out)->nbytes) memcpy((*out)->data, x->data, (*out)->nbytes);
    return PX_EVAL_OK;
}

/* Iterates the coordinates of dst (row-major) and copies one element from
 * src at the flat index src_index(coord). */
typedef int64_t (*src_index_fn)(const int64_t *coord, const void *ctx);

static void copy_by_coords(const px_tensor *src, px_tensor *dst, src_index_fn src_index,
                           const void *ctx) {
    int64_t numel = px_tensor_numel(dst);
    size_t es = px_dtype_size(dst->dtype);
    int rank = dst->shape.rank;
    int64_t coord[PX_MAX_RANK] = {0};
    for (int64_t e = 0; e < numel; e++) {
        int64_t si = src_index(coord, ctx);
        memcpy((char *)dst->data + (size_t)e * es, (const char *)src->data + (size_t)si * es, es);
        for (int ax = rank - 1; ax >= 0; ax--) {
            if (++coord[ax] < dst->shape.dims[ax]) break;
            coord[ax] = 0;
        }
    }
}

/* ---- Constant, Identity ---- */

static int string_tensor(const px_bytes *items, int count, int rank, px_tensor **out, px_diag *d) {
    int64_t dims[1] = {count};
    px_shape s = px_shape_make(rank, dims);
    int st = ce_alloc(PX_STRING, &s, out, d);
    if (st != PX_EVAL_OK) return st;
    px_bytes *dst = (px_bytes *)(*out)->data;
    for (int i = 0; i < count; i++) {
        dst[i].data = malloc(items[i].len + 1);
        if (!dst[i].data) return px_error(d, "out of memory");
        if (items[i].len) memcpy(dst[i].data, items[i].data, items[i].len);
        dst[i].data[items[i].len] = '\0';
        dst[i].len = items[i].len;
    }
    return PX_EVAL_OK;
}

int px_eval_constant(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    (void)in;
    char lb[256];
    for (int i = 0; i < n->n_attrs; i++) {
        const px_attr *a = &n->attrs[i];
        const char *nm = a->name;
        if ((strcmp(nm, "value") == 0 || strcmp(nm, "sparse_value") == 0) && a->t) {
            int64_t numel = px_tensor_numel(a->t);
            if (numel > PX_CONST_EVAL_MAX_ELEMS) return PX_EVAL_NOT_FOLDABLE;
            *out = px_tensor_clone(a->t, d);
            return *out ? PX_EVAL_OK : PX_EVAL_ERROR;
        }
        if (strcmp(nm, "value_float") == 0 || strcmp(nm, "value_int") == 0) {
            px_shape s = px_shape_scalar();
            int is_f = nm[6] == 'f';
            int st = ce_alloc(is_f ? PX_F32 : PX_I64, &s, out, d);
            if (st != PX_EVAL_OK) return st;
            if (is_f)
                ce_store_f64(*out, 0, a->f);
            else
                ce_store_i64(*out, 0, a->i);
            return PX_EVAL_OK;
        }
        if (strcmp(nm, "value_floats") == 0 || strcmp(nm, "value_ints") == 0) {
            int64_t dims[1] = {a->n};
            px_shape s = px_shape_make(1, dims);
            int is_f = nm[6] == 'f';
            int st = ce_alloc(is_f ? PX_F32 : PX_I64, &s, out, d);
            if (st != PX_EVAL_OK) return st;
            for (int k = 0; k < a->n; k++) {
                if (is_f)
                    ce_store_f64(*out, k, a->floats[k]);
                else
                    ce_store_i64(*out, k, a->ints[k]);
            }
            return PX_EVAL_OK;
        }
        if (strcmp(nm, "value_string") == 0) return string_tensor(&a->s, 1, 0, out, d);
        if (strcmp(nm, "value_strings") == 0) return string_tensor(a->strings, a->n, 1, out, d);
    }
    return px_error(d,
                    "%s has none of the attributes value, sparse_value, value_float(s), "
                    "value_int(s), value_string(s)",
                    LABEL(n));
}

int px_eval_identity(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    if (n->n_inputs < 1 || !in[0]) return PX_EVAL_NOT_FOLDABLE;
    if (px_tensor_numel(in[0]) > PX_CONST_EVAL_MAX_ELEMS) return PX_EVAL_NOT_FOLDABLE;
    *out = px_tensor_clone(in[0], d);
    return *out ? PX_EVAL_OK : PX_EVAL_ERROR;
}

/* ---- Shape, Size ---- */

int px_eval_shape(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    if (n->n_inputs < 1 || !in[0]) return PX_EVAL_NOT_FOLDABLE;
    const px_shape *s = &in[0]->shape;
    int64_t r = s->rank;
    /* opset 15: start/end select a slice of the shape, clamped like Slice. */
    int64_t start = px_attr_int(n, "start", 0), end = px_attr_int(n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : (start > r ? r : start);
    end = end < 0 ? 0 : (end > r ? r : end);
    int64_t count = end > start ? end - start : 0;
    int64_t dims[1] = {count};
    px_shape os = px_shape_make(1, dims);
    int st = ce_alloc(PX_I64, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    for (int64_t i = 0; i < count; i++) ce_store_i64(*out, i, s->dims[start + i]);
    return PX_EVAL_OK;
}

int px_eval_size(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    if (n->n_inputs < 1 || !in[0]) return PX_EVAL_NOT_FOLDABLE;
    px_shape os = px_shape_scalar();
    int st = ce_alloc(PX_I64, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    ce_store_i64(*out, 0, px_shape_numel(&in[0]->shape));
    return PX_EVAL_OK;
}

/* ---- Gather ---- */

int px_eval_gather(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0], *idx = n->n_inputs > 1 ? in[1] : NULL;
    if (!data_ok(x) || !idx || (idx->dtype != PX_I64 && idx->dtype != PX_I32))
        return PX_EVAL_NOT_FOLDABLE;
    int r = x->shape.rank, q = idx->shape.rank;
    if (r < 1) return px_error(d, "%s: data must have rank >= 1", LABEL(n));
    if (r + q - 1 > PX_MAX_RANK) return PX_EVAL_NOT_FOLDABLE;
    int64_t axis;
    if (ce_axis(n, px_attr_int(n, "axis", 0), r, &axis, d) != 0) return PX_EVAL_ERROR;
    px_shape os = px_shape_make(0, NULL);
    for (int i = 0; i < axis; i++) os.dims[os.rank++] = x->shape.dims[i];
    for (int i = 0; i < q; i++) os.dims[os.rank++] = idx->shape.dims[i];
    for (int i = (int)axis + 1; i < r; i++) os.dims[os.rank++] = x->shape.dims[i];
    int st = ce_alloc(x->dtype, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    int64_t outer = 1, inner = 1, dim = x->shape.dims[axis], nidx = px_tensor_numel(idx);
    for (int i = 0; i < axis; i++) outer *= x->shape.dims[i];
    for (int i = (int)axis + 1; i < r; i++) inner *= x->shape.dims[i];
    size_t es = px_dtype_size(x->dtype), row = (size_t)inner * es;
    char *dst = (char *)(*out)->data;
    for (int64_t k = 0; k < nidx; k++) {
        int64_t j = ce_load_i64(idx, k);
        if (j < -dim || j >= dim)
            return px_error(d, "%s: index %lld is out of range for axis %lld of size %lld",
                            LABEL(n), (long long)j, (long long)axis, (long long)dim);
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < nidx; k++) {
            int64_t j = ce_load_i64(idx, k);
            if (j < 0) j += dim;
            memcpy(dst, (const char *)x->data + (size_t)((o * dim + j) * inner) * es, row);
            dst += row;
        }
    return PX_EVAL_OK;
}

/* ---- Slice ---- */

typedef struct {
    int rank;
    int64_t start[PX_MAX_RANK], step[PX_MAX_RANK], stride[PX_MAX_RANK];
} slice_ctx;

static int64_t slice_index(const int64_t *coord, const void *vctx) {
    const slice_ctx *c = vctx;
    int64_t idx = 0;
    for (int ax = 0; ax < c->rank; ax++)
        idx += (c->start[ax] + coord[ax] * c->step[ax]) * c->stride[ax];
    return idx;
}

/* Reads starts/ends/axes/steps from attributes (opset < 10) or inputs. */
static int slice_params(const px_node *n, const px_tensor *const *in, int64_t *starts,
                        int64_t *ends, int64_t *axes, int64_t *steps, int *count, px_diag *d) {
    char lb[256];
    int ns, ne, na = -1, nst = -1;
    if (px_node_attr(n, "starts")) {
        const int64_t *a = px_attr_ints(n, "starts", &ns), *b = px_attr_ints(n, "ends", &ne);
        if (!a || !b || ns > PX_MAX_RANK || ne != ns)
            return px_error(d, "%s: attributes starts and ends must have equal length", LABEL(n));
        memcpy(starts, a, (size_t)ns * sizeof *a);
        memcpy(ends, b, (size_t)ne * sizeof *b);
        const int64_t *c = px_attr_ints(n, "axes", &na);
        if (c) {
            if (na != ns) return px_error(d, "%s: axes must match starts in length", LABEL(n));
            memcpy(axes, c, (size_t)na * sizeof *c);
        } else {
            na = -1;
        }
    } else {
        if (n->n_inputs < 3 || !in[1] || !in[2]) return PX_EVAL_NOT_FOLDABLE;
        ns = ce_read_ints(in[1], starts, PX_MAX_RANK);
        ne = ce_read_ints(in[2], ends, PX_MAX_RANK);
        if (ns < 0 || ne < 0) return PX_EVAL_NOT_FOLDABLE;
        if (ne != ns) return px_error(d, "%s: starts and ends must have equal length", LABEL(n));
        if (n->n_inputs > 3 && in[3]) {
            na = ce_read_ints(in[3], axes, PX_MAX_RANK);
            if (na < 0) return PX_EVAL_NOT_FOLDABLE;
            if (na != ns) return px_error(d, "%s: axes must match starts in length", LABEL(n));
        }
        if (n->n_inputs > 4 && in[4]) {
            nst = ce_read_ints(in[4], steps, PX_MAX_RANK);
            if (nst < 0) return PX_EVAL_NOT_FOLDABLE;
            if (nst != ns) return px_error(d, "%s: steps must match starts in length", LABEL(n));
        }
    }
    if (na < 0)
        for (int i = 0; i < ns; i++) axes[i] = i;
    if (nst < 0)
        for (int i = 0; i < ns; i++) steps[i] = 1;
    *count = ns;
    return PX_EVAL_OK;
}

int px_eval_slice(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0];
    if (!data_ok(x)) return PX_EVAL_NOT_FOLDABLE;
    int64_t starts[PX_MAX_RANK], ends[PX_MAX_RANK], axes[PX_MAX_RANK], steps[PX_MAX_RANK];
    int count = 0;
    int st = slice_params(n, in, starts, ends, axes, steps, &count, d);
    if (st != PX_EVAL_OK) return st;
    int r = x->shape.rank;
    slice_ctx c = {.rank = r};
    px_shape os = x->shape;
    int seen[PX_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) {
        c.start[i] = 0;
        c.step[i] = 1;
        os.sym_id[i] = 0;
    }
    ce_strides(&x->shape, c.stride);
    for (int i = 0; i < count; i++) {
        int64_t ax;
        if (ce_axis(n, axes[i], r, &ax, d) != 0) return PX_EVAL_ERROR;
        if (seen[ax]++) return px_error(d, "%s: axis %lld repeated", LABEL(n), (long long)ax);
        int64_t dim = x->shape.dims[ax], step = steps[i], b = starts[i], e = ends[i];
        if (step == 0) return px_error(d, "%s: step 0 on axis %lld", LABEL(n), (long long)ax);
        if (b < 0) b += dim;
        if (e < 0) e += dim;
        int64_t len;
        if (step > 0) {
            b = b < 0 ? 0 : (b > dim ? dim : b);
            e = e < 0 ? 0 : (e > dim ? dim : e);
            len = e > b ? (e - b - 1) / step + 1 : 0;
        } else {
            b = b < 0 ? 0 : (b > dim - 1 ? dim - 1 : b);
            e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
            int64_t mag = step < -INT64_MAX ? INT64_MAX : -step;
            len = b > e ? (b - e - 1) / mag + 1 : 0;
        }
        c.start[ax] = b;
        c.step[ax] = step;
        os.dims[ax] = len;
    }
    st = ce_alloc(x->dtype, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    copy_by_coords(x, *out, slice_index, &c);
    return PX_EVAL_OK;
}

/* ---- Concat ---- */

int px_eval_concat(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    if (n->n_inputs < 1) return PX_EVAL_NOT_FOLDABLE;
    for (int i = 0; i < n->n_inputs; i++)
        if (!data_ok(in[i]) || in[i]->dtype != in[0]->dtype) return PX_EVAL_NOT_FOLDABLE;
    int r = in[0]->shape.rank;
    if (r < 1) return px_error(d, "%s: inputs must have rank >= 1", LABEL(n));
    int64_t axis;
    if (ce_axis(n, px_attr_int(n, "axis", 0), r, &axis, d) != 0) return PX_EVAL_ERROR;
    px_shape os = in[0]->shape;
    os.dims[axis] = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const px_shape *s = &in[i]->shape;
        for (int ax = 0; ax < r && s->rank == r; ax++)
            if (ax != axis && s->dims[ax] != os.dims[ax]) goto mismatch;
        if (s->rank != r) goto mismatch;
        os.dims[axis] += s->dims[axis];
    }
    int st = ce_alloc(in[0]->dtype, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    int64_t outer = 1, inner = 1;
    for (int ax = 0; ax < axis; ax++) outer *= os.dims[ax];
    for (int ax = (int)axis + 1; ax < r; ax++) inner *= os.dims[ax];
    size_t es = px_dtype_size(in[0]->dtype);
    char *dst = (char *)(*out)->data;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n->n_inputs; i++) {
            size_t chunk = (size_t)(in[i]->shape.dims[axis] * inner) * es;
            if (chunk) memcpy(dst, (const char *)in[i]->data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
    return PX_EVAL_OK;
mismatch : {
    char s1[128], s2[128];
    for (int i = 0; i < n->n_inputs; i++) {
        const px_shape *s = &in[i]->shape;
        int bad = s->rank != r;
        for (int ax = 0; ax < r && !bad; ax++)
            bad = ax != axis && s->dims[ax] != in[0]->shape.dims[ax];
        if (bad)
            return px_error(d, "%s: input %d has shape %s, incompatible with %s on axis %lld",
                            LABEL(n), i, px_shape_str(s, s1, sizeof s1),
                            px_shape_str(&in[0]->shape, s2, sizeof s2), (long long)axis);
    }
    return PX_EVAL_ERROR;
}
}

/* ---- Unsqueeze, Squeeze, Reshape, Flatten ---- */

/* axes from the attribute (opset < 13) or input 1; returns count, -2 when absent. */
static int read_axes(const px_node *n, const px_tensor *const *in, int64_t *axes) {
    int cnt;
    const int64_t *a = px_attr_ints(n, "axes", &cnt);
    if (a) {
        if (cnt > PX_MAX_RANK) return -1;
        memcpy(axes, a, (size_t)cnt * sizeof *a);
        return cnt;
    }
    if (n->n_inputs > 1 && in[1]) return ce_read_ints(in[1], axes, PX_MAX_RANK);
    return -2;
}

int px_eval_unsqueeze(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0];
    int64_t axes[PX_MAX_RANK];
    if (!data_ok(x)) return PX_EVAL_NOT_FOLDABLE;
    int na = read_axes(n, in, axes);
    if (na < 0) return na == -2 ? px_error(d, "%s: axes missing", LABEL(n)) : PX_EVAL_NOT_FOLDABLE;
    int orank = x->shape.rank + na;
    if (orank > PX_MAX_RANK) return PX_EVAL_NOT_FOLDABLE;
    int inserted[PX_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int64_t ax;
        if (ce_axis(n, axes[i], orank, &ax, d) != 0) return PX_EVAL_ERROR;
        if (inserted[ax]++) return px_error(d, "%s: axis %lld repeated", LABEL(n), (long long)ax);
    }
    px_shape os = px_shape_make(orank, NULL);
    for (int ax = 0, k = 0; ax < orank; ax++) os.dims[ax] = inserted[ax] ? 1 : x->shape.dims[k++];
    return copy_reshaped(x, &os, out, d);
}

int px_eval_squeeze(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0];
    int64_t axes[PX_MAX_RANK];
    if (!data_ok(x)) return PX_EVAL_NOT_FOLDABLE;
    int na = read_axes(n, in, axes), r = x->shape.rank;
    if (na == -1) return PX_EVAL_NOT_FOLDABLE;
    int drop[PX_MAX_RANK] = {0};
    if (na == -2) {
        for (int ax = 0; ax < r; ax++) drop[ax] = x->shape.dims[ax] == 1;
    } else {
        for (int i = 0; i < na; i++) {
            int64_t ax;
            if (ce_axis(n, axes[i], r, &ax, d) != 0) return PX_EVAL_ERROR;
            if (x->shape.dims[ax] != 1)
                return px_error(d, "%s: cannot squeeze axis %lld of size %lld", LABEL(n),
                                (long long)ax, (long long)x->shape.dims[ax]);
            drop[ax] = 1;
        }
    }
    px_shape os = px_shape_make(0, NULL);
    for (int ax = 0; ax < r; ax++)
        if (!drop[ax]) os.dims[os.rank++] = x->shape.dims[ax];
    return copy_reshaped(x, &os, out, d);
}

int px_eval_reshape(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256], s1[128];
    const px_tensor *x = in[0];
    if (!data_ok(x)) return PX_EVAL_NOT_FOLDABLE;
    int64_t target[PX_MAX_RANK];
    int cnt;
    const int64_t *attr = px_attr_ints(n, "shape", &cnt); /* opset < 5 */
    if (attr && cnt <= PX_MAX_RANK) {
        memcpy(target, attr, (size_t)cnt * sizeof *attr);
    } else {
        if (n->n_inputs < 2 || !in[1]) return PX_EVAL_NOT_FOLDABLE;
        cnt = ce_read_ints(in[1], target, PX_MAX_RANK);
        if (cnt < 0) return PX_EVAL_NOT_FOLDABLE;
    }
    int allowzero = (int)px_attr_int(n, "allowzero", 0);
    px_shape os = px_shape_make(cnt, NULL);
    int infer_at = -1;
    int64_t known = 1;
    for (int i = 0; i < cnt; i++) {
        int64_t v = target[i];
        if (v == 0 && !allowzero) {
            if (i >= x->shape.rank)
                return px_error(d, "%s: shape entry %d is 0 but the input has rank %d", LABEL(n), i,
                                x->shape.rank);
            v = x->shape.dims[i];
        } else if (v == -1) {
            if (infer_at >= 0) return px_error(d, "%s: more than one -1 in shape", LABEL(n));
            infer_at = i;
            continue;
        } else if (v < -1) {
            return px_error(d, "%s: invalid shape entry %lld", LABEL(n), (long long)v);
        }
        os.dims[i] = v;
        if (px_mul_checked(known, v, &known) != 0) return PX_EVAL_NOT_FOLDABLE;
    }
    int64_t numel = px_tensor_numel(x);
    if (infer_at >= 0) {
        if (known == 0 || numel % known != 0) goto mismatch;
        os.dims[infer_at] = numel / known;
    } else if (known != numel) {
        goto mismatch;
    }
    return copy_reshaped(x, &os, out, d);
mismatch:
    return px_error(d, "%s: cannot reshape %s (%lld elements) to the requested shape", LABEL(n),
                    px_shape_str(&x->shape, s1, sizeof s1), (long long)numel);
}

int px_eval_flatten(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0];
    if (!data_ok(x)) return PX_EVAL_NOT_FOLDABLE;
    int r = x->shape.rank;
    int64_t axis = px_attr_int(n, "axis", 1);
    if (axis < -r || axis > r)
        return px_error(d, "%s: axis %lld out of range for rank %d", LABEL(n), (long long)axis, r);
    if (axis < 0) axis += r;
    int64_t dims[2] = {1, 1};
    for (int ax = 0; ax < r; ax++) dims[ax < axis ? 0 : 1] *= x->shape.dims[ax];
    px_shape os = px_shape_make(2, dims);
    return copy_reshaped(x, &os, out, d);
}

/* ---- Transpose ---- */

typedef struct {
    int rank;
    int64_t perm_stride[PX_MAX_RANK]; /* input stride of the axis output axis i reads */
} transpose_ctx;

static int64_t transpose_index(const int64_t *coord, const void *vctx) {
    const transpose_ctx *c = vctx;
    int64_t idx = 0;
    for (int ax = 0; ax < c->rank; ax++) idx += coord[ax] * c->perm_stride[ax];
    return idx;
}

int px_eval_transpose(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0];
    if (!data_ok(x)) return PX_EVAL_NOT_FOLDABLE;
    int r = x->shape.rank, cnt;
    int64_t perm[PX_MAX_RANK];
    const int64_t *p = px_attr_ints(n, "perm", &cnt);
    if (p) {
        if (cnt != r) return px_error(d, "%s: perm has %d entries for rank %d", LABEL(n), cnt, r);
        memcpy(perm, p, (size_t)cnt * sizeof *p);
    } else {
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    }
    int used[PX_MAX_RANK] = {0};
    int64_t stride[PX_MAX_RANK];
    ce_strides(&x->shape, stride);
    transpose_ctx c = {.rank = r};
    px_shape os = px_shape_make(r, NULL);
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r || used[perm[i]]++)
            return px_error(d, "%s: perm is not a permutation of 0..%d", LABEL(n), r - 1);
        os.dims[i] = x->shape.dims[perm[i]];
        c.perm_stride[i] = stride[perm[i]];
    }
    int st = ce_alloc(x->dtype, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    copy_by_coords(x, *out, transpose_index, &c);
    return PX_EVAL_OK;
}

/* ---- Expand, Tile ---- */

typedef struct {
    const px_shape *out, *in;
    int64_t stride[PX_MAX_RANK];
} expand_ctx;

static int64_t expand_index(const int64_t *coord, const void *vctx) {
    const expand_ctx *c = vctx;
    int off = c->out->rank - c->in->rank;
    int64_t idx = 0;
    for (int ax = 0; ax < c->in->rank; ax++)
        if (c->in->dims[ax] != 1) idx += coord[ax + off] * c->stride[ax];
    return idx;
}

int px_eval_expand(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    const px_tensor *x = in[0];
    if (!data_ok(x) || n->n_inputs < 2 || !in[1]) return PX_EVAL_NOT_FOLDABLE;
    int64_t dims[PX_MAX_RANK];
    int cnt = ce_read_ints(in[1], dims, PX_MAX_RANK);
    if (cnt < 0) return PX_EVAL_NOT_FOLDABLE;
    for (int i = 0; i < cnt; i++)
        if (dims[i] < 0) {
            char lb[256];
            return px_error(d, "%s: negative dimension %lld in shape", LABEL(n),
                            (long long)dims[i]);
        }
    px_shape target = px_shape_make(cnt, dims), os;
    const px_shape *shapes[2] = {&x->shape, &target};
    if (ce_broadcast_shape(n, 2, shapes, &os, d) != 0) return PX_EVAL_ERROR;
    int st = ce_alloc(x->dtype, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    expand_ctx c = {.out = &os, .in = &x->shape};
    ce_strides(&x->shape, c.stride);
    copy_by_coords(x, *out, expand_index, &c);
    return PX_EVAL_OK;
}

typedef struct {
    const px_shape *in;
    int64_t stride[PX_MAX_RANK];
} tile_ctx;

static int64_t tile_index(const int64_t *coord, const void *vctx) {
    const tile_ctx *c = vctx;
    int64_t idx = 0;
    for (int ax = 0; ax < c->in->rank; ax++) idx += (coord[ax] % c->in->dims[ax]) * c->stride[ax];
    return idx;
}

int px_eval_tile(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0];
    if (!data_ok(x) || n->n_inputs < 2 || !in[1]) return PX_EVAL_NOT_FOLDABLE;
    int64_t reps[PX_MAX_RANK];
    int cnt = ce_read_ints(in[1], reps, PX_MAX_RANK), r = x->shape.rank;
    if (cnt < 0) return PX_EVAL_NOT_FOLDABLE;
    if (cnt != r) return px_error(d, "%s: repeats has %d entries for rank %d", LABEL(n), cnt, r);
    px_shape os = px_shape_make(r, NULL);
    for (int ax = 0; ax < r; ax++) {
        if (reps[ax] < 0) return px_error(d, "%s: negative repeat", LABEL(n));
        if (px_mul_checked(x->shape.dims[ax], reps[ax], &os.dims[ax]) != 0)
            return PX_EVAL_NOT_FOLDABLE;
    }
    int st = ce_alloc(x->dtype, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    tile_ctx c = {.in = &x->shape};
    ce_strides(&x->shape, c.stride);
    copy_by_coords(x, *out, tile_index, &c);
    return PX_EVAL_OK;
}

/* ---- ConstantOfShape, Range ---- */

int px_eval_constant_of_shape(const px_node *n, const px_tensor *const *in, px_tensor **out,
                              px_diag *d) {
    char lb[256];
    if (n->n_inputs < 1 || !in[0]) return PX_EVAL_NOT_FOLDABLE;
    int64_t dims[PX_MAX_RANK];
    int cnt = ce_read_ints(in[0], dims, PX_MAX_RANK);
    if (cnt < 0) return PX_EVAL_NOT_FOLDABLE;
    for (int i = 0; i < cnt; i++)
        if (dims[i] < 0)
            return px_error(d, "%s: negative dimension %lld", LABEL(n), (long long)dims[i]);
    const px_tensor *value = px_attr_tensor(n, "value");
    if (value && (px_tensor_numel(value) != 1 || !data_ok(value)))
        return px_error(d, "%s: attribute value must hold exactly one element", LABEL(n));
    px_shape os = px_shape_make(cnt, dims);
    int st = ce_alloc(value ? value->dtype : PX_F32, &os, out, d);
    if (st != PX_EVAL_OK || !value) return st; /* default: float zeros */
    size_t es = px_dtype_size(value->dtype);
    int64_t numel = px_tensor_numel(*out);
    for (int64_t i = 0; i < numel; i++)
        memcpy((char *)(*out)->data + (size_t)i * es, value->data, es);
    return PX_EVAL_OK;
}

int px_eval_range(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    if (n->n_inputs != 3 || !in[0] || !in[1] || !in[2]) return PX_EVAL_NOT_FOLDABLE;
    px_dtype t = in[0]->dtype;
    if (!ce_numeric(t) || t == PX_BOOL || in[1]->dtype != t || in[2]->dtype != t)
        return PX_EVAL_NOT_FOLDABLE;
    for (int i = 0; i < 3; i++)
        if (px_tensor_numel(in[i]) != 1)
            return px_error(d, "%s: start, limit and delta must be scalars", LABEL(n));
    int64_t count;
    if (px_dtype_is_float(t)) {
        double start = ce_load_f64(in[0], 0), limit = ce_load_f64(in[1], 0);
        double delta = ce_load_f64(in[2], 0);
        if (delta == 0) return px_error(d, "%s: delta is 0", LABEL(n));
        double c = ceil((limit - start) / delta);
        if (!(c < (double)PX_CONST_EVAL_MAX_ELEMS + 1)) return PX_EVAL_NOT_FOLDABLE;
        count = c > 0 ? (int64_t)c : 0;
        int64_t dims[1] = {count};
        px_shape os = px_shape_make(1, dims);
        int st = ce_alloc(t, &os, out, d);
        if (st != PX_EVAL_OK) return st;
        for (int64_t i = 0; i < count; i++) ce_store_f64(*out, i, start + (double)i * delta);
        return PX_EVAL_OK;
    }
    int64_t start = ce_load_i64(in[0], 0), limit = ce_load_i64(in[1], 0);
    int64_t delta = ce_load_i64(in[2], 0);
    if (delta == 0) return px_error(d, "%s: delta is 0", LABEL(n));
    /* Differences in uint64 so extreme limits (INT64_MAX) do not overflow. */
    uint64_t span, step;
    if (delta > 0) {
        span = limit > start ? (uint64_t)limit - (uint64_t)start : 0;
        step = (uint64_t)delta;
    } else {
        span = start > limit ? (uint64_t)start - (uint64_t)limit : 0;
        step = (uint64_t)0 - (uint64_t)delta;
    }
    uint64_t ucount = span ? (span - 1) / step + 1 : 0;
    if (ucount > (uint64_t)PX_CONST_EVAL_MAX_ELEMS) return PX_EVAL_NOT_FOLDABLE;
    count = (int64_t)ucount;
    int64_t dims[1] = {count};
    px_shape os = px_shape_make(1, dims);
    int st = ce_alloc(t, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    for (int64_t i = 0; i < count; i++)
        ce_store_i64(*out, i, (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta));
    return PX_EVAL_OK;
}

/* ---- Trilu ---- */

int px_eval_trilu(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0];
    if (!data_ok(x)) return PX_EVAL_NOT_FOLDABLE;
    int r = x->shape.rank;
    if (r < 2) return px_error(d, "%s: input must have rank >= 2", LABEL(n));
    int64_t k = 0;
    if (n->n_inputs > 1 && in[1]) {
        if (ce_read_ints(in[1], &k, 1) != 1)
            return px_error(d, "%s: k must be a single integer", LABEL(n));
    }
    int upper = (int)px_attr_int(n, "upper", 1);
    int st = copy_reshaped(x, &x->shape, out, d);
    if (st != PX_EVAL_OK) return st;
    int64_t rows = x->shape.dims[r - 2], cols = x->shape.dims[r - 1];
    int64_t mats = (rows * cols) != 0 ? px_tensor_numel(x) / (rows * cols) : 0;
    size_t es = px_dtype_size(x->dtype);
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                /* upper keeps j - i >= k, lower keeps j - i <= k; the rest is zero */
                int keep = upper ? (j - i >= k) : (j - i <= k);
                if (!keep)
                    memset((char *)(*out)->data + (size_t)((m * rows + i) * cols + j) * es, 0, es);
            }
    return PX_EVAL_OK;
}
