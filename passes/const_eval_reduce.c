/* Constant evaluation of small reductions: ReduceSum, ReduceProd,
 * ReduceMax, ReduceMin, ReduceMean. axes come from the attribute (older
 * opsets) or input 1 (ReduceSum from opset 13, the others from 18). */
#include "const_eval_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int px_eval_reduce(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    char lb[256];
    const px_tensor *x = in[0];
    if (n->n_inputs < 1 || !x || !ce_numeric(x->dtype) || x->dtype == PX_BOOL)
        return PX_EVAL_NOT_FOLDABLE;
    int r = x->shape.rank, na = 0;
    int64_t axes[PX_MAX_RANK];
    const int64_t *attr = px_attr_ints(n, "axes", &na);
    if (attr) {
        if (na > PX_MAX_RANK) return PX_EVAL_NOT_FOLDABLE;
        memcpy(axes, attr, (size_t)na * sizeof *attr);
    } else if (n->n_inputs > 1 && in[1]) {
        na = ce_read_ints(in[1], axes, PX_MAX_RANK);
        if (na < 0) return PX_EVAL_NOT_FOLDABLE;
    } else {
        na = 0;
    }
    int keepdims = (int)px_attr_int(n, "keepdims", 1);
    int reduced[PX_MAX_RANK] = {0};
    if (na == 0) {
        if (px_attr_int(n, "noop_with_empty_axes", 0)) {
            *out = px_tensor_clone(x, d);
            return *out ? PX_EVAL_OK : PX_EVAL_ERROR;
        }
        for (int ax = 0; ax < r; ax++) reduced[ax] = 1;
    }
    for (int i = 0; i < na; i++) {
        int64_t ax;
        if (ce_axis(n, axes[i], r, &ax, d) != 0) return PX_EVAL_ERROR;
        reduced[ax] = 1;
    }
    px_shape os = px_shape_make(0, NULL);
    int64_t group = 1; /* input elements per output element */
    for (int ax = 0; ax < r; ax++) {
        if (!reduced[ax])
            os.dims[os.rank++] = x->shape.dims[ax];
        else {
            group *= x->shape.dims[ax];
            if (keepdims) os.dims[os.rank++] = 1;
        }
    }
    px_op op = n->op;
    if (group == 0 && (op == PX_OP_ReduceMax || op == PX_OP_ReduceMin || op == PX_OP_ReduceMean))
        return PX_EVAL_NOT_FOLDABLE; /* empty max/min/mean: left to the runtime's convention */
    int st = ce_alloc(x->dtype, &os, out, d);
    if (st != PX_EVAL_OK) return st;
    int64_t onumel = px_tensor_numel(*out), inumel = px_tensor_numel(x);
    int is_float = px_dtype_is_float(x->dtype);
    double *facc = calloc((size_t)(onumel ? onumel : 1), sizeof *facc);
    int64_t *iacc = calloc((size_t)(onumel ? onumel : 1), sizeof *iacc);
    char *seen = calloc((size_t)(onumel ? onumel : 1), 1);
    if (!facc || !iacc || !seen) {
        free(facc), free(iacc), free(seen);
        return px_error(d, "%s: out of memory", ce_label(n, lb, sizeof lb));
    }
    int64_t coord[PX_MAX_RANK] = {0};
    for (int64_t e = 0; e < inumel; e++) {
        int64_t o = 0; /* output flat index: row-major over the kept axes */
        for (int ax = 0; ax < r; ax++)
            if (!reduced[ax]) o = o * x->shape.dims[ax] + coord[ax];
        if (is_float) {
            double v = ce_load_f64(x, e), *a = &facc[o];
            if (!seen[o])
                *a = (op == PX_OP_ReduceProd)                           ? 1.0
                     : (op == PX_OP_ReduceMax || op == PX_OP_ReduceMin) ? v
                                                                        : 0.0;
            switch (op) {
            case PX_OP_ReduceProd: *a *= v; break;
            case PX_OP_ReduceMax: *a = (isnan(v) || isnan(*a)) ? NAN : (v > *a ? v : *a); break;
            case PX_OP_ReduceMin: *a = (isnan(v) || isnan(*a)) ? NAN : (v < *a ? v : *a); break;
            default: *a += v; break;
            }
        } else {
            int64_t v = ce_load_i64(x, e), *a = &iacc[o];
            if (!seen[o])
                *a = (op == PX_OP_ReduceProd)                           ? 1
                     : (op == PX_OP_ReduceMax || op == PX_OP_ReduceMin) ? v
                                                                        : 0;
            switch (op) {
            case PX_OP_ReduceProd: *a = (int64_t)((uint64_t)*a * (uint64_t)v); break;
            case PX_OP_ReduceMax: *a = v > *a ? v : *a; break;
            case PX_OP_ReduceMin: *a = v < *a ? v : *a; break;
            default: *a = (int64_t)((uint64_t)*a + (uint64_t)v); break;
            }
        }
        seen[o] = 1;
        for (int ax = r - 1; ax >= 0; ax--) {
            if (++coord[ax] < x->shape.dims[ax]) break;
            coord[ax] = 0;
        }
    }
    for (int64_t o = 0; o < onumel; o++) {
        if (is_float) {
            double v = seen[o] ? facc[o] : (op == PX_OP_ReduceProd ? 1.0 : 0.0);
            if (op == PX_OP_ReduceMean) v /= (double)group;
            ce_store_f64(*out, o, v);
        } else {
            int64_t v = seen[o] ? iacc[o] : (op == PX_OP_ReduceProd ? 1 : 0);
            if (op == PX_OP_ReduceMean) v /= group; /* ONNX integer mean truncates */
            ce_store_i64(*out, o, v);
        }
    }
    free(facc), free(iacc), free(seen);
    return PX_EVAL_OK;
}
