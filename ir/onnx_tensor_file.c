/* A standalone TensorProto file -> px_tensor (backend test data). */
#include "onnx_import_internal.h"
#include "file_read.h"
#include "pb_scan.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

px_tensor *px_onnx_load_tensor_file(const char *path, char **name_out, px_diag *d) {
    size_t len = 0;
    px_tensor *t = NULL;
    char *dir = NULL;
    Onnx__TensorProto *tp = NULL;
    unsigned char *buf = px_read_regular_file(path, "tensor file", &len, d);
    if (!buf) return NULL;
    px_pb_scan_result scan;
    if (px_pb_scan(&onnx__tensor_proto__descriptor, buf, len, PX_PB_MAX_DEPTH, &scan)) {
        px_error(d, "'%s' is not a valid TensorProto: %s", path,
                 scan.problem == PX_PB_TOO_DEEP ? "messages nest too deep"
                                                : "a string field contains a NUL byte");
        goto cleanup;
    }
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
