/* ONNX backend tests run in-process: import, fold, lower, run the runtime
 * kernels, compare with the reference outputs. This checks kernels and
 * lowerings quickly; tests/conformance/run.sh checks the same suite through
 * the shipped `parallaxc compile` command line. Tests whose ops the code
 * generator does not support are counted, not failed; every failure outside
 * tests/conformance/allowlist.txt fails the test. */
#include "interp.h"
#include "onnx_io.h"
#include "passes.h"
#include "shape_infer.h"
#include "testdata.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct results {
    int passed, failed, allowed, unsupported, unexpected_pass;
    px_allowlist allow;
    FILE *report;
} results;

static int run_one(const char *dir, char *why, size_t cap) {
    char model[4200];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    px_diag *d = malloc(sizeof *d);
    px_diag_init(d);
    px_import_opts io = {0};
    px_plan plan = {0};
    px_tensor **ins = NULL, **refs = NULL, **outs = NULL;
    int n_in = 0, n_ref = 0, status = 2; /* 0 pass, 1 fail, 2 unsupported */
    px_graph *g = px_onnx_load_file(model, &io, d);
    if (!g) {
        snprintf(why, cap, "import: %.200s", d->text);
        goto cleanup;
    }
    px_bindings b = {0};
    if (px_pipeline_fold(g, &b, d)) {
        snprintf(why, cap, "fold: %.300s", d->text);
        /* A form of an op the compiler refuses by name (e.g. Einsum with an
         * ellipsis) is unsupported, as tests/conformance/run.py counts it. */
        status = strstr(d->text, "does not support") ? 2 : 1;
        goto cleanup;
    }
    if (px_plan_build(g, &plan, d)) {
        snprintf(why, cap, "lower: %.200s", d->text);
        goto cleanup;
    }
    status = 1;
    ins = px_testdata_load_set(dir, 0, "input", &n_in, d);
    refs = px_testdata_load_set(dir, 0, "output", &n_ref, d);
    if (px_diag_failed(d) || n_in != g->n_inputs || n_ref != g->n_outputs) {
        snprintf(why, cap, "test data: %d inputs for %d graph inputs, %d outputs for %d: %.200s",
                 n_in, g->n_inputs, n_ref, g->n_outputs, d->text);
        goto cleanup;
    }
    if (px_interp_run(g, &plan, ins, &outs, d)) {
        snprintf(why, cap, "run: %.200s", d->text);
        goto cleanup;
    }
    status = 0;
    for (int i = 0; i < n_ref; i++) {
        char msg[256];
        if (!px_tensors_close(outs[i], refs[i], 1e-7, 1e-3, msg, sizeof msg)) {
            snprintf(why, cap, "output %d ('%s'): %s", i, g->outputs[i]->name, msg);
            status = 1;
            break;
        }
    }
cleanup:
    if (outs) px_tensors_free(outs, g->n_outputs);
    px_tensors_free(ins, n_in);
    px_tensors_free(refs, n_ref);
    px_plan_free(&plan);
    px_graph_free(g);
    free(d);
    return status;
}

/* PX_CONFORMANCE_ONLY=a,b,c restricts the run to tests whose name contains
 * one of the comma-separated substrings (for working on one op family). */
static int selected(const char *name) {
    const char *only = getenv("PX_CONFORMANCE_ONLY");
    if (!only || !*only) return 1;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", only);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (strstr(name, tok)) return 1;
    return 0;
}

static void visit(const char *dir, const char *name, void *ctx) {
    results *r = ctx;
    if (!selected(name)) return;
    char why[1024] = "";
    int status = run_one(dir, why, sizeof why);
    int allowed = px_allowlist_has(&r->allow, name);
    if (r->report)
        fprintf(r->report, "%s\t%s\t%s\n", name,
                status == 0   ? "pass"
                : status == 1 ? "FAIL"
                              : "unsupported",
                why);
    if (status == 2)
        r->unsupported++;
    else if (status == 0) {
        r->passed++;
        if (allowed) r->unexpected_pass++;
    } else if (allowed)
        r->allowed++;
    else {
        r->failed++;
        for (char *p = why; *p; p++)
            if (*p == '\n') *p = ' ';
        printf("FAIL %s: %s\n", name, why);
    }
}

Test(conformance, backend_tests_inproc, .timeout = 600) {
    results r = {0};
    px_allowlist_load(PX_SOURCE_DIR "/tests/conformance/allowlist.txt", &r.allow);
    const char *rep = getenv("PX_CONFORMANCE_REPORT");
    if (rep) r.report = fopen(rep, "w");
    int n = px_testdata_walk(PX_TESTDATA_DIR, visit, &r);
    if (r.report) fclose(r.report);
    printf("in-process conformance: %d tests: %d passed, %d failed, %d allowlisted failures, "
           "%d unsupported\n",
           n, r.passed, r.failed, r.allowed, r.unsupported);
    if (r.unexpected_pass) printf("note: %d allowlisted tests now pass\n", r.unexpected_pass);
    px_allowlist_free(&r.allow);
    cr_assert_gt(n, getenv("PX_CONFORMANCE_ONLY") ? 0 : 1000,
                 "the backend test suite was not found under %s", PX_TESTDATA_DIR);
    cr_assert_eq(r.failed, 0, "%d backend tests failed", r.failed);
}
