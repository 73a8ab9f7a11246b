/* Which nodes are views of their input (see lower_view.h). */
#include "lower_view.h"

#include "lower.h"

/* A Transpose keeps the byte order when the axes longer than 1 stay in
 * their order. */
static int transpose_keeps_layout(const px_node *n, const px_value *x) {
    int r = x->shape.rank, count = 0;
    const int64_t *perm = px_node_attr(n, "perm") ? px_attr_ints(n, "perm", &count) : NULL;
    if (perm && count != r) return 0;
    int64_t prev = -1;
    for (int i = 0; i < r; i++) {
        int64_t a = perm ? perm[i] : r - 1 - i;
        if (a < 0 || a >= r) return 0;
        if (x->shape.dims[a] == 1) continue;
        if (a < prev) return 0;
        prev = a;
    }
    return 1;
}

static int in_arena(const px_value *v) {
    return v->kind == PX_VALUE_INTERMEDIATE || v->kind == PX_VALUE_INPUT;
}

int px_lower_is_view(const px_node *n) {
    if (n->dead || n->n_inputs < 1 || n->n_outputs < 1) return 0;
    switch (n->op) {
    case PX_OP_Reshape:
    case PX_OP_Squeeze:
    case PX_OP_Unsqueeze:
    case PX_OP_Flatten:
    case PX_OP_Identity:
    case PX_OP_Transpose: break;
    default: return 0;
    }
    const px_value *x = px_lower_in(n, 0), *y = px_lower_out(n, 0);
    for (int i = 1; i < n->n_outputs; i++)
        if (n->outputs[i]) return 0;
    if (!x || !y || !in_arena(x) || y->kind != PX_VALUE_INTERMEDIATE || y->is_output ||
        x->dtype != y->dtype || x->dtype == PX_STRING)
        return 0;
    int64_t nx = px_shape_numel(&x->shape), ny = px_shape_numel(&y->shape);
    if (nx < 0 || nx != ny) return 0;
    return n->op != PX_OP_Transpose || transpose_keeps_layout(n, x);
}
