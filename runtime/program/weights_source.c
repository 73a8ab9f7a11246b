#include "weights_source.h"

#include "file_in.h"
#include "px_external_path.h"

#include "hash64.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static uint64_t name_hash(const uint8_t *p, size_t n) {
    return px_hash64(PX_HASH64_INIT, p, n);
}

static int build_table(px_wsrc *s, char *err, size_t cap) {
    int64_t n = 16;
    while (n < 2 * (int64_t)s->m.n_inits) n *= 2;
    s->table = malloc(sizeof *s->table * (size_t)n);
    if (!s->table) return fail(err, cap, "out of memory indexing %s", s->path);
    memset(s->table, 0xff, sizeof *s->table * (size_t)n);
    s->table_cap = n;
    for (int i = 0; i < s->m.n_inits; i++) {
        const px_wire_str nm = s->m.inits[i].name;
        int64_t k = (int64_t)(name_hash(nm.p, nm.len) & (uint64_t)(n - 1));
        for (; s->table[k] >= 0; k = (k + 1) & (n - 1)) {
            const px_wire_str o = s->m.inits[s->table[k]].name;
            /* (an empty name is a NULL string) */
            if (o.len == nm.len && (nm.len == 0 || !memcmp(o.p, nm.p, nm.len)))
                return fail(err, cap, "model %s: initializer '%.*s' is defined twice", s->path,
                            (int)nm.len, (const char *)nm.p);
        }
        s->table[k] = i;
    }
    return 0;
}

int px_wsrc_open(px_wsrc *s, const char *path, char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->dir, sizeof s->dir, "%s", path);
    char *slash = strrchr(s->dir, '/');
    if (!slash)
        snprintf(s->dir, sizeof s->dir, ".");
    else if (slash == s->dir)
        slash[1] = 0;
    else
        *slash = 0;
    struct stat st;
    char open_err[4400];
    /* A regular file, checked on the open descriptor; a FIFO is refused, not
     * waited on (file_in.h). */
    int fd = px_open_regular(path, "the model", &st, open_err, sizeof open_err);
    if (fd < 0) {
        if (errno == ENOENT)
            return fail(err, cap,
                        "%s. The program reads its weights from the model it was compiled from "
                        "when it starts; if the model has moved, give its path with --weights "
                        "MODEL.onnx",
                        open_err);
        return fail(err, cap, "%s", open_err);
    }
    if (st.st_size == 0) {
        close(fd);
        return fail(err, cap, "the model %s is empty", path);
    }
    s->map_len = (size_t)st.st_size;
    /* Private and writable: frozen weights may point into the mapping, and a
     * kernel writing one must never reach the file. */
    void *p = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return fail(err, cap, "cannot map the model %s: %s", path, strerror(errno));
    s->map = p;
    char why[512];
    if (px_wire_parse_model(s->map, s->map_len, &s->m, why, sizeof why)) {
        px_wsrc_close(s);
        return fail(err, cap, "the model %s: %s", path, why);
    }
    if (build_table(s, err, cap)) {
        px_wsrc_close(s);
        return -1;
    }
    return 0;
}

void px_wsrc_close(px_wsrc *s) {
    for (int i = 0; i < s->n_files; i++) {
        if (s->files[i].fd >= 0) close(s->files[i].fd);
        free(s->files[i].path);
    }
    free(s->files);
    free(s->table);
    px_wire_model_free(&s->m);
    if (s->map) munmap((void *)s->map, s->map_len);
    s->map = NULL;
    s->files = NULL;
    s->table = NULL;
    s->n_files = 0;
}

const px_wire_tensor *px_wsrc_find(const px_wsrc *s, const char *name) {
    if (!s->table) return NULL;
    size_t n = strlen(name);
    int64_t k = (int64_t)(name_hash((const uint8_t *)name, n) & (uint64_t)(s->table_cap - 1));
    for (; s->table[k] >= 0; k = (k + 1) & (s->table_cap - 1))
        if (px_wire_name_is(&s->m.inits[s->table[k]], name)) return &s->m.inits[s->table[k]];
    return NULL;
}

/* The external file `location` inside the model's folder, opened once.
 * The path rule is common/px_external_path.c, shared with the importer. */
static int open_external(px_wsrc *s, const char *tensor, const char *location, int *fd, char *err,
                         size_t cap) {
    char real_file[PATH_MAX], what[600];
    snprintf(what, sizeof what, "initializer '%s'", tensor);
    if (px_external_resolve(s->dir, what, location, real_file, err, cap)) return -1;
    for (int i = 0; i < s->n_files; i++)
        if (!strcmp(s->files[i].path, real_file)) {
            *fd = s->files[i].fd;
            return 0;
        }
    struct stat st;
    char why[4400];
    int f = px_open_regular(real_file, "external data file", &st, why, sizeof why);
    if (f < 0) return fail(err, cap, "initializer '%s': %s", tensor, why);
    px_wsrc_file *grown = realloc(s->files, sizeof *grown * (size_t)(s->n_files + 1));
    char *copy = strdup(real_file);
    if (!grown || !copy) {
        free(copy);
        if (grown) s->files = grown;
        close(f);
        return fail(err, cap, "out of memory");
    }
    s->files = grown;
    s->files[s->n_files].path = copy;
    s->files[s->n_files++].fd = f;
    *fd = f;
    return 0;
}

int px_wsrc_locate(px_wsrc *s, const px_wire_tensor *t, int64_t nbytes, int *fd, int64_t *offset,
                   char *err, size_t cap) {
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)t->name.len, (const char *)t->name.p);
    *fd = -1;
    *offset = 0;
    if (!t->external) {
        if (t->has_raw && (int64_t)t->raw.len != nbytes)
            return fail(err, cap, "initializer '%s' in %s: raw_data holds %zu bytes, %lld expected",
                        name, s->path, t->raw.len, (long long)nbytes);
        return 0; /* typed fields are counted as they are read */
    }
    char location[PATH_MAX];
    /* An absent location is a NULL string, an empty one names the folder. */
    if (t->location.len == 0)
        return fail(err, cap, "initializer '%s' in %s: external data without a location", name,
                    s->path);
    if (t->location.len >= sizeof location)
        return fail(err, cap, "initializer '%s': external data location is too long", name);
    memcpy(location, t->location.p, t->location.len);
    location[t->location.len] = 0;
    if (open_external(s, name, location, fd, err, cap)) return -1;
    struct stat st;
    if (fstat(*fd, &st) != 0)
        return fail(err, cap, "initializer '%s': cannot stat %s: %s", name, location,
                    strerror(errno));
    int64_t size = (int64_t)st.st_size;
    int64_t length = t->ext_length >= 0 ? t->ext_length : size - t->ext_offset;
    if (t->ext_offset > size || length > size - t->ext_offset)
        return fail(err, cap,
                    "initializer '%s': external data range [%lld, %lld + %lld) runs past the end "
                    "of '%s' (%lld bytes)",
                    name, (long long)t->ext_offset, (long long)t->ext_offset, (long long)length,
                    location, (long long)size);
    if (length != nbytes)
        return fail(err, cap, "initializer '%s': external data holds %lld bytes, %lld expected",
                    name, (long long)length, (long long)nbytes);
    *offset = t->ext_offset;
    return 0;
}

int px_wsrc_read(const px_wire_tensor *t, int fd, int64_t offset, int64_t from, int64_t n,
                 void *dst, char *err, size_t cap) {
    if (n == 0) return 0;
    if (t->external) {
        if (px_read_fully(fd, dst, (size_t)n, offset + from))
            return fail(err, cap,
                        "cannot read %lld bytes at offset %lld of the external data of "
                        "'%.*s': %s",
                        (long long)n, (long long)(offset + from), (int)t->name.len,
                        (const char *)t->name.p, errno ? strerror(errno) : "end of file");
        return 0;
    }
    int64_t es = (int64_t)px_wire_dtype_size(t->dtype);
    if (es <= 0 || from % es || n % es)
        return fail(err, cap, "'%.*s': bytes [%lld, %lld) are not whole elements", (int)t->name.len,
                    (const char *)t->name.p, (long long)from, (long long)(from + n));
    char why[256];
    if (px_wire_read_inline(t, from / es, n / es, dst, why, sizeof why))
        return fail(err, cap, "initializer '%.*s': %s", (int)t->name.len, (const char *)t->name.p,
                    why);
    return 0;
}

int px_wsrc_input_files(const px_wsrc *s, const char *what, px_path_list *l) {
    if (px_path_list_add(l, what, s->path)) return -1;
    int first = l->n;
    for (int i = 0; i < s->m.n_inits; i++) {
        const px_wire_tensor *t = &s->m.inits[i];
        char location[PATH_MAX], real_file[PATH_MAX], err[64];
        if (!t->external || t->location.len == 0 || t->location.len >= sizeof location) continue;
        memcpy(location, t->location.p, t->location.len);
        location[t->location.len] = 0;
        /* One the rule refuses is refused by the loader, never read. */
        if (px_external_resolve(s->dir, "", location, real_file, err, sizeof err)) continue;
        int seen = 0;
        for (int k = first; k < l->n && !seen; k++) seen = !strcmp(l->items[k].path, real_file);
        char name[600];
        snprintf(name, sizeof name, "external data of %s", what);
        if (!seen && px_path_list_add(l, name, real_file)) return -1;
    }
    return 0;
}
