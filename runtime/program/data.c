#include "data.h"

#include "bag_offsets.h"
#include "checksum.h"
#include "hash64.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void px_shape_text(char *buf, size_t cap, int rank, const int64_t *dims) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Loads the file of input `in`; -1 with a message. */
static int load_file(const char *dir, const px_io_desc *in, px_array *a, char *path, size_t pcap,
                     char *err, size_t cap) {
    struct stat st;
    px_data_file_name(path, pcap, dir, in->name, ".npy");
    if (stat(path, &st) == 0) return px_npy_load(path, a, err, cap);
    px_data_file_name(path, pcap, dir, in->name, ".pb");
    if (stat(path, &st) == 0) return px_pb_load(path, a, err, cap);
    px_data_file_name(path, pcap, dir, in->name, ".npy");
    snprintf(err, cap, "no data for input '%s': expected %s (or .pb)", in->name, path);
    return -1;
}

typedef struct named_file {
    char *file;
    int64_t index;
} named_file;

static int by_file(const void *a, const void *b) {
    const named_file *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

int px_data_name_clash(const px_io_desc *io, int64_t n, const char *dir, const char *what,
                       char *msg, size_t cap) {
    named_file *files = calloc((size_t)n + 1, sizeof *files);
    int clash = files ? 0 : -1;
    for (int64_t i = 0; i < n && files; i++) {
        char path[4096];
        px_data_file_name(path, sizeof path, dir, io[i].name, ".npy");
        files[i] = (named_file){strdup(path), i};
        if (!files[i].file) clash = -1;
    }
    if (clash == 0 && n > 1) {
        /* Sorted by file name, a shared file is two neighbours. */
        qsort(files, (size_t)n, sizeof *files, by_file);
        for (int64_t i = 1; i < n && !clash; i++) {
            if (strcmp(files[i - 1].file, files[i].file)) continue;
            snprintf(msg, cap,
                     "%ss '%s' and '%s' have the same file, %s ('/' and ':' in names are "
                     "written '_'): rename one of them in the model",
                     what, io[files[i - 1].index].name, io[files[i].index].name, files[i].file);
            clash = 1;
        }
    }
    if (clash < 0) snprintf(msg, cap, "out of memory");
    for (int64_t i = 0; i < n && files; i++) free(files[i].file);
    free(files);
    return clash;
}

/* A sharded dataset's files: its manifest and every shard's files (an
 * unreadable manifest adds itself only; opening the dataset reports it). */
static int sharded_input_files(const char *dir, const char *flag, px_path_list *l) {
    char path[4096], err[512];
    px_manifest m;
    snprintf(path, sizeof path, "%s/%s", dir, PX_MANIFEST_FILE);
    if (px_path_list_add(l, flag, path)) return -1;
    if (px_manifest_read(dir, &m, err, sizeof err) != 0) return 0;
    int rc = 0;
    for (int64_t s = 0; s < m.n_shards && !rc; s++) {
        char shard[4096];
        snprintf(shard, sizeof shard, "%s/%s", dir, m.shards[s].name);
        snprintf(path, sizeof path, "%s/%s/%s", dir, m.shards[s].name, PX_CHECKSUMS_FILE);
        rc = px_path_list_add(l, flag, path);
        for (int i = 0; i < m.n_inputs && !rc; i++) {
            px_data_file_name(path, sizeof path, shard, m.inputs[i].name, ".npy");
            rc = px_path_list_add(l, flag, path);
        }
    }
    px_manifest_free(&m);
    return rc ? -1 : 0;
}

int px_data_input_files(const px_program_desc *p, const char *dir, const char *flag,
                        px_path_list *l) {
    char manifest[4096];
    struct stat mst;
    snprintf(manifest, sizeof manifest, "%s/%s", dir, PX_MANIFEST_FILE);
    if (stat(manifest, &mst) == 0) return sharded_input_files(dir, flag, l);
    for (int64_t i = 0; i < p->n_inputs; i++) {
        char path[4096];
        struct stat st;
        px_data_file_name(path, sizeof path, dir, p->inputs[i].name, ".npy");
        if (stat(path, &st) != 0)
            px_data_file_name(path, sizeof path, dir, p->inputs[i].name, ".pb");
        if (stat(path, &st) == 0 && px_path_list_add(l, flag, path)) return -1;
    }
    return 0;
}

/* Checks dtype and the per-sample shape (dims after dim 0). */
static int check_input(const px_io_desc *in, px_array *a, const char *path, char *err, size_t cap) {
    /* bfloat16 data arrives as uint16 bit patterns (NumPy has no bfloat16). */
    if (in->dtype == 16 && a->dtype == 4) a->dtype = 16;
    if (a->dtype != in->dtype) {
        const char *want = px_rt_dtype_name((int)in->dtype);
        /* NumPy spells bfloat16 data as its uint16 bit patterns. */
        const char *np_type = in->dtype == 16 ? "uint16" : in->dtype == 9 ? "bool_" : want;
        snprintf(err, cap,
                 "input '%s' (%s) holds %s data, the model expects %s: save it converted, "
                 "np.save(path, x.astype(np.%s))",
                 in->name, path, px_rt_dtype_name(a->dtype), want, np_type);
        return -1;
    }
    int ok = a->rank == in->rank && a->rank >= 1;
    for (int i = 1; ok && i < a->rank; i++) ok = a->dims[i] == in->dims[i];
    if (ok) return 0;
    char want[300], got[256], sample[256];
    px_shape_text(got, sizeof got, a->rank, a->dims);
    px_shape_text(sample, sizeof sample, in->rank >= 1 ? (int)in->rank - 1 : 0, in->dims + 1);
    size_t n = (size_t)snprintf(want, sizeof want, "[N");
    for (int64_t i = 1; i < in->rank && n < sizeof want; i++)
        n += (size_t)snprintf(want + n, sizeof want - n, ",%lld", (long long)in->dims[i]);
    if (n < sizeof want) snprintf(want + n, sizeof want - n, "] (N samples of shape %s)", sample);
    snprintf(err, cap, "input '%s' (%s) has shape %s; the model expects %s", in->name, path, got,
             want);
    return -1;
}

static int64_t load_index(const px_array *a, int64_t i) {
    return a->dtype == 6 ? (int64_t)((const int32_t *)a->data)[i] : ((const int64_t *)a->data)[i];
}

/* Every value of every index input against its table's rows (one pass over
 * the mapped file): a bad sample is named before any step runs. */
static int check_indices(const px_dataset *ds, const px_program_desc *p, char *err, size_t cap) {
    for (int64_t c = 0; c < p->n_index_checks; c++) {
        const px_index_check *k = &p->index_checks[c];
        if (k->input < 0 || k->input >= ds->n_inputs) continue;
        const px_array *a = &ds->arrays[k->input];
        if (a->dtype != 6 && a->dtype != 7) continue;
        int64_t per_sample = ds->samples > 0 ? a->numel / ds->samples : 1;
        for (int64_t i = 0; i < a->numel; i++) {
            int64_t v = load_index(a, i);
            if (v >= k->lo && v < k->hi) continue;
            char target[600];
            px_index_check_target(k, target, sizeof target);
            snprintf(err, cap,
                     "input '%s' (%s), sample %lld: %s %lld is out of range [%lld, %lld) for %s",
                     p->inputs[k->input].name, ds->paths[k->input],
                     (long long)(per_sample ? i / per_sample : 0),
                     k->kind == PX_CHECK_BAG_OFFSETS ? "offset" : "index", (long long)v,
                     (long long)k->lo, (long long)k->hi, target);
            return -1;
        }
    }
    return 0;
}

int px_data_open(px_dataset *ds, const px_program_desc *p, const char *dir, char *err, size_t cap) {
    memset(ds, 0, sizeof *ds);
    ds->samples = -1;
    ds->n_inputs = p->n_inputs;
    ds->arrays = calloc((size_t)p->n_inputs + 1, sizeof *ds->arrays);
    ds->paths = calloc((size_t)p->n_inputs + 1, sizeof *ds->paths);
    ds->sample_bytes = calloc((size_t)p->n_inputs + 1, sizeof *ds->sample_bytes);
    if (!ds->arrays || !ds->paths || !ds->sample_bytes) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    if (px_data_name_clash(p->inputs, p->n_inputs, dir, "input", err, cap)) return -1;
    for (int64_t i = 0; i < p->n_inputs; i++) {
        const px_io_desc *in = &p->inputs[i];
        char path[4096];
        if (in->rank < 1) {
            snprintf(err, cap, "input '%s' has no sample dimension in the compiled model",
                     in->name);
            return -1;
        }
        if (load_file(dir, in, &ds->arrays[i], path, sizeof path, err, cap)) return -1;
        ds->paths[i] = strdup(path);
        if (check_input(in, &ds->arrays[i], path, err, cap)) return -1;
        int64_t n = ds->arrays[i].dims[0];
        if (i > 0 && n != ds->samples) {
            snprintf(err, cap,
                     "input '%s' (%s) holds %lld samples but '%s' (%s) holds %lld: every input "
                     "needs the same number of samples",
                     in->name, path, (long long)n, p->inputs[0].name, ds->paths[0],
                     (long long)ds->samples);
            return -1;
        }
        ds->samples = n;
        ds->sample_bytes[i] = in->nbytes / in->dims[0];
    }
    return check_indices(ds, p, err, cap);
}

uint64_t px_data_fingerprint(const px_dataset *ds, int64_t i) {
    const px_array *a = &ds->arrays[i];
    uint64_t h = px_hash64_u64(PX_HASH64_INIT, (uint64_t)a->dtype);
    h = px_hash64(h, a->dims, sizeof(int64_t) * (size_t)a->rank);
    /* Every byte: two ranks whose files differ anywhere must not train. */
    return px_hash64_u64(h, px_checksum(a->data, a->nbytes));
}

void px_data_fill_input(const px_dataset *ds, const px_program_desc *p, px_order *o, int64_t step,
                        int rank, int64_t i, void *out) {
    int64_t b = p->batch, first = (int64_t)rank * b;
    size_t sb = (size_t)ds->sample_bytes[i];
    char *dst = out;
    const char *src = ds->arrays[i].data;
    if (px_order_contiguous(o)) {
        int64_t s0 = px_order_sample(o, step, first);
        memcpy(dst, src + (size_t)s0 * sb, sb * (size_t)b);
        return;
    }
    for (int64_t k = 0; k < b; k++) {
        int64_t s = px_order_sample(o, step, first + k);
        memcpy(dst + (size_t)k * sb, src + (size_t)s * sb, sb);
    }
}

void px_data_fill(const px_dataset *ds, const px_program_desc *p, px_order *o, int64_t step,
                  int rank) {
    for (int64_t i = 0; i < ds->n_inputs; i++)
        px_data_fill_input(ds, p, o, step, rank, i, p->inputs[i].data);
}

void px_data_close(px_dataset *ds) {
    for (int64_t i = 0; i < ds->n_inputs; i++) {
        if (ds->arrays) px_array_free(&ds->arrays[i]);
        if (ds->paths) free(ds->paths[i]);
    }
    free(ds->arrays);
    free(ds->paths);
    free(ds->sample_bytes);
    memset(ds, 0, sizeof *ds);
}
