#include "plan.h"

#include "lower_matmul_fold.h"
#include "lower_view.h"

#include <stdlib.h>

int px_plan_build(const px_graph *g, px_plan *plan, px_diag *d) {
    plan->n_calls = 0;
    plan->calls = calloc((size_t)g->n_nodes + 1, sizeof *plan->calls);
    if (!plan->calls) return px_error(d, "out of memory planning graph '%s'", g->name);
    int failed = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        /* absorbed: computed inside its reader's GEMM; a view: no work, the
         * memory plan gives the output the input's buffer */
        if (n->dead || px_lmm_absorbed(n) || px_lower_is_view(n)) continue;
        if (px_lower_node(g, n, &plan->calls[plan->n_calls], d)) {
            failed++;
            continue;
        }
        plan->n_calls++;
    }
    if (failed) {
        px_plan_free(plan);
        return -1;
    }
    return 0;
}

void px_plan_free(px_plan *plan) {
    for (int i = 0; i < plan->n_calls; i++) px_kcall_free(&plan->calls[i]);
    free(plan->calls);
    plan->calls = NULL;
    plan->n_calls = 0;
}
