/* Loads a program's weights from its ONNX model at start (px_weights.h):
 * checks the model against what was compiled, gives trained variables their
 * own memory, lets frozen weights point into the mapping, allocates the
 * arena and binds the descriptors' data pointers. */
#include "px_weights.h"

#include "data.h"
#include "npy.h"
#include "px_kernel.h"
#include "px_train.h"
#include "tp_slabs.h"
#include "weights_source.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WEIGHT_ALIGN 64
#define MAP_MIN ((int64_t)1 << 20)
#define READ_BLOCK ((int64_t)4 << 20)

/* Where each weight's data is, once checked. */
typedef struct weight_loc {
    const px_wire_tensor *t;
    int fd;
    int64_t offset;
} weight_loc;

static struct {
    const px_program_desc *p;
    px_wsrc src;
    int open;
    weight_loc *locs;
    int64_t frozen, frozen_in_file; /* bytes of frozen weights; of them, read from the file */
} W;

const char *px_weights_model_path(void) {
    return W.open ? W.src.path : NULL;
}

int px_weights_input_files(const char *what, px_path_list *l) {
    return W.open ? px_wsrc_input_files(&W.src, what, l) : 0;
}

int64_t px_weights_of_var(int64_t var) {
    if (!W.p || var < 0 || var >= W.p->n_vars)
        px_rt_fail("internal error: no variable %lld", (long long)var);
    return W.p->vars[var].weight;
}

static void *alloc_aligned(int64_t nbytes, const char *what, const char *name) {
    size_t n = ((size_t)(nbytes > 0 ? nbytes : 1) + WEIGHT_ALIGN - 1) & ~(size_t)(WEIGHT_ALIGN - 1);
    void *p = aligned_alloc(WEIGHT_ALIGN, n);
    if (!p) px_rt_fail("out of memory for %s '%s' (%lld bytes)", what, name, (long long)nbytes);
    return p;
}

/* The first difference between the compiled weights and the model's:
 * -1 with the message in err. */
static int check_weights(const px_program_desc *p, char *err, size_t cap) {
    const char *path = W.src.path;
    for (int64_t w = 0; w < p->n_weights; w++) {
        const px_weight_desc *d = &p->weights[w];
        const px_wire_tensor *t = px_wsrc_find(&W.src, d->name);
        if (!t) {
            snprintf(err, cap,
                     "the model %s does not fit this program: it has no initializer '%s' (the "
                     "program was compiled from %s)",
                     path, d->name, p->weights_path ? p->weights_path : "another model");
            return -1;
        }
        if (t->dtype != d->dtype) {
            snprintf(err, cap,
                     "the model %s does not fit this program: initializer '%s' is %s, the "
                     "program was compiled for %s",
                     path, d->name, px_rt_dtype_name(t->dtype), px_rt_dtype_name((int)d->dtype));
            return -1;
        }
        int same = t->rank == d->rank;
        for (int64_t i = 0; same && i < d->rank; i++) same = t->dims[i] == d->dims[i];
        if (!same) {
            char got[256], want[256];
            px_shape_text(got, sizeof got, t->rank, t->dims);
            px_shape_text(want, sizeof want, (int)d->rank, d->dims);
            snprintf(err, cap,
                     "the model %s does not fit this program: initializer '%s' has shape %s, "
                     "the program was compiled for %s",
                     path, d->name, got, want);
            return -1;
        }
        weight_loc *l = &W.locs[w];
        l->t = t;
        if (px_wsrc_locate(&W.src, t, d->nbytes, &l->fd, &l->offset, err, cap)) return -1;
    }
    return 0;
}

/* The graph must be the one compiled: same nodes (op, domain, inputs,
 * outputs) in the same order. A model written by --save passes. -1 with
 * the message in err. */
static int check_graph(const px_program_desc *p, char *err, size_t cap) {
    const px_wire_model *m = &W.src.m;
    int64_t n = m->n_nodes < p->n_nodes ? m->n_nodes : p->n_nodes;
    for (int64_t i = 0; i < n; i++)
        if (m->nodes[i].hash != p->node_hashes[i]) {
            const px_wire_node *nd = &m->nodes[i];
            snprintf(err, cap,
                     "the model %s does not fit this program: its graph differs from the "
                     "compiled one at node #%lld ('%.*s', %.*s): different op, inputs or "
                     "outputs",
                     W.src.path, (long long)i, (int)nd->name.len, (const char *)nd->name.p,
                     (int)nd->op_type.len, (const char *)nd->op_type.p);
            return -1;
        }
    if (m->n_nodes != p->n_nodes) {
        snprintf(err, cap,
                 "the model %s does not fit this program: its graph has %lld nodes, the "
                 "compiled one %lld",
                 W.src.path, (long long)m->n_nodes, (long long)p->n_nodes);
        return -1;
    }
    return 0;
}

static void read_all(int64_t w, void *dst) {
    const px_weight_desc *d = &W.p->weights[w];
    const weight_loc *l = &W.locs[w];
    char err[4600];
    if (px_wsrc_read(l->t, l->fd, l->offset, 0, d->nbytes, dst, err, sizeof err))
        px_rt_fail("the model %s: %s", W.src.path, err);
}

/* A private copy of a trained variable. Pages of inline data it was copied
 * from are released afterwards, so the model's bytes are not held twice. */
/* Releases the whole pages of bytes [from, from + n) of t's inline data in
 * the model's mapping once copied: they are read again from the file if
 * ever needed. Pages shared with other tensors (at the ends) are kept. */
static void release_inline(const px_wire_tensor *t, int64_t from, int64_t n) {
    if (t->external || !t->has_raw || n <= 0 || from < 0 || (uint64_t)(from + n) > t->raw.len)
        return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t start = (uintptr_t)t->raw.p + (uintptr_t)from;
    uintptr_t lo = (start + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t hi = (start + (uintptr_t)n) & ~(uintptr_t)(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static void *load_variable(int64_t w) {
    const px_weight_desc *d = &W.p->weights[w];
    void *mem = alloc_aligned(d->nbytes, "variable", d->name);
    read_all(w, mem);
    const px_wire_tensor *t = W.locs[w].t;
    release_inline(t, 0, (int64_t)t->raw.len);
    return mem;
}

/* A variable stored split (--tp): this rank's slab of the whole weight,
 * read through a whole-size buffer freed at once. */
static void *load_slab(int64_t w, int64_t v) {
    const px_var_desc *vd = &W.p->vars[v];
    void *whole = load_variable(w);
    void *mem = alloc_aligned(vd->nbytes, "variable", vd->name);
    px_tp_take_slab(W.p, v, whole, mem);
    free(whole);
    return mem;
}

/* Large frozen external data stays in its file: mapped (privately, so a
 * write never reaches the file) and paged in as rows are read, so an
 * inference program over a multi-GiB table reads only the rows it uses.
 * NULL when the data is not aligned for the kernels or cannot be mapped. */
static void *map_external(const weight_loc *l, int64_t nbytes) {
    if (nbytes < MAP_MIN || l->offset % WEIGHT_ALIGN) return NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    int64_t start = l->offset - l->offset % page;
    size_t len = (size_t)(l->offset - start + nbytes);
    void *p =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, l->fd, (off_t)start);
    return p == MAP_FAILED ? NULL : (char *)p + (l->offset - start);
}

/* A frozen weight: raw data in the model's mapping or its external file's
 * when aligned, else a copy (typed fields, unaligned bytes, small external
 * data). */
static void *load_frozen(int64_t w) {
    const px_weight_desc *d = &W.p->weights[w];
    const px_wire_tensor *t = W.locs[w].t;
    W.frozen += d->nbytes;
    if (!t->external && t->has_raw && ((uintptr_t)t->raw.p % WEIGHT_ALIGN) == 0) {
        W.frozen_in_file += d->nbytes;
        return (void *)t->raw.p;
    }
    void *mapped = t->external ? map_external(&W.locs[w], d->nbytes) : NULL;
    if (mapped) {
        W.frozen_in_file += d->nbytes;
        return mapped;
    }
    void *mem = alloc_aligned(d->nbytes, "weight", d->name);
    read_all(w, mem);
    return mem;
}

static void alloc_arena(const px_program_desc *p) {
    if (!p->arena) return;
    int64_t bytes = px_arena_bytes_held(p); /* --pp: this stage's buffers */
    void *a = alloc_aligned(bytes, "the activation arena", "arena");
    /* Zeroed, which also faults every page in before the first step. */
    memset(a, 0, (size_t)(bytes > 0 ? bytes : 1));
    *p->arena = a;
}

static void bind_io(px_io_desc *io, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (io[i].base) io[i].data = (char *)*io[i].base + io[i].offset;
}

int px_weights_open(const px_program_desc *p, const char *path_override, char *err, size_t cap) {
    if (W.p == p) return 0; /* opened and checked already */
    W.p = p;
    const char *path = path_override ? path_override : p->weights_path;
    if (path && (p->n_weights > 0 || path_override)) {
        if (px_wsrc_open(&W.src, path, err, cap)) return -1;
        W.open = 1;
        W.locs = calloc((size_t)p->n_weights + 1, sizeof *W.locs);
        if (!W.locs) {
            snprintf(err, cap, "out of memory for the weights table");
            return -1;
        }
        if (check_weights(p, err, cap) || check_graph(p, err, cap)) return -1;
    } else if (p->n_weights > 0) {
        snprintf(err, cap, "internal error: the program has weights but no model path");
        return -1;
    }
    return 0;
}

void px_weights_load(const px_program_desc *p, const char *path_override) {
    char err[8800];
    if (px_weights_open(p, path_override, err, sizeof err)) px_rt_fail("%s", err);
    int64_t *var_of = malloc(sizeof *var_of * (size_t)(p->n_weights + 1));
    if (!var_of) px_rt_fail("out of memory for the weights table");
    for (int64_t w = 0; w < p->n_weights; w++) var_of[w] = -1;
    for (int64_t v = 0; v < p->n_vars; v++) {
        int64_t w = p->vars[v].weight;
        if (w >= p->n_weights)
            px_rt_fail("internal error: variable '%s' has weight %lld of %lld", p->vars[v].name,
                       (long long)w, (long long)p->n_weights);
        if (w >= 0) var_of[w] = v;
    }
    for (int64_t w = 0; w < p->n_weights; w++) {
        int64_t v = var_of[w];
        void *data = v < 0                       ? load_frozen(w)
                     : !p->vars[v].local_storage ? NULL
                     : !px_var_held(p, v)        ? NULL /* --pp: another stage's */
                     : px_tp_var_split(p, v)     ? load_slab(w, v)
                                                 : load_variable(w);
        *p->weights[w].slot = data;
        if (v >= 0) p->vars[v].data = data;
    }
    free(var_of);
    alloc_arena(p);
    bind_io(p->inputs, p->n_inputs);
    bind_io(p->outputs, p->n_outputs);
}

int64_t px_weights_frozen_bytes(int64_t *in_file) {
    if (in_file) *in_file = W.frozen_in_file;
    return W.frozen;
}

/* The bytes of one row of weight, after checking [row0, row0 + nrows). */
static int64_t checked_row_bytes(int64_t weight, int64_t row0, int64_t nrows) {
    if (!W.open || weight < 0 || weight >= W.p->n_weights)
        px_rt_fail("internal error: weight %lld is not loaded", (long long)weight);
    const px_weight_desc *d = &W.p->weights[weight];
    int64_t rows = d->rank > 0 ? d->dims[0] : 1;
    if (row0 < 0 || nrows < 0 || row0 > rows || nrows > rows - row0)
        px_rt_fail("internal error: rows [%lld, %lld) of '%s', which has %lld", (long long)row0,
                   (long long)(row0 + nrows), d->name, (long long)rows);
    return rows ? d->nbytes / rows : 0;
}

void *px_weights_map_rows(int64_t weight, int64_t row0, int64_t nrows) {
    int64_t row_bytes = checked_row_bytes(weight, row0, nrows);
    const weight_loc *l = &W.locs[weight];
    long page = sysconf(_SC_PAGESIZE);
    int64_t at = l->offset + row0 * row_bytes;
    if (!l->t->external || page <= 0 || at % page || nrows * row_bytes <= 0) return NULL;
    void *p = mmap(NULL, (size_t)(nrows * row_bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE, l->fd,
                   (off_t)at);
    return p == MAP_FAILED ? NULL : p;
}

void px_weights_read_rows(int64_t weight, int64_t row0, int64_t nrows, void *dst) {
    int64_t row_bytes = checked_row_bytes(weight, row0, nrows);
    const weight_loc *l = &W.locs[weight];
    char err[4600];
    /* In blocks, each released from the mapping once copied: a shard's rows
     * are never resident twice (its copy and the mapping's pages), not even
     * while they are read. */
    int64_t block = row_bytes > 0 ? (READ_BLOCK + row_bytes - 1) / row_bytes : nrows;
    for (int64_t r = row0; r < row0 + nrows; r += block) {
        int64_t n = row0 + nrows - r < block ? row0 + nrows - r : block;
        char *to = (char *)dst + (r - row0) * row_bytes;
        if (px_wsrc_read(l->t, l->fd, l->offset, r * row_bytes, n * row_bytes, to, err, sizeof err))
            px_rt_fail("the model %s: %s", W.src.path, err);
        release_inline(l->t, r * row_bytes, n * row_bytes);
    }
}
