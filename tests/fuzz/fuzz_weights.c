/* libFuzzer harness: how a generated program reads its weights from the ONNX
 * model at start (runtime/program/weights_source.c over onnx_wire.c, the
 * runtime's own protobuf reader). The input is written as model.onnx in a
 * private folder that also holds data.bin (external data, 256 bytes) and a
 * sub-folder; the model is mapped and parsed, then every initializer is
 * found by name, located for its dtype and shape's byte count (inline or
 * external) and read whole, and the graph's node names are touched, as
 * weights.c does. Seeds: ONNX models (some with external data). */
#include "weights_source.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Weights larger than this are located but read in part only. */
#define MAX_READ ((int64_t)1 << 20)

static char dir[64], model[96], data_file[96];

static void put_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror(path);
        abort();
    }
}

static void remove_folder(void) {
    char sub[96];
    unlink(model);
    unlink(data_file);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    rmdir(sub);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/px_fuzz_weights_%d", (int)getpid());
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    snprintf(data_file, sizeof data_file, "%s/data.bin", dir);
    char sub[96];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    if ((mkdir(dir, 0700) && access(dir, W_OK)) || (mkdir(sub, 0700) && access(sub, W_OK))) {
        perror(dir);
        abort();
    }
    atexit(remove_folder);
    unsigned char bytes[256];
    for (int i = 0; i < 256; i++) bytes[i] = (unsigned char)i;
    put_file(data_file, bytes, sizeof bytes);
    return 0;
}

static void read_weight(px_wsrc *s, const px_wire_tensor *t, unsigned char *buf) {
    char err[4600];
    /* found again by its name, as the program looks weights up */
    char name[256];
    size_t n = t->name.len < sizeof name - 1 ? t->name.len : sizeof name - 1;
    if (n) memcpy(name, t->name.p, n); /* an unnamed initializer: a NULL string */
    name[n] = 0;
    if (strlen(name) == t->name.len && !px_wsrc_find(s, name)) abort();
    size_t esize = px_wire_dtype_size(t->dtype);
    int64_t numel = px_wire_numel(t);
    if (!esize || numel < 0 || numel > INT64_MAX / 8) return;
    int64_t nbytes = numel * (int64_t)esize, offset = 0;
    int fd = -1;
    if (px_wsrc_locate(s, t, nbytes, &fd, &offset, err, sizeof err)) return;
    int64_t part = nbytes < MAX_READ ? nbytes : MAX_READ;
    if (px_wsrc_read(t, fd, offset, 0, part, buf, err, sizeof err) == 0 && nbytes > part) {
        /* and the tail, as a shard reads its rows */
        px_wsrc_read(t, fd, offset, nbytes - part, part, buf, err, sizeof err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static unsigned char buf[MAX_READ];
    char err[4600];
    px_wsrc s;
    put_file(model, data, size);
    if (px_wsrc_open(&s, model, err, sizeof err) == 0) {
        for (int i = 0; i < s.m.n_inits; i++) read_weight(&s, &s.m.inits[i], buf);
        volatile size_t sink = 0;
        for (int64_t i = 0; i < s.m.n_nodes; i++)
            sink += s.m.nodes[i].name.len ? s.m.nodes[i].name.p[s.m.nodes[i].name.len - 1] : 0;
        (void)sink;
        px_wsrc_close(&s);
    }
    return 0;
}
