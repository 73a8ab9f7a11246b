#include "lower.h"

#include "fuse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ops.def's lower column, as px_lower_<lower> (lower.h). */
static const px_lower_fn lowerings[PX_OP_COUNT] = {
#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    [PX_OP_##name] = PX_OP_RULE_REF(px_lower_, lower),
#include "ops.def"
#undef OP
};

px_lower_fn px_lowering_for(px_op op) {
    return ((int)op > PX_OP_UNKNOWN && op < PX_OP_COUNT) ? lowerings[op] : NULL;
}

/* arr (n used of *cap elements of size es) cut down to n elements; as it was
 * where the shrinking realloc fails. */
static void *fit(void *arr, int n, int *cap, size_t es) {
    if (n == *cap) return arr;
    if (n == 0) {
        free(arr);
        *cap = 0;
        return NULL;
    }
    void *p = realloc(arr, (size_t)n * es);
    if (!p) return arr;
    *cap = n;
    return p;
}

int px_lower_node(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    char buf[256];
    memset(k, 0, sizeof *k);
    k->node = n;
    px_lower_fn fn = px_lowering_for(n->op);
    if (!fn)
        return px_error(d, "node %s: the code generator does not support op %s%s%s",
                        px_node_label(n, buf, sizeof buf), n->domain[0] ? n->domain : "",
                        n->domain[0] ? "::" : "", n->op_type);
    if (fn(g, n, k, d)) {
        px_kcall_free(k);
        return -1;
    }
    if (!k->kernel || !k->kernel[0]) {
        px_kcall_free(k);
        return px_error(d, "node %s: lowering chose no kernel", px_node_label(n, buf, sizeof buf));
    }
    /* The plan keeps every call until the program is written: drop the room
     * the lowering did not use. */
    k->params = fit(k->params, k->n_params, &k->cap_params, sizeof *k->params);
    k->bufs = fit(k->bufs, k->n_bufs, &k->cap_bufs, sizeof *k->bufs);
    return 0;
}

/* Makes room for one more element in *arr (n used of *cap, elements of size
 * es, first capacity `first`). Aborts the process on allocation failure,
 * which the lowering treats as unrecoverable. */
static void *room_for_one(void *arr, int n, int *cap, size_t es, int first) {
    if (n < *cap) return arr;
    int c = *cap ? *cap * 2 : first;
    void *p = realloc(arr, (size_t)c * es);
    if (!p) {
        fprintf(stderr, "parallaxc: out of memory\n");
        abort();
    }
    *cap = c;
    return p;
}

static void push(px_kcall *k, int64_t v) {
    k->params = room_for_one(k->params, k->n_params, &k->cap_params, sizeof *k->params, 32);
    k->params[k->n_params++] = v;
}

void px_kc_i64(px_kcall *k, int64_t v) {
    push(k, v);
}

void px_kc_f64(px_kcall *k, double v) {
    int64_t bits;
    memcpy(&bits, &v, sizeof bits);
    push(k, bits);
}

void px_kc_shape(px_kcall *k, int dtype, const px_shape *s) {
    push(k, dtype);
    push(k, s->rank);
    for (int i = 0; i < s->rank; i++) push(k, s->dims[i]);
}

void px_kc_tensor(px_kcall *k, const px_value *v) {
    px_kc_shape(k, (int)v->dtype, &v->shape);
}

void px_kc_ints(px_kcall *k, int n, const int64_t *v) {
    for (int i = 0; i < n; i++) push(k, v[i]);
}

int px_kc_buf(px_kcall *k, const px_value *v) {
    if (k->n_bufs >= PX_KCALL_MAX_BUFS) {
        fprintf(stderr, "parallaxc: internal error: too many buffers for kernel %s\n",
                k->kernel ? k->kernel : "(none)");
        abort();
    }
    k->bufs = room_for_one(k->bufs, k->n_bufs, &k->cap_bufs, sizeof *k->bufs, 4);
    k->bufs[k->n_bufs] = v;
    return k->n_bufs++;
}

void px_kc_set_kernel(px_kcall *k, const char *name) {
    k->kernel = px_intern(name); /* NULL when out of memory: "chose no kernel" */
}

void px_kcall_free(px_kcall *k) {
    free(k->fusion);
    k->fusion = NULL;
    free(k->bufs);
    k->bufs = NULL;
    k->n_bufs = k->cap_bufs = 0;
    free(k->params);
    k->params = NULL;
    k->n_params = k->cap_params = 0;
}

int px_lower_error(px_diag *d, const px_node *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = px_node_verror(d, n, "node ", fmt, ap);
    va_end(ap);
    return rc;
}

const px_value *px_lower_in(const px_node *n, int i) {
    return (i >= 0 && i < n->n_inputs) ? n->inputs[i] : NULL;
}

const px_value *px_lower_out(const px_node *n, int i) {
    return (i >= 0 && i < n->n_outputs) ? n->outputs[i] : NULL;
}

int px_lower_need_f32(const px_node *n, const char *why, px_diag *d) {
    const px_value *x = px_lower_in(n, 0), *y = px_lower_out(n, 0);
    if (!x || !y) return px_lower_error(d, n, "needs one input and one output");
    if (x->dtype != PX_F32 || y->dtype != PX_F32)
        return px_lower_error(d, n, "'%s' is %s: %s", x->name, px_dtype_name(x->dtype), why);
    return 0;
}

int px_lower_f32_in_out(const px_node *n, px_kcall *k, const char *kernel, const char *why,
                        px_diag *d) {
    if (px_lower_need_f32(n, why, d)) return -1;
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, px_lower_in(n, 0));
    px_kc_buf(k, px_lower_out(n, 0));
    px_kc_i64(k, px_shape_numel(&px_lower_in(n, 0)->shape));
    return 0;
}

int64_t px_lower_opset(const px_graph *g) {
    while (g->parent) g = g->parent;
    int64_t v = px_graph_opset(g, "");
    return v > 0 ? v : 19;
}
