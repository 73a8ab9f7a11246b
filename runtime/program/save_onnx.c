#include "save_onnx.h"

#include "file_atomic.h"
#include "pb_write.h"
#include "px_kernel.h"
#include "px_train.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MODEL_GRAPH = 7,
    GRAPH_INITIALIZER = 5,
    TENSOR_DIMS = 1,
    TENSOR_DATA_TYPE = 2,
    TENSOR_NAME = 8,
    TENSOR_RAW_DATA = 9,
};
#define ONNX_FLOAT 1

/* A TensorProto up to and including the raw_data key and length: the
 * float32 bytes follow. Its total length is head->len + data bytes. */
static void tensor_head(px_pb_buf *head, const px_var_desc *d) {
    for (int64_t i = 0; i < d->rank; i++) px_pb_put_int64(head, TENSOR_DIMS, d->dims[i]);
    px_pb_put_int64(head, TENSOR_DATA_TYPE, ONNX_FLOAT);
    px_pb_put_string(head, TENSOR_NAME, d->name);
    px_pb_put_tag(head, TENSOR_RAW_DATA, PX_PB_LEN);
    px_pb_put_varint(head, (uint64_t)d->nbytes);
}

void px_save_onnx(const char *path, const px_program_desc *p) {
    int root = px_comm_rank() == 0;
    px_pb_buf *heads = calloc((size_t)p->n_vars + 1, sizeof *heads);
    int64_t most = 1;
    uint64_t graph_len = 0;
    for (int64_t v = 0; v < p->n_vars; v++) {
        const px_var_desc *d = &p->vars[v];
        tensor_head(&heads[v], d);
        if (heads[v].oom) px_rt_fail("out of memory writing %s", path);
        uint64_t tensor_len = heads[v].len + (uint64_t)d->nbytes;
        graph_len += px_pb_varint_size((uint64_t)GRAPH_INITIALIZER << 3 | PX_PB_LEN) +
                     px_pb_varint_size(tensor_len) + tensor_len;
        if (d->nbytes / 4 > most) most = d->nbytes / 4;
    }
    float *w = malloc(sizeof(float) * (size_t)most);
    if (!w) px_rt_fail("out of memory for --save (%lld floats)", (long long)most);
    px_atomic_file af;
    char err[4400];
    int ok = 1;
    if (root) {
        if (px_atomic_open(&af, path, err, sizeof err)) px_rt_fail("%s", err);
        px_pb_buf pre = {0};
        px_pb_put_tag(&pre, MODEL_GRAPH, PX_PB_LEN);
        px_pb_put_varint(&pre, graph_len);
        ok = fwrite(p->onnx_base, 1, (size_t)p->onnx_base_bytes, af.f) ==
                 (size_t)p->onnx_base_bytes &&
             fwrite(pre.data, 1, pre.len, af.f) == pre.len;
        px_pb_free(&pre);
        if ((uint64_t)p->onnx_base_bytes + graph_len > 2147483647ULL)
            fprintf(stderr,
                    "warning: %s is over 2 GiB: protobuf readers (onnx, onnxruntime) may refuse "
                    "it\n",
                    path);
    }
    for (int64_t v = 0; v < p->n_vars; v++) {
        const px_var_desc *d = &p->vars[v];
        float *no_slots[PX_OPTIM_MAX_SLOTS] = {NULL, NULL};
        px_comm_var_gather(v, w, no_slots);
        if (!root) continue;
        uint64_t tensor_len = heads[v].len + (uint64_t)d->nbytes;
        px_pb_buf key = {0};
        px_pb_put_tag(&key, GRAPH_INITIALIZER, PX_PB_LEN);
        px_pb_put_varint(&key, tensor_len);
        ok = ok && fwrite(key.data, 1, key.len, af.f) == key.len &&
             fwrite(heads[v].data, 1, heads[v].len, af.f) == heads[v].len &&
             fwrite(w, 1, (size_t)d->nbytes, af.f) == (size_t)d->nbytes;
        px_pb_free(&key);
    }
    for (int64_t v = 0; v < p->n_vars; v++) px_pb_free(&heads[v]);
    free(heads);
    free(w);
    if (!root) return;
    if (!ok) {
        int saved = errno;
        px_atomic_abort(&af);
        px_rt_fail("cannot write %s.tmp: %s", path, strerror(saved));
    }
    if (px_atomic_commit(&af, err, sizeof err)) px_rt_fail("%s", err);
}
