/* A standalone TensorProto file -> px_tensor (backend test data). */
#include "onnx_import_internal.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *read_all(const char *path, size_t *len, px_diag *d) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        px_error(d, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                px_error(d, "out of memory reading '%s'", path);
                return NULL;
            }
            buf = nb;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        px_error(d, "error reading '%s'", path);
        return NULL;
    }
    *len = n;
    return buf;
}

px_tensor *px_onnx_load_tensor_file(const char *path, char **name_out, px_diag *d) {
    size_t len = 0;
    px_tensor *t = NULL;
    char *dir = NULL;
    Onnx__TensorProto *tp = NULL;
    unsigned char *buf = read_all(path, &len, d);
    if (!buf) return NULL;
    tp = onnx__tensor_proto__unpack(NULL, len, buf);
    if (!tp) {
        px_error(d, "'%s' is not a serialized ONNX TensorProto", path);
        goto cleanup;
    }
    dir = strdup(path);
    if (!dir) goto cleanup;
    px_import_ctx c = {path, dirname(dir), 0, d};
    t = pxi_tensor_from_proto(&c, tp, path);
    if (t && name_out) *name_out = pxi_strdup(tp->name);
cleanup:
    if (tp) onnx__tensor_proto__free_unpacked(tp, NULL);
    free(buf);
    free(dir);
    return t;
}
