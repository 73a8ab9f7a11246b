/* Shape functions of the ai.parallax segment reductions:
 *
 * SegmentReduce(data [N, row...], starts int [>= M], ends int [M]) attr mode
 *   ("sum" | "mean" | "max") -> [M, row...]: output m reduces the rows
 *   data[starts[m] : ends[m]] (Slice semantics: negative bounds count from
 *   N, bounds clamp to [0, N]; an empty segment gives zeros, as PyTorch's
 *   EmbeddingBag does). M is the length of ends.
 * SegmentReduceGrad(dY [M, row...], data, starts, ends) attr mode -> dData
 *   like data. */
#include "segment_reduce.h"
#include "shape_util.h"

#include <string.h>

/* PyTorch's EmbeddingBag mode numbers. */
int px_segment_mode(const px_node *n) {
    const char *m = px_attr_string(n, "mode", "");
    if (strcmp(m, "sum") == 0) return 0;
    if (strcmp(m, "mean") == 0) return 1;
    if (strcmp(m, "max") == 0) return 2;
    return -1;
}

static int check_bounds(const px_node *n, px_diag *d, const px_value *starts,
                        const px_value *ends) {
    if (px_su_want_int(n, d, starts, "starts") || px_su_want_int(n, d, ends, "ends")) return -1;
    if (starts->shape.rank >= 0 && starts->shape.rank != 1)
        return px_su_error(d, n, "starts '%s' must be 1-D, has rank %d", starts->name,
                           starts->shape.rank);
    if (ends->shape.rank >= 0 && ends->shape.rank != 1)
        return px_su_error(d, n, "ends '%s' must be 1-D, has rank %d", ends->name,
                           ends->shape.rank);
    int64_t ns = px_su_len1d(starts), ne = px_su_len1d(ends);
    if (ns >= 0 && ne >= 0 && ns < ne)
        return px_su_error(d, n, "starts '%s' has %lld entries, fewer than the %lld segments",
                           starts->name, (long long)ns, (long long)ne);
    return 0;
}

int px_shape_segment_reduce(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    int grad = n->op == PX_OP_SegmentReduceGrad;
    int base = grad ? 1 : 0;
    px_value *data, *starts, *ends, *dy = NULL;
    if (px_su_arity(n, 3 + base, 3 + base, d) || (grad && px_su_need(n, 0, "dY", d, &dy)) ||
        px_su_need(n, base, "data", d, &data) || px_su_need(n, base + 1, "starts", d, &starts) ||
        px_su_need(n, base + 2, "ends", d, &ends))
        return -1;
    if (px_segment_mode(n) < 0)
        return px_su_error(d, n,
                           "needs the attribute mode = \"sum\", \"mean\" or \"max\", got '%s'",
                           px_attr_string(n, "mode", ""));
    if (px_su_want_float(n, d, data, "data") || check_bounds(n, d, starts, ends)) return -1;
    if (data->shape.rank == 0)
        return px_su_error(d, n, "data '%s' is a scalar; it needs a leading dim of rows",
                           data->name);
    if (grad) {
        if (px_su_same_dtype(n, d, dy, data)) return -1;
        return px_su_set(n, 0, data->dtype, &data->shape, d);
    }
    if (data->shape.rank < 0) return px_su_set(n, 0, data->dtype, &data->shape, d);
    px_shape s = data->shape;
    if (ends->shape.rank == 1)
        px_su_copy_dim(&s, 0, &ends->shape, 0);
    else {
        s.dims[0] = -1;
        s.sym_id[0] = 0;
    }
    return px_su_set(n, 0, data->dtype, &s, d);
}
