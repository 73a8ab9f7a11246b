/* Test support: the ONNX backend test suite shipped by libonnx-testdata. */
#ifndef PX_TEST_TESTDATA_H
#define PX_TEST_TESTDATA_H

#include "graph.h"

/* Calls fn(dir, name, ctx) for every test folder (one holding model.onnx)
 * under root/{node,pytorch-converted,pytorch-operator,simple}, sorted by
 * name. Returns the number of folders visited. */
int px_testdata_walk(const char *root, void (*fn)(const char *dir, const char *name, void *ctx),
                     void *ctx);

/* Loads test_data_set_<set>/<prefix>_K.pb for K = 0.. into a new array;
 * *count gets the number found. NULL with *count 0 if the set is missing. */
px_tensor **px_testdata_load_set(const char *dir, int set, const char *prefix, int *count,
                                 px_diag *d);
void px_tensors_free(px_tensor **ts, int count);

/* An allowlist file: one test name per line, '#' starts a reason/comment. */
typedef struct px_allowlist {
    int n;
    char **names;
} px_allowlist;
int px_allowlist_load(const char *path, px_allowlist *al);
int px_allowlist_has(const px_allowlist *al, const char *name);
void px_allowlist_free(px_allowlist *al);

#endif
