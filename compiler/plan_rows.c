#include "plan_rows.h"

#include "dataset_manifest.h"
#include "npy_header.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A table larger than this is left to the bound: the replay keeps two
 * words per row. */
#define MAX_TABLE_ROWS (64ll << 20)
/* Steps replayed per rank: whole epochs, at least this many steps when an
 * epoch is shorter, at most this many when it is longer. */
#define MIN_STEPS 16
#define MAX_STEPS 64
#define MAX_RANKS_REPLAYED 4

typedef struct index_file {
    int input; /* graph input */
    px_array a;
    int64_t per_sample; /* index values per sample */
} index_file;

typedef struct var_rows {
    int var; /* index into the plan */
    int64_t rows;
    int n_files;
    int *files; /* into px_plan_rows.files */
} var_rows;

struct px_plan_rows {
    int64_t batch, samples;
    int n_files, n_vars;
    index_file *files;
    var_rows *vars;
    int64_t *seen, *pulled; /* scratch of the largest table: step a row was read / pulled */
};

/* The graph input v is, through ops that only reshape or cast, or NULL. */
static const px_value *index_input(const px_value *v) {
    while (v && v->kind == PX_VALUE_INTERMEDIATE && v->producer) {
        px_op op = v->producer->op;
        if (op != PX_OP_Cast && op != PX_OP_Reshape && op != PX_OP_Squeeze &&
            op != PX_OP_Unsqueeze && op != PX_OP_Flatten && op != PX_OP_Identity)
            return NULL;
        v = v->producer->inputs[0];
    }
    return v && v->kind == PX_VALUE_INPUT ? v : NULL;
}

static int input_of(const px_graph *g, const px_value *v) {
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v) return i;
    return -1;
}

static void unmap(index_file *f) {
    if (f->a.map) munmap(f->a.map, f->a.map_len);
    memset(&f->a, 0, sizeof f->a);
}

/* Maps DIR/<input>.npy of an integer index input; 0, or -1 (why set). */
static int map_file(const char *dir, const char *name, index_file *f, char *why, size_t cap) {
    char path[4096], err[512];
    px_data_file_name(path, sizeof path, dir, name, ".npy");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        if (fd >= 0) close(fd);
        snprintf(why, cap, "no %s to read the rows from", path);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(why, cap, "cannot map %s", path);
        return -1;
    }
    size_t off = 0;
    f->a.map = m;
    f->a.map_len = (size_t)st.st_size;
    if (px_npy_header_parse(m, (size_t)st.st_size, &f->a, &off, path, err, sizeof err) != 0 ||
        (f->a.dtype != 6 && f->a.dtype != 7) || f->a.rank < 1 || f->a.dims[0] <= 0 ||
        off + f->a.nbytes > (size_t)st.st_size) {
        snprintf(why, cap, "%s is not an int32 or int64 array of samples", path);
        f->a.map = m; /* px_npy_header_parse may have cleared it */
        f->a.map_len = (size_t)st.st_size;
        unmap(f);
        return -1;
    }
    f->a.map = m;
    f->a.map_len = (size_t)st.st_size;
    f->a.data = (char *)m + off;
    f->per_sample = f->a.numel / f->a.dims[0];
    return 0;
}

static int file_of(px_plan_rows *r, const px_graph *g, int input, const char *dir, char *why,
                   size_t cap) {
    for (int i = 0; i < r->n_files; i++)
        if (r->files[i].input == input) return i;
    index_file f = {.input = input};
    if (map_file(dir, g->inputs[input]->name, &f, why, cap) != 0) return -1;
    if (r->samples >= 0 && f.a.dims[0] != r->samples) {
        snprintf(why, cap, "the index inputs hold different numbers of samples");
        unmap(&f);
        return -1;
    }
    r->samples = f.a.dims[0];
    r->files[r->n_files] = f;
    return r->n_files++;
}

void px_plan_rows_free(px_plan_rows *r) {
    if (!r) return;
    for (int i = 0; i < r->n_files; i++) unmap(&r->files[i]);
    for (int v = 0; v < r->n_vars; v++) free(r->vars[v].files);
    free(r->files);
    free(r->vars);
    free(r->seen);
    free(r->pulled);
    free(r);
}

/* The graph inputs whose values index variable v; 0, or -1 (why set)
 * when a look-up reads computed indices or a file cannot be read. */
static int var_inputs(px_plan_rows *r, const px_graph *g, const px_train_var *tv, const char *dir,
                      var_rows *out, char *why, size_t cap) {
    for (int k = 0; k < g->n_nodes; k++) {
        const px_node *nd = g->nodes[k];
        if (nd->dead || nd->op != PX_OP_Gather || nd->n_inputs < 2 || nd->inputs[0] != tv->value)
            continue;
        const px_value *idx = index_input(nd->inputs[1]);
        if (!idx || px_attr_int(nd, "axis", 0) != 0) {
            snprintf(why, cap, "'%s' is read by computed indices (%s)", tv->value->name,
                     nd->name[0] ? nd->name : "a Gather");
            return -1;
        }
        int f = file_of(r, g, input_of(g, idx), dir, why, cap);
        if (f < 0) return -1;
        int dup = 0;
        for (int i = 0; i < out->n_files; i++) dup |= out->files[i] == f;
        if (!dup) out->files[out->n_files++] = f;
    }
    return out->n_files ? 0 : -1;
}

int px_plan_rows_open(const px_graph *g, const px_train_plan *plan, const char *data_dir,
                      int64_t batch, px_plan_rows **out, char *why, size_t why_cap, px_diag *d) {
    *out = NULL;
    px_plan_rows *r = calloc(1, sizeof *r);
    if (r) {
        r->files = calloc((size_t)g->n_inputs + 1, sizeof *r->files);
        r->vars = calloc((size_t)plan->n_vars + 1, sizeof *r->vars);
    }
    if (!r || !r->files || !r->vars) {
        px_plan_rows_free(r);
        return px_error(d, "plan: out of memory");
    }
    r->batch = batch;
    r->samples = -1;
    int64_t largest = 0;
    snprintf(why, why_cap, "no sparse variable");
    for (int v = 0; v < plan->n_vars; v++) {
        const px_train_var *tv = &plan->vars[v];
        const px_shape *s = &tv->value->shape;
        if (tv->cls != PX_VAR_SPARSE || !tv->has_grad || s->rank < 1 || s->dims[0] <= 0) continue;
        if (s->dims[0] > MAX_TABLE_ROWS) {
            snprintf(why, why_cap, "'%s' has too many rows to replay", tv->value->name);
            continue;
        }
        var_rows *vr = &r->vars[r->n_vars];
        vr->files = calloc((size_t)g->n_inputs + 1, sizeof *vr->files);
        if (!vr->files) {
            px_plan_rows_free(r);
            return px_error(d, "plan: out of memory");
        }
        vr->var = v;
        vr->rows = s->dims[0];
        if (var_inputs(r, g, tv, data_dir, vr, why, why_cap) != 0) {
            free(vr->files);
            memset(vr, 0, sizeof *vr);
            continue;
        }
        largest = vr->rows > largest ? vr->rows : largest;
        r->n_vars++;
    }
    if (!r->n_vars) {
        px_plan_rows_free(r);
        return 0;
    }
    r->seen = malloc(sizeof *r->seen * (size_t)largest);
    r->pulled = malloc(sizeof *r->pulled * (size_t)largest);
    if (!r->seen || !r->pulled) {
        px_plan_rows_free(r);
        return px_error(d, "plan: out of memory");
    }
    *out = r;
    return 0;
}

int px_plan_rows_count(const px_plan_rows *r) {
    return r ? r->n_vars : 0;
}

static int64_t index_at(const px_array *a, int64_t i) {
    return a->dtype == 6 ? (int64_t)((const int32_t *)a->data)[i] : ((const int64_t *)a->data)[i];
}

/* One rank's replay of variable vr: distinct rows per step, and rows
 * pulled per step, summed over the counted steps (*counted of them). */
static void replay(const px_plan_rows *r, const var_rows *vr, int ranks, int rank, int64_t s_max,
                   double *rows, double *pulled, int64_t *counted) {
    int64_t global = (int64_t)ranks * r->batch, epoch = r->samples / global;
    int64_t steps = epoch >= MIN_STEPS ? epoch : epoch * ((MIN_STEPS + epoch - 1) / epoch);
    if (steps > MAX_STEPS) steps = MAX_STEPS;
    int64_t warm = s_max + 1, *seen = r->seen, *got = r->pulled;
    for (int64_t i = 0; i < vr->rows; i++) seen[i] = got[i] = INT64_MIN / 2;
    for (int64_t t = 0; t < warm + steps; t++) {
        int64_t first = (t % epoch) * global + (int64_t)rank * r->batch, u = 0, p = 0;
        for (int f = 0; f < vr->n_files; f++) {
            const index_file *x = &r->files[vr->files[f]];
            for (int64_t i = first * x->per_sample; i < (first + r->batch) * x->per_sample; i++) {
                int64_t row = index_at(&x->a, i);
                if (row < 0 || row >= vr->rows || seen[row] == t) continue;
                seen[row] = t;
                u++;
                if (got[row] >= t - s_max && s_max > 0) continue; /* kept */
                got[row] = t;
                p++;
            }
        }
        if (t >= warm) {
            *rows += (double)u;
            *pulled += (double)p;
            ++*counted;
        }
    }
}

void px_plan_rows_apply(const px_plan_rows *r, px_train_plan *plan, int ranks, int64_t staleness) {
    for (int v = 0; r && v < r->n_vars; v++) {
        const var_rows *vr = &r->vars[v];
        px_train_var *tv = &plan->vars[vr->var];
        tv->data_rows = tv->data_pulled_rows = 0;
        if (ranks < 1 || r->samples < (int64_t)ranks * r->batch) continue;
        double rows = 0, pulled = 0;
        int64_t counted = 0;
        int replayed = ranks < MAX_RANKS_REPLAYED ? ranks : MAX_RANKS_REPLAYED;
        for (int k = 0; k < replayed; k++) {
            /* spread over the ranks: 0, .., ranks - 1 */
            int rank = replayed > 1 ? (int)((int64_t)k * (ranks - 1) / (replayed - 1)) : 0;
            replay(r, vr, ranks, rank, staleness, &rows, &pulled, &counted);
        }
        if (counted) {
            tv->data_rows = rows / (double)counted;
            tv->data_pulled_rows = pulled / (double)counted;
        }
    }
}
