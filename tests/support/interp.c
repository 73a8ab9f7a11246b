#include "interp.h"

#include "lower_view.h"
#include "px_kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px_interp_run(const px_graph *g, const px_plan *plan, px_tensor *const *inputs,
                  px_tensor ***outputs, px_diag *d) {
    int rc = -1;
    void **buf = calloc((size_t)g->n_values + 1, sizeof *buf);
    char *owned = calloc((size_t)g->n_values + 1, 1);
    px_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!buf || !owned || !outs) {
        px_error(d, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < g->n_inputs; i++) buf[g->inputs[i]->id] = inputs[i]->data;
    for (int i = 0; i < g->n_values; i++) {
        px_value *v = g->values[i];
        if (buf[i]) continue;
        if (px_value_is_const(v)) {
            buf[i] = v->data->data;
            continue;
        }
        int64_t numel = px_shape_numel(&v->shape);
        if (numel < 0) continue; /* unused or not static: a kernel touching it is a bug */
        size_t bytes = (size_t)numel * px_dtype_size(v->dtype);
        buf[i] = calloc(bytes ? bytes : 1, 1);
        owned[i] = 1;
        if (!buf[i]) {
            px_error(d, "out of memory for value '%s'", v->name);
            goto cleanup;
        }
    }
    /* Views have no call: their output is their input's buffer, as in the
     * memory plan (compiler/codegen/lower_view.h). */
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (!px_lower_is_view(n)) continue;
        int y = n->outputs[0]->id;
        if (owned[y]) free(buf[y]);
        owned[y] = 0;
        buf[y] = buf[n->inputs[0]->id];
    }
    for (int c = 0; c < plan->n_calls; c++) {
        const px_kcall *k = &plan->calls[c];
        px_kernel_fn fn = px_kernel_find(k->kernel);
        if (!fn) {
            px_error(d, "runtime has no kernel '%s' (node '%s')", k->kernel, k->node->name);
            goto cleanup;
        }
        void *args[PX_KCALL_MAX_BUFS];
        for (int b = 0; b < k->n_bufs; b++) args[b] = k->bufs[b] ? buf[k->bufs[b]->id] : NULL;
        fn(args, k->params);
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const px_value *v = g->outputs[i];
        outs[i] = px_tensor_new(v->dtype, &v->shape, d);
        if (!outs[i]) goto cleanup;
        if (outs[i]->nbytes) memcpy(outs[i]->data, buf[v->id], outs[i]->nbytes);
    }
    *outputs = outs;
    outs = NULL;
    rc = 0;
cleanup:
    if (outs) {
        for (int i = 0; i < g->n_outputs; i++) px_tensor_free(outs[i]);
        free(outs);
    }
    if (buf)
        for (int i = 0; i < g->n_values; i++)
            if (owned[i]) free(buf[i]);
    free(buf);
    free(owned);
    return rc;
}

int px_tensors_close(const px_tensor *out, const px_tensor *ref, double atol, double rtol,
                     char *msg, size_t cap) {
    char s1[128], s2[128];
    if (out->dtype != ref->dtype) {
        snprintf(msg, cap, "dtype %s, expected %s", px_dtype_name(out->dtype),
                 px_dtype_name(ref->dtype));
        return 0;
    }
    if (!px_shape_equal(&out->shape, &ref->shape)) {
        snprintf(msg, cap, "shape %s, expected %s", px_shape_str(&out->shape, s1, sizeof s1),
                 px_shape_str(&ref->shape, s2, sizeof s2));
        return 0;
    }
    int64_t n = px_tensor_numel(ref);
    int is_float = px_dtype_is_float(ref->dtype);
    if (ref->dtype == PX_STRING) {
        if (px_tensor_equal(out, ref)) return 1;
        snprintf(msg, cap, "string contents differ");
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        if (is_float) {
            double a = px_tensor_get_f64(out, i), b = px_tensor_get_f64(ref, i);
            if (isnan(a) && isnan(b)) continue;
            if (isinf(b) && a == b) continue;
            if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
                snprintf(msg, cap, "element %lld: %.9g, expected %.9g", (long long)i, a, b);
                return 0;
            }
        } else {
            size_t es = px_dtype_size(ref->dtype);
            if (memcmp((char *)out->data + i * es, (char *)ref->data + i * es, es)) {
                snprintf(msg, cap, "element %lld: %lld, expected %lld", (long long)i,
                         (long long)px_tensor_get_i64(out, i),
                         (long long)px_tensor_get_i64(ref, i));
                return 0;
            }
        }
    }
    return 1;
}
