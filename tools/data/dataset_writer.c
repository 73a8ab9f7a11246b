#include "dataset_writer.h"

#include "err_msg.h"
#include "file_atomic.h"
#include "hash64.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_BLOCK_BYTES ((int64_t)64 << 10)
#define DEFAULT_SHARD_BYTES ((int64_t)64 << 20)
/* Shard file headers are written for the full shard and rewritten with the
 * rows of a shorter last shard: padding keeps their length. */
#define HEADER_LEN 128
#define FILE_BUFFER ((size_t)256 << 10)

struct px_dataset_writer {
    char dir[4096];
    px_manifest m; /* inputs, and the shards closed so far */
    int64_t cap_shards;
    int64_t shard_rows, block_rows;
    unsigned char **blk; /* per input: block_rows samples */
    int64_t blk_fill, shard_fill;
    int shard_open;
    FILE **f;
    char **fbuf;
    size_t *header_len;
    uint64_t *sums; /* [blocks][inputs] of the open shard */
    int64_t sums_cap;
    int64_t bytes;
    int state_fd;
    int locked; /* the state file is ours: abort may remove what is in dir */
    char own_file[256];
};

static int is_shard_folder(const char *name) {
    if (strncmp(name, "shard-", 6) || !name[6]) return 0;
    for (const char *p = name + 6; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

/* Removes the shard folders a conversion writes (shard-<digits>, holding
 * .npy files): what an unfinished or replaced conversion left. */
static int remove_shards(const char *dir, const char *own_file, char *err, size_t cap) {
    if (own_file) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, own_file);
        if (unlink(path) && errno != ENOENT)
            return px_err(err, cap, "cannot remove %s: %s", path, strerror(errno));
    }
    DIR *d = opendir(dir);
    if (!d) return px_err(err, cap, "cannot read %s: %s", dir, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d)) != NULL) {
        if (!is_shard_folder(e->d_name)) continue;
        char folder[4400];
        snprintf(folder, sizeof folder, "%s/%s", dir, e->d_name);
        DIR *s = opendir(folder);
        if (!s) continue;
        struct dirent *f;
        while ((f = readdir(s)) != NULL) {
            size_t n = strlen(f->d_name);
            if (n < 5 || strcmp(f->d_name + n - 4, ".npy")) continue;
            char file[4700];
            snprintf(file, sizeof file, "%s/%s", folder, f->d_name);
            unlink(file);
        }
        closedir(s);
        if (rmdir(folder))
            rc = px_err(err, cap, "cannot remove %s: %s (files there that are not a shard's?)",
                        folder, strerror(errno));
    }
    closedir(d);
    return rc;
}

/* Whether dir has entries besides the ones a dataset conversion makes. */
static int has_foreign_entries(const char *dir, const char *own_file) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int foreign = 0;
    while (!foreign && (e = readdir(d)) != NULL)
        foreign = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
                  !is_shard_folder(e->d_name) && strcmp(e->d_name, PX_MANIFEST_FILE) &&
                  strcmp(e->d_name, PX_CONVERT_STATE_FILE) &&
                  (!own_file || strcmp(e->d_name, own_file)) &&
                  strncmp(e->d_name, PX_MANIFEST_FILE ".tmp.", sizeof PX_MANIFEST_FILE + 4);
    closedir(d);
    return foreign;
}

static int path_exists(const char *dir, const char *name) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

/* Makes dir ours: created, or an unfinished conversion taken over, or a
 * finished dataset replaced (overwrite). The state file is created and
 * locked before anything is removed. */
static int claim_dir(px_dataset_writer *w, const px_writer_opts *o, char *err, size_t cap) {
    const char *dir = w->dir;
    if (mkdir(dir, 0777) && errno != EEXIST)
        return px_err(err, cap, "cannot create %s: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) return px_err(err, cap, "%s is not a folder", dir);
    int finished = path_exists(dir, PX_MANIFEST_FILE);
    int unfinished = path_exists(dir, PX_CONVERT_STATE_FILE);
    if (finished && !o->overwrite)
        return px_err(err, cap,
                      "%s already holds a dataset (%s): give --overwrite to replace it, or write "
                      "to another folder",
                      dir, PX_MANIFEST_FILE);
    if (has_foreign_entries(dir, o->own_file))
        return px_err(err, cap,
                      "%s holds files that are not a Parallax dataset: convert into an empty or "
                      "new folder",
                      dir);
    char state[4400];
    snprintf(state, sizeof state, "%s/%s", dir, PX_CONVERT_STATE_FILE);
    w->state_fd = open(state, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (w->state_fd < 0) return px_err(err, cap, "cannot create %s: %s", state, strerror(errno));
    if (flock(w->state_fd, LOCK_EX | LOCK_NB))
        return px_err(err, cap, "another conversion is writing %s (it holds %s)", dir, state);
    w->locked = 1;
    char note[128];
    int n = snprintf(note, sizeof note, "parallaxc data: conversion in progress (pid %d)\n",
                     (int)getpid());
    if (ftruncate(w->state_fd, 0) || write(w->state_fd, note, (size_t)n) != n || fsync(w->state_fd))
        return px_err(err, cap, "cannot write %s: %s", state, strerror(errno));
    if (finished) {
        char manifest[4400];
        snprintf(manifest, sizeof manifest, "%s/%s", dir, PX_MANIFEST_FILE);
        if (unlink(manifest))
            return px_err(err, cap, "cannot remove %s: %s", manifest, strerror(errno));
    } else if (unfinished && !o->quiet) {
        fprintf(stderr, "note: %s holds an unfinished conversion: starting it over\n", dir);
    }
    return remove_shards(dir, o->own_file, err, cap);
}

int px_writer_open(px_dataset_writer **out, const px_writer_opts *o, const px_ds_input *inputs,
                   int n_inputs, char *err, size_t cap) {
    *out = NULL;
    px_dataset_writer *w = calloc(1, sizeof *w);
    if (!w) return px_err(err, cap, "out of memory");
    w->state_fd = -1;
    snprintf(w->dir, sizeof w->dir, "%s", o->dir);
    snprintf(w->own_file, sizeof w->own_file, "%s", o->own_file ? o->own_file : "");
    w->m.n_inputs = n_inputs;
    w->m.inputs = calloc((size_t)n_inputs, sizeof *w->m.inputs);
    w->blk = calloc((size_t)n_inputs, sizeof *w->blk);
    w->f = calloc((size_t)n_inputs, sizeof *w->f);
    w->fbuf = calloc((size_t)n_inputs, sizeof *w->fbuf);
    w->header_len = calloc((size_t)n_inputs, sizeof *w->header_len);
    if (!w->m.inputs || !w->blk || !w->f || !w->fbuf || !w->header_len) {
        px_writer_abort(w);
        return px_err(err, cap, "out of memory");
    }
    int64_t row_bytes = 0;
    for (int i = 0; i < n_inputs; i++) {
        w->m.inputs[i] = inputs[i];
        row_bytes += inputs[i].sample_bytes;
    }
    if (row_bytes < 1) row_bytes = 1;
    w->block_rows = o->block_rows;
    if (w->block_rows <= 0)
        for (w->block_rows = 1; 2 * w->block_rows * row_bytes <= DEFAULT_BLOCK_BYTES;)
            w->block_rows *= 2;
    w->shard_rows = o->shard_rows;
    if (w->shard_rows <= 0) {
        w->shard_rows = DEFAULT_SHARD_BYTES / row_bytes / w->block_rows * w->block_rows;
        if (w->shard_rows < w->block_rows) w->shard_rows = w->block_rows;
    }
    if (w->block_rows > w->shard_rows) w->block_rows = w->shard_rows;
    w->m.block_rows = w->block_rows;
    for (int i = 0; i < n_inputs; i++) {
        w->blk[i] = malloc((size_t)(w->block_rows * inputs[i].sample_bytes) + 1);
        w->fbuf[i] = malloc(FILE_BUFFER);
        if (!w->blk[i] || !w->fbuf[i]) {
            px_writer_abort(w);
            return px_err(err, cap, "out of memory");
        }
    }
    if (claim_dir(w, o, err, cap)) {
        px_writer_abort(w); /* removes nothing unless the state file is ours */
        return -1;
    }
    *out = w;
    return 0;
}

unsigned char *px_writer_row(px_dataset_writer *w, int i) {
    return w->blk[i] + w->blk_fill * w->m.inputs[i].sample_bytes;
}

void px_writer_rows(px_dataset_writer *w, unsigned char **row) {
    for (int i = 0; i < w->m.n_inputs; i++)
        row[i] = w->blk[i] + w->blk_fill * w->m.inputs[i].sample_bytes;
}

static void shard_folder(const px_dataset_writer *w, int64_t shard, char *out, size_t cap) {
    snprintf(out, cap, "%s/shard-%05lld", w->dir, (long long)shard);
}

static int open_shard(px_dataset_writer *w, char *err, size_t cap) {
    char folder[4200];
    shard_folder(w, w->m.n_shards, folder, sizeof folder);
    if (mkdir(folder, 0777))
        return px_err(err, cap, "cannot create %s: %s", folder, strerror(errno));
    for (int i = 0; i < w->m.n_inputs; i++) {
        const px_ds_input *in = &w->m.inputs[i];
        char path[4800];
        px_data_file_name(path, sizeof path, folder, in->name, ".npy");
        w->f[i] = fopen(path, "wbx");
        if (!w->f[i]) return px_err(err, cap, "cannot create %s: %s", path, strerror(errno));
        setvbuf(w->f[i], w->fbuf[i], _IOFBF, FILE_BUFFER);
        int64_t dims[PX_NPY_MAX_RANK];
        dims[0] = w->shard_rows;
        memcpy(dims + 1, in->dims, sizeof(int64_t) * (size_t)in->rank);
        unsigned char hdr[PX_NPY_HEADER_ROOM];
        w->header_len[i] =
            px_npy_header_format(hdr, sizeof hdr, in->dtype, in->rank + 1, dims, HEADER_LEN);
        if (!w->header_len[i] || fwrite(hdr, 1, w->header_len[i], w->f[i]) != w->header_len[i])
            return px_err(err, cap, "cannot write %s: %s", path, strerror(errno));
    }
    w->shard_open = 1;
    w->shard_fill = 0;
    return 0;
}

static int flush_block(px_dataset_writer *w, char *err, size_t cap) {
    if (!w->blk_fill) return 0;
    int64_t blocks = px_shard_blocks(w->shard_fill, w->block_rows);
    if (blocks * w->m.n_inputs > w->sums_cap) {
        int64_t c = 2 * blocks * w->m.n_inputs + 64;
        uint64_t *grown = realloc(w->sums, sizeof *grown * (size_t)c);
        if (!grown) return px_err(err, cap, "out of memory");
        w->sums = grown;
        w->sums_cap = c;
    }
    for (int i = 0; i < w->m.n_inputs; i++) {
        size_t n = (size_t)(w->blk_fill * w->m.inputs[i].sample_bytes);
        w->sums[(blocks - 1) * w->m.n_inputs + i] = px_block_checksum(w->blk[i], n);
        if (fwrite(w->blk[i], 1, n, w->f[i]) != n)
            return px_err(err, cap, "cannot write shard %lld of %s: %s", (long long)w->m.n_shards,
                          w->dir, strerror(errno));
        w->bytes += (int64_t)n;
    }
    w->blk_fill = 0;
    return 0;
}

/* checksums.npy of the open shard; its hash into *hash. */
static int write_sums(px_dataset_writer *w, const char *folder, uint64_t *hash, char *err,
                      size_t cap) {
    int64_t blocks = px_shard_blocks(w->shard_fill, w->block_rows);
    int64_t dims[2] = {blocks, w->m.n_inputs};
    unsigned char hdr[PX_NPY_HEADER_ROOM];
    size_t hlen = px_npy_header_format(hdr, sizeof hdr, 13, 2, dims, 0);
    size_t n = sizeof(uint64_t) * (size_t)(blocks * w->m.n_inputs);
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", folder, PX_CHECKSUMS_FILE);
    FILE *f = fopen(path, "wbx");
    if (!f) return px_err(err, cap, "cannot create %s: %s", path, strerror(errno));
    int ok = hlen && fwrite(hdr, 1, hlen, f) == hlen && fwrite(w->sums, 1, n, f) == n;
    if (fclose(f) || !ok) return px_err(err, cap, "cannot write %s: %s", path, strerror(errno));
    /* The hash of the file's bytes, as the reader computes it. */
    unsigned char *all = malloc(hlen + n + 1);
    if (!all) return px_err(err, cap, "out of memory");
    memcpy(all, hdr, hlen);
    memcpy(all + hlen, w->sums, n);
    *hash = px_hash64(PX_HASH64_INIT, all, hlen + n);
    free(all);
    return 0;
}

static int close_shard(px_dataset_writer *w, char *err, size_t cap) {
    if (!w->shard_open) return 0;
    if (flush_block(w, err, cap)) return -1;
    char folder[4200];
    shard_folder(w, w->m.n_shards, folder, sizeof folder);
    for (int i = 0; i < w->m.n_inputs; i++) {
        const px_ds_input *in = &w->m.inputs[i];
        int ok = fflush(w->f[i]) == 0;
        if (ok && w->shard_fill != w->shard_rows) {
            int64_t dims[PX_NPY_MAX_RANK];
            dims[0] = w->shard_fill;
            memcpy(dims + 1, in->dims, sizeof(int64_t) * (size_t)in->rank);
            unsigned char hdr[PX_NPY_HEADER_ROOM];
            size_t hl =
                px_npy_header_format(hdr, sizeof hdr, in->dtype, in->rank + 1, dims, HEADER_LEN);
            ok = hl == w->header_len[i] && pwrite(fileno(w->f[i]), hdr, hl, 0) == (ssize_t)hl;
        }
        ok = fclose(w->f[i]) == 0 && ok;
        w->f[i] = NULL;
        if (!ok) return px_err(err, cap, "cannot write shard %s: %s", folder, strerror(errno));
    }
    if (w->m.n_shards == w->cap_shards) {
        int64_t c = w->cap_shards ? 2 * w->cap_shards : 64;
        px_ds_shard *grown = realloc(w->m.shards, sizeof *grown * (size_t)c);
        if (!grown) return px_err(err, cap, "out of memory");
        w->m.shards = grown;
        w->cap_shards = c;
    }
    px_ds_shard *s = &w->m.shards[w->m.n_shards];
    memset(s, 0, sizeof *s);
    s->file_bytes = calloc((size_t)w->m.n_inputs, sizeof *s->file_bytes);
    if (!s->file_bytes) return px_err(err, cap, "out of memory");
    w->m.n_shards++;
    snprintf(s->name, sizeof s->name, "shard-%05lld", (long long)(w->m.n_shards - 1));
    s->rows = w->shard_fill;
    s->first = w->m.samples;
    w->m.samples += s->rows;
    for (int i = 0; i < w->m.n_inputs; i++)
        s->file_bytes[i] = (int64_t)w->header_len[i] + s->rows * w->m.inputs[i].sample_bytes;
    w->shard_open = 0;
    return write_sums(w, folder, &s->checksums_hash, err, cap);
}

int px_writer_commit(px_dataset_writer *w, char *err, size_t cap) {
    if (!w->shard_open && open_shard(w, err, cap)) return -1;
    w->blk_fill++;
    w->shard_fill++;
    if (w->blk_fill == w->block_rows && flush_block(w, err, cap)) return -1;
    if (w->shard_fill == w->shard_rows) return close_shard(w, err, cap);
    return 0;
}

static void close_files(px_dataset_writer *w) {
    for (int i = 0; w->f && i < w->m.n_inputs; i++)
        if (w->f[i]) {
            fclose(w->f[i]);
            w->f[i] = NULL;
        }
}

static void free_writer(px_dataset_writer *w) {
    close_files(w);
    for (int i = 0; i < w->m.n_inputs; i++) {
        if (w->blk) free(w->blk[i]);
        if (w->fbuf) free(w->fbuf[i]);
    }
    free(w->blk);
    free(w->fbuf);
    free(w->f);
    free(w->header_len);
    free(w->sums);
    if (w->state_fd >= 0) close(w->state_fd);
    px_manifest_free(&w->m);
    free(w);
}

static void remove_state(px_dataset_writer *w) {
    char state[4400];
    snprintf(state, sizeof state, "%s/%s", w->dir, PX_CONVERT_STATE_FILE);
    unlink(state);
}

int px_writer_finish(px_dataset_writer *w, char *err, size_t cap) {
    int rc = close_shard(w, err, cap);
    if (!rc && w->m.samples == 0) rc = px_err(err, cap, "no samples to write into %s", w->dir);
    /* The shards reach the disk before the manifest that vouches for them. */
    int dfd = rc ? -1 : open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!rc && (dfd < 0 || syncfs(dfd)))
        rc = px_err(err, cap, "cannot sync %s: %s", w->dir, strerror(errno));
    if (!rc) {
        size_t len;
        char *text = px_manifest_format(&w->m, &len);
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", w->dir, PX_MANIFEST_FILE);
        px_atomic_file af;
        if (!text)
            rc = px_err(err, cap, "out of memory");
        else if (px_atomic_open(&af, path, err, cap))
            rc = -1;
        else if (fwrite(text, 1, len, af.f) != len) {
            px_atomic_abort(&af);
            rc = px_err(err, cap, "cannot write %s: %s", path, strerror(errno));
        } else {
            rc = px_atomic_commit(&af, err, cap);
        }
        free(text);
    }
    if (!rc) {
        remove_state(w);
        if (fsync(dfd)) rc = px_err(err, cap, "cannot sync %s: %s", w->dir, strerror(errno));
    }
    if (dfd >= 0) close(dfd);
    if (rc) {
        px_writer_abort(w);
        return -1;
    }
    free_writer(w);
    return 0;
}

void px_writer_abort(px_dataset_writer *w) {
    if (!w) return;
    close_files(w);
    if (w->locked) {
        char err[256];
        (void)remove_shards(w->dir, w->own_file[0] ? w->own_file : NULL, err, sizeof err);
        remove_state(w);
    }
    free_writer(w);
}

int64_t px_writer_samples(const px_dataset_writer *w) {
    return w->m.samples + (w->shard_open ? w->shard_fill : 0);
}

int64_t px_writer_shards(const px_dataset_writer *w) {
    return w->m.n_shards + w->shard_open;
}

int64_t px_writer_bytes(const px_dataset_writer *w) {
    return w->bytes;
}

const char *px_writer_dir(const px_dataset_writer *w) {
    return w->dir;
}
