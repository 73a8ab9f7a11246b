#include "emit.h"
#include "fuse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int px_compile_graph(const px_graph *g, const px_codegen_opts *o, const char *out_path,
                     px_diag *d) {
    px_plan plan = {0};
    px_memplan mp = {0};
    int rc = -1, have_obj = 0;
    char obj[] = "/tmp/parallaxc-XXXXXX.o";
    if (px_plan_build(g, &plan, d)) goto cleanup;
    if (!o->no_fusion && px_fuse_plan(g, &plan, d) < 0) goto cleanup;
    if (px_memplan_build(g, &plan, &mp, d)) goto cleanup;
    int fd = mkstemps(obj, 2);
    if (fd < 0) {
        px_error(d, "cannot create a temporary object file: %s", strerror(errno));
        goto cleanup;
    }
    close(fd);
    have_obj = 1;
    if (px_emit_object(g, &plan, &mp, o, obj, d)) goto cleanup;
    if (px_link_program(obj, out_path, d)) goto cleanup;
    rc = 0;
cleanup:
    if (have_obj) unlink(obj);
    px_memplan_free(&mp);
    px_plan_free(&plan);
    return rc;
}

int px_memory_plan_report(const px_graph *g, px_memory_report *r, px_diag *d) {
    px_plan plan = {0};
    px_memplan mp = {0};
    int rc = -1;
    memset(r, 0, sizeof *r);
    if (px_plan_build(g, &plan, d) || px_fuse_plan(g, &plan, d) < 0 ||
        px_memplan_build(g, &plan, &mp, d))
        goto cleanup;
    r->arena_bytes = mp.arena_bytes;
    r->n_stages = mp.n_stages;
    r->stage_arena_bytes = mp.stage_bytes; /* now the report's */
    mp.stage_bytes = NULL;
    r->unplanned_bytes = mp.naive_bytes;
    r->constant_bytes = 0;
    for (int i = 0; i < g->n_values; i++)
        if (px_value_is_const(g->values[i]))
            r->constant_bytes += (int64_t)g->values[i]->data->nbytes;
    rc = 0;
cleanup:
    px_memplan_free(&mp);
    px_plan_free(&plan);
    return rc;
}

void px_memory_report_free(px_memory_report *r) {
    free(r->stage_arena_bytes);
    r->stage_arena_bytes = NULL;
    r->n_stages = 0;
}
