/* Which constants a program reads from its ONNX model at start instead of
 * embedding them: the initializers the generated code uses that the model
 * file holds with the same dtype and shape. Float initializers (weights,
 * trained or frozen), every trained variable, and integer initializers over
 * EMBED_MAX bytes qualify; small integer initializers stay embedded, as the
 * folded constants do, because folding reads their values (passes/fold.c),
 * so the code depends on them. */
#include "emit_weights.h"

#include "train.h"
#include "weights_source.h"

#include <stdlib.h>

#define EMBED_MAX (64 * 1024)

/* s: v's shape in the model (a variable stored split by --tp: the whole
 * variable's, not its slab's). */
static int loadable(const px_codegen_opts *o, const px_value *v, const px_shape *s) {
    if (!o->weights_src || v->kind != PX_VALUE_INITIALIZER || !v->data || v->dtype == PX_STRING)
        return 0;
    if (!(px_dtype_is_float(v->dtype) || v->is_variable || v->data->nbytes > EMBED_MAX)) return 0;
    const px_wire_tensor *t = px_wsrc_find(o->weights_src, v->name);
    if (!t || t->dtype != (int32_t)v->dtype || t->rank != s->rank) return 0;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] != s->dims[i]) return 0;
    return 1;
}

static void consider(const px_codegen_opts *o, const px_value *v, const px_shape *s,
                     px_weight_choice *c) {
    if (!v || c->weight_of[v->id] != -1) return;
    if (!loadable(o, v, s ? s : &v->shape)) {
        c->weight_of[v->id] = -2; /* decided: not a weight */
        return;
    }
    c->weight_of[v->id] = c->n_weights;
    c->weights[c->n_weights++] = v;
}

int px_choose_weights(const px_graph *g, const px_plan *plan, const px_codegen_opts *o,
                      px_weight_choice *c, px_diag *d) {
    c->n_weights = 0;
    c->weight_of = malloc(sizeof *c->weight_of * ((size_t)g->n_values + 1));
    c->weights = calloc((size_t)g->n_values + 1, sizeof *c->weights);
    if (!c->weight_of || !c->weights) {
        px_weight_choice_free(c);
        return px_error(d, "out of memory choosing the weights to load");
    }
    for (int i = 0; i < g->n_values; i++) c->weight_of[i] = -1;
    /* Graph order first (variables in the training plan's order, then what
     * the calls use), so the weights table reads like the model. */
    for (int i = 0; o->train && i < o->train->n_vars; i++) {
        const px_train_var *tv = &o->train->vars[i];
        consider(o, tv->value, px_tp_stored(tv) ? &tv->tp_full : NULL, c);
    }
    for (int k = 0; k < plan->n_calls; k++)
        for (int i = 0; i < plan->calls[k].n_bufs; i++)
            consider(o, plan->calls[k].bufs[i], NULL, c);
    for (int i = 0; i < g->n_inputs; i++) consider(o, g->inputs[i], NULL, c);
    for (int i = 0; i < g->n_outputs; i++) consider(o, g->outputs[i], NULL, c);
    for (int i = 0; i < g->n_values; i++)
        if (c->weight_of[i] < -1) c->weight_of[i] = -1;
    return 0;
}

void px_weight_choice_free(px_weight_choice *c) {
    free(c->weight_of);
    free(c->weights);
    c->weight_of = NULL;
    c->weights = NULL;
    c->n_weights = 0;
}
