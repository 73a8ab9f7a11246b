/* Imports every model of the ONNX backend test data (node, pytorch-converted,
 * pytorch-operator, simple). Each must either import and pass shape
 * inference, or be refused with the unsupported-operator error. Anything
 * else is listed, and the test fails after listing all of them. */
#include "graph.h"
#include "onnx_io.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const suites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};

typedef struct walk_counts {
    int walked, inferred, unsupported, failed;
} walk_counts;

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Prints the diag text indented, at most a few lines of it. */
static void print_failure(const char *model, const char *stage, const px_diag *d) {
    fprintf(stderr, "FAIL %s (%s):\n", model, stage);
    const char *p = d->text;
    for (int line = 0; line < 6 && *p; line++) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(stderr, "    %.*s\n", n, p);
        p = nl ? nl + 1 : p + n;
    }
}

static void walk_model(const char *path, const char *shown, walk_counts *c) {
    px_diag d;
    px_diag_init(&d);
    c->walked++;
    px_graph *g = px_onnx_load_file(path, NULL, &d);
    if (!g) {
        if (strncmp(d.text, "error: unsupported operator", 27) == 0) {
            c->unsupported++;
            return;
        }
        c->failed++;
        print_failure(shown, "import", &d);
        return;
    }
    if (px_infer_shapes(g, &d) != 0) {
        c->failed++;
        print_failure(shown, "shape inference", &d);
    } else {
        c->inferred++;
    }
    px_graph_free(g);
}

static void walk_suite(const char *suite, walk_counts *c) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", PX_TESTDATA_DIR, suite);
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "test data folder %s is missing (install libonnx-testdata)", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            names = realloc(names, cap * sizeof *names);
            cr_assert_not_null(names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(dp);
    qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[2048], shown[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[i]);
        snprintf(shown, sizeof shown, "%s/%s", suite, names[i]);
        if (stat(path, &st) == 0) walk_model(path, shown, c);
        free(names[i]);
    }
    free(names);
}

Test(testdata, every_model_imports_or_is_unsupported, .timeout = 600) {
    walk_counts c = {0, 0, 0, 0};
    for (size_t s = 0; s < sizeof suites / sizeof *suites; s++) walk_suite(suites[s], &c);
    fprintf(stderr, "walked %d models: %d imported+inferred, %d unsupported, %d failed\n", c.walked,
            c.inferred, c.unsupported, c.failed);
    cr_assert_gt(c.walked, 1000, "expected the full backend test data, found %d models", c.walked);
    cr_assert_gt(c.inferred, c.walked / 2, "most models should import");
    cr_assert_eq(c.failed, 0, "%d of %d models failed (listed above)", c.failed, c.walked);
}
