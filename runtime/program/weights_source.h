/* The ONNX model a program reads its weights from: the file mapped, its
 * initializers indexed by name, external data files resolved as the
 * compiler's importer does (relative to the model's folder, never outside
 * it). Used by weights.c. */
#ifndef PX_WEIGHTS_SOURCE_H
#define PX_WEIGHTS_SOURCE_H

#include "onnx_wire.h"
#include "out_paths.h"

#include <stddef.h>
#include <stdint.h>

typedef struct px_wsrc_file {
    char *path; /* resolved (realpath) */
    int fd;
} px_wsrc_file;

typedef struct px_wsrc {
    char path[4096]; /* the model as given */
    char dir[4096];  /* its folder */
    const uint8_t *map;
    size_t map_len;
    px_wire_model m;
    int64_t table_cap; /* power of two */
    int32_t *table;    /* name hash -> index into m.inits, -1 empty */
    int n_files;
    px_wsrc_file *files;
} px_wsrc;

/* Maps and parses path. -1 with a message (naming the path) in err. */
int px_wsrc_open(px_wsrc *s, const char *path, char *err, size_t cap);
void px_wsrc_close(px_wsrc *s);
/* Adds the files the weights are read from to l: the model (named `what`,
 * "--weights") and every external data file its initializers name. -1 when
 * out of memory. */
int px_wsrc_input_files(const px_wsrc *s, const char *what, px_path_list *l);
/* The initializer named name, or NULL. */
const px_wire_tensor *px_wsrc_find(const px_wsrc *s, const char *name);
/* Checks that t's data is all there (inline: the byte or element count;
 * external: the file, inside the model's folder, and the range) for nbytes
 * bytes. For external data sets *fd and *offset. -1 with a message. */
int px_wsrc_locate(px_wsrc *s, const px_wire_tensor *t, int64_t nbytes, int *fd, int64_t *offset,
                   char *err, size_t cap);
/* Copies bytes [from, from + n) of t's data (located with fd/offset for
 * external data) into dst. -1 with a message. */
int px_wsrc_read(const px_wire_tensor *t, int fd, int64_t offset, int64_t from, int64_t n,
                 void *dst, char *err, size_t cap);

#endif
