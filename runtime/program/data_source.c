#include "data_source.h"

#include "dataset_manifest.h"
#include "px_kernel.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int exists_in(const char *dir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

int px_source_is_sharded(const char *dir) {
    return exists_in(dir, PX_MANIFEST_FILE);
}

int px_source_open(px_source *s, const px_program_desc *p, const char *dir, const px_source_opts *o,
                   char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    s->dir = dir;
    s->opts = *o;
    s->samples = -1;
    if (px_source_is_sharded(dir)) {
        /* --shuffle-buffer's default: enough to mix within a lane without
         * holding much (65536 samples over all ranks). */
        int64_t buffer = o->shuffle_buffer >= 0 ? o->shuffle_buffer
                         : o->shuffle           ? PX_DEFAULT_SHUFFLE_BUFFER
                                                : 0;
        s->opts.shuffle_buffer = buffer;
        px_shards_opts so = {dir,        o->rank, o->ranks, o->accumulate > 1 ? o->accumulate : 1,
                             o->shuffle, o->seed, buffer};
        if (px_shards_open(&s->shards, p, &so, err, cap)) return -1;
        s->samples = p->n_inputs > 0 ? px_shards_samples(s->shards) : -1;
        return 0;
    }
    if (exists_in(dir, PX_CONVERT_STATE_FILE)) {
        snprintf(err, cap,
                 "%s holds an unfinished conversion (%s is there, %s is not): run the "
                 "parallaxc data command again to finish it",
                 dir, PX_CONVERT_STATE_FILE, PX_MANIFEST_FILE);
        return -1;
    }
    if (o->shuffle_buffer >= 0) {
        snprintf(err, cap,
                 "--shuffle-buffer applies to sharded datasets; %s has no %s (a single-folder "
                 "dataset is permuted whole by --shuffle)",
                 dir, PX_MANIFEST_FILE);
        return -1;
    }
    s->opts.shuffle_buffer = 0;
    if (px_data_open(&s->ds, p, dir, err, cap)) return -1;
    s->samples = s->ds.samples;
    return 0;
}

int px_source_start(px_source *s, int64_t samples, int64_t global_batch) {
    s->samples = samples;
    s->global_batch = global_batch;
    s->steps_per_epoch = samples / global_batch;
    if (s->shards) return 0; /* its order was set up by px_shards_open */
    return px_order_init(&s->order, samples, global_batch, s->opts.shuffle, s->opts.seed);
}

uint64_t px_source_fingerprint(const px_source *s, int64_t i) {
    return s->shards ? px_shards_identity(s->shards) : px_data_fingerprint(&s->ds, i);
}

const char *px_source_path(const px_source *s, int64_t i) {
    return s->shards ? s->dir : s->ds.paths[i];
}

int64_t px_source_epoch(const px_source *s, int64_t step) {
    return step / s->steps_per_epoch;
}

void px_source_fill_input(px_source *s, const px_program_desc *p, int64_t step, int64_t m,
                          int64_t i, void *out) {
    if (!s->shards) {
        int slot = (int)(m * s->opts.ranks + s->opts.rank);
        px_data_fill_input(&s->ds, p, &s->order, step, slot, i, out);
        return;
    }
    char err[8192];
    if (px_shards_fill(s->shards, step, m, i, out, err, sizeof err)) px_rt_fail("%s", err);
}

void px_source_fill(px_source *s, const px_program_desc *p, int64_t step, int64_t m) {
    for (int64_t i = 0; i < p->n_inputs; i++)
        px_source_fill_input(s, p, step, m, i, p->inputs[i].data);
}

int64_t px_source_bytes_read(const px_source *s) {
    return s->shards ? px_shards_bytes_read(s->shards) : px_source_bytes_total(s);
}

int64_t px_source_bytes_total(const px_source *s) {
    if (s->shards) return px_shards_bytes_total(s->shards);
    int64_t n = 0;
    for (int64_t i = 0; i < s->ds.n_inputs; i++) n += (int64_t)s->ds.arrays[i].nbytes;
    return n;
}

void px_source_close(px_source *s) {
    if (s->shards)
        px_shards_close(s->shards);
    else
        px_data_close(&s->ds);
    px_order_free(&s->order);
    memset(s, 0, sizeof *s);
}
