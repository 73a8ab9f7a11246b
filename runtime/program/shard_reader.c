#include "shard_reader.h"

#include "bag_offsets.h"
#include "data.h"
#include "dataset_manifest.h"
#include "err_msg.h"
#include "hash64.h"
#include "lane_order.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct shard_state {
    int open;
    int64_t *data_off; /* per used input: where the rows start in its file */
    int *fd;           /* per used input: kept open, or -1 */
    uint64_t *sums;    /* [blocks][used inputs] */
} shard_state;

typedef struct lane_io {
    px_lane lane;
    int64_t blk_x0, blk_n; /* stream positions [x0, x0 + n) of the cached block (n 0: none) */
    unsigned char *blk;    /* block_rows records */
    unsigned char *slots;  /* the shuffle buffer: K records */
} lane_io;

struct px_shard_reader {
    px_manifest m;
    char dir[4096];
    const px_program_desc *p;
    int n_used;        /* the program's inputs */
    int *man_input;    /* per used input: its index in the manifest */
    int64_t *in_bytes; /* per used input: bytes of a sample */
    int64_t *in_off;   /* its offset in a record */
    int64_t row_bytes; /* a record: one sample of every used input */
    px_lane_plan plan;
    int64_t *shard_rows;
    int rank, ranks;
    /* This rank's lanes: b (its batch) for each of the step's k micro-
     * batches, lane m*b + j here being lane (m*ranks + rank)*b + j of the
     * global batch. */
    int64_t b, k, n_lanes;
    lane_io *lanes;
    shard_state *shards;
    unsigned char *col; /* a block of one input, as read */
    unsigned char *batch[2];
    int64_t batch_step[2];
    int64_t produced; /* the last step produced, -1: none */
    int64_t bytes_read;
    /* Data files stay open while their shard is (the kernel's read-ahead
     * follows each lane's stream), up to half the descriptor limit: a rank
     * may read hundreds of shards of dozens of inputs an epoch. */
    int64_t fds_kept, fds_budget;
};

static void file_path(const px_shard_reader *r, int64_t shard, int man_input, char *out,
                      size_t cap) {
    char folder[4400];
    snprintf(folder, sizeof folder, "%s/%s", r->dir, r->m.shards[shard].name);
    if (man_input < 0)
        snprintf(out, cap, "%s/%s", folder, PX_CHECKSUMS_FILE);
    else
        px_data_file_name(out, cap, folder, r->m.inputs[man_input].name, ".npy");
}

/* Reads n bytes at off; -1 with a message on a short read. */
static int read_at(px_shard_reader *r, int fd, void *dst, size_t n, int64_t off, const char *path,
                   char *err, size_t cap) {
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)dst + got, n - got, (off_t)(off + (int64_t)got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return px_err(err, cap, "cannot read %s: %s", path,
                          k < 0 ? strerror(errno) : "the file is shorter than the manifest says");
        got += (size_t)k;
    }
    r->bytes_read += (int64_t)n;
    return 0;
}

static int open_file(const char *path, int64_t want_bytes, char *err, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return px_err(err, cap, "cannot open %s: %s (a shard of the dataset is missing)", path,
                      strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return px_err(err, cap, "%s is not a regular file", path);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (want_bytes >= 0 && st.st_size != want_bytes) {
        close(fd);
        return px_err(err, cap,
                      "%s holds %lld bytes, the manifest says %lld: the shard was truncated or "
                      "rewritten after conversion",
                      path, (long long)st.st_size, (long long)want_bytes);
    }
    return fd;
}

/* A descriptor of used input u of shard s: the shard's, opened and kept
 * when the budget allows, else opened for this read only (*transient). */
static int data_fd(px_shard_reader *r, int64_t s, int u, int *transient, char *err, size_t cap) {
    shard_state *st = &r->shards[s];
    *transient = 0;
    if (st->fd && st->fd[u] >= 0) return st->fd[u];
    char path[4800];
    file_path(r, s, r->man_input[u], path, sizeof path);
    int fd = open_file(path, r->m.shards[s].file_bytes[r->man_input[u]], err, cap);
    if (fd < 0) return -1;
    if (!st->fd || r->fds_kept >= r->fds_budget) {
        *transient = 1;
        return fd;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    st->fd[u] = fd;
    r->fds_kept++;
    return fd;
}

static void fd_done(int fd, int transient) {
    if (transient && fd >= 0) close(fd);
}

/* The header of a shard's file: dtype and shape [rows, sample dims...]. */
static int check_header(px_shard_reader *r, int fd, const char *path, int man_input, int64_t rows,
                        int64_t file_bytes, int64_t *data_off, char *err, size_t cap) {
    /* The fixed part says how long the header is: read that much only. */
    unsigned char head[4096];
    size_t n = file_bytes < 12 ? (size_t)file_bytes : 12;
    if (read_at(r, fd, head, n, 0, path, err, cap)) return -1;
    if (n == 12 && !memcmp(head, "\x93NUMPY", 6)) {
        size_t hlen = head[6] == 1 ? 10 + ((size_t)head[8] | (size_t)head[9] << 8)
                                   : 12 + ((size_t)head[8] | (size_t)head[9] << 8 |
                                           (size_t)head[10] << 16 | (size_t)head[11] << 24);
        if (hlen > sizeof head) hlen = sizeof head;
        if ((int64_t)hlen > file_bytes) hlen = (size_t)file_bytes;
        if (hlen > n && read_at(r, fd, head + n, hlen - n, (int64_t)n, path, err, cap)) return -1;
        n = hlen > n ? hlen : n;
    }
    px_array a;
    size_t off;
    if (px_npy_header_parse(head, n, &a, &off, path, err, cap)) return -1;
    const px_ds_input *in = &r->m.inputs[man_input];
    int ok = a.dtype == in->dtype && a.rank == in->rank + 1 && a.dims[0] == rows;
    for (int d = 0; ok && d < in->rank; d++) ok = a.dims[d + 1] == in->dims[d];
    if (!ok)
        return px_err(err, cap,
                      "%s: its .npy header does not match the manifest (%s, %lld rows of shape "
                      "as listed): the shard was rewritten after conversion",
                      path, px_rt_dtype_name(in->dtype), (long long)rows);
    if ((int64_t)off + rows * in->sample_bytes != file_bytes)
        return px_err(err, cap, "%s: the file size does not match its .npy header", path);
    *data_off = (int64_t)off;
    return 0;
}

/* Reads <shard>/checksums.npy, checks it against the manifest and keeps
 * the used inputs' columns. */
static int load_sums(px_shard_reader *r, int64_t s, shard_state *st, char *err, size_t cap) {
    const px_ds_shard *sh = &r->m.shards[s];
    char path[4800];
    file_path(r, s, -1, path, sizeof path);
    int fd = open_file(path, -1, err, cap);
    if (fd < 0) return -1;
    int64_t blocks = px_shard_blocks(sh->rows, r->m.block_rows);
    struct stat stt;
    int rc = -1;
    unsigned char *bytes = NULL;
    if (fstat(fd, &stt) || stt.st_size > PX_NPY_HEADER_ROOM * 8 + blocks * r->m.n_inputs * 8) {
        px_err(err, cap, "%s is not the checksum table of this shard (size %lld)", path,
               (long long)stt.st_size);
        goto done;
    }
    bytes = malloc((size_t)stt.st_size + 1);
    if (!bytes) {
        px_err(err, cap, "out of memory for %s", path);
        goto done;
    }
    if (read_at(r, fd, bytes, (size_t)stt.st_size, 0, path, err, cap)) goto done;
    if (px_hash64(PX_HASH64_INIT, bytes, (size_t)stt.st_size) != sh->checksums_hash) {
        px_err(err, cap,
               "%s does not match the manifest %s/%s: the shard belongs to another dataset (or "
               "the manifest does)",
               path, r->dir, PX_MANIFEST_FILE);
        goto done;
    }
    px_array a;
    size_t off;
    if (px_npy_header_parse(bytes, (size_t)stt.st_size, &a, &off, path, err, cap)) goto done;
    if (a.dtype != 13 || a.rank != 2 || a.dims[0] != blocks || a.dims[1] != r->m.n_inputs ||
        off + a.nbytes != (size_t)stt.st_size) {
        px_err(err, cap, "%s is not a uint64 [%lld, %d] array", path, (long long)blocks,
               r->m.n_inputs);
        goto done;
    }
    st->sums = malloc(sizeof *st->sums * (size_t)(blocks * r->n_used) + 1);
    if (!st->sums) {
        px_err(err, cap, "out of memory for %s", path);
        goto done;
    }
    for (int64_t k = 0; k < blocks; k++)
        for (int u = 0; u < r->n_used; u++)
            memcpy(&st->sums[k * r->n_used + u],
                   bytes + off + 8 * (size_t)(k * r->m.n_inputs + r->man_input[u]), 8);
    rc = 0;
done:
    free(bytes);
    close(fd);
    return rc;
}

static void close_shard(px_shard_reader *r, int64_t s) {
    shard_state *st = &r->shards[s];
    for (int u = 0; st->fd && u < r->n_used; u++)
        if (st->fd[u] >= 0) {
            close(st->fd[u]);
            r->fds_kept--;
        }
    free(st->fd);
    free(st->data_off);
    free(st->sums);
    memset(st, 0, sizeof *st);
}

/* Checks shard s (sizes, headers, checksum table) and keeps what reading
 * it needs. */
static int open_shard(px_shard_reader *r, int64_t s, char *err, size_t cap) {
    shard_state *st = &r->shards[s];
    if (st->open) return 0;
    st->data_off = calloc((size_t)r->n_used, sizeof *st->data_off);
    if (!st->data_off) return px_err(err, cap, "out of memory");
    const px_ds_shard *sh = &r->m.shards[s];
    /* The checksum table first: a shard of another dataset fails there,
     * naming the mix-up rather than a file size. */
    if (load_sums(r, s, st, err, cap)) {
        close_shard(r, s);
        return -1;
    }
    st->fd = malloc(sizeof *st->fd * (size_t)r->n_used);
    if (!st->fd) return px_err(err, cap, "out of memory");
    for (int u = 0; u < r->n_used; u++) st->fd[u] = -1;
    for (int u = 0; u < r->n_used; u++) {
        int transient, fd = data_fd(r, s, u, &transient, err, cap);
        char path[4800];
        file_path(r, s, r->man_input[u], path, sizeof path);
        int bad =
            fd < 0 || check_header(r, fd, path, r->man_input[u], sh->rows,
                                   sh->file_bytes[r->man_input[u]], &st->data_off[u], err, cap);
        fd_done(fd, transient);
        if (bad) {
            close_shard(r, s);
            return -1;
        }
    }
    st->open = 1;
    return 0;
}

/* The lanes of this rank read one stretch of stream positions per micro-
 * batch this epoch: the shards there stay open, the others are closed. */
static int open_epoch_shards(px_shard_reader *r, char *err, size_t cap) {
    const px_lane_plan *pl = &r->plan;
    char *need = calloc((size_t)r->m.n_shards, 1);
    if (!need) return px_err(err, cap, "out of memory");
    for (int64_t m = 0; m < r->k; m++) {
        int64_t lo = (m * r->ranks + r->rank) * r->b * pl->steps_per_epoch;
        int64_t hi = lo + r->b * pl->steps_per_epoch;
        for (int64_t q = 0; q < pl->n_shards; q++)
            if (pl->start[q] < hi && pl->start[q + 1] > lo) need[pl->order[q]] = 1;
    }
    for (int64_t s = 0; s < r->m.n_shards; s++)
        if (!need[s] && r->shards[s].open) close_shard(r, s);
    int rc = 0;
    for (int64_t k = 0; k < pl->n_shards && !rc; k++)
        if (need[pl->order[k]]) rc = open_shard(r, pl->order[k], err, cap);
    free(need);
    return rc;
}

static int64_t load_index(const unsigned char *p, int dtype) {
    if (dtype == 6) {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Every index of used input u in rows [row0, row0 + n) of shard s. */
static int check_indices(px_shard_reader *r, int64_t s, int u, int64_t row0, int64_t n,
                         const unsigned char *col, char *err, size_t cap) {
    const px_program_desc *p = r->p;
    for (int64_t c = 0; c < p->n_index_checks; c++) {
        const px_index_check *k = &p->index_checks[c];
        if (k->input != u || (p->inputs[u].dtype != 6 && p->inputs[u].dtype != 7)) continue;
        int64_t w = p->inputs[u].dtype == 6 ? 4 : 8, per = r->in_bytes[u] / w;
        for (int64_t i = 0; i < n * per; i++) {
            int64_t v = load_index(col + i * w, (int)p->inputs[u].dtype);
            if (v >= k->lo && v < k->hi) continue;
            char path[4800];
            file_path(r, s, r->man_input[u], path, sizeof path);
            char target[600];
            px_index_check_target(k, target, sizeof target);
            return px_err(
                err, cap,
                "input '%s' (%s), sample %lld of the dataset (row %lld of the shard): "
                "%s %lld is out of range [%lld, %lld) for %s",
                p->inputs[u].name, path, (long long)(r->m.shards[s].first + row0 + i / per),
                (long long)(row0 + i / per), k->kind == PX_CHECK_BAG_OFFSETS ? "offset" : "index",
                (long long)v, (long long)k->lo, (long long)k->hi, target);
        }
    }
    return 0;
}

/* Reads block `blk` of shard s into the lane's records, each input's rows
 * checked against their checksum first. */
static int load_block(px_shard_reader *r, lane_io *li, int64_t s, int64_t blk, char *err,
                      size_t cap) {
    const px_ds_shard *sh = &r->m.shards[s];
    shard_state *st = &r->shards[s];
    if (!st->open && open_shard(r, s, err, cap)) return -1;
    int64_t R = r->m.block_rows, row0 = blk * R, n = sh->rows - row0 < R ? sh->rows - row0 : R;
    if (!li->blk) {
        li->blk = malloc((size_t)(R * r->row_bytes) + 1);
        if (!li->blk) return px_err(err, cap, "out of memory for the data blocks");
    }
    for (int u = 0; u < r->n_used; u++) {
        int64_t w = r->in_bytes[u];
        int transient, fd = data_fd(r, s, u, &transient, err, cap);
        char path[4800];
        file_path(r, s, r->man_input[u], path, sizeof path);
        int bad = fd < 0 || read_at(r, fd, r->col, (size_t)(n * w), st->data_off[u] + row0 * w,
                                    path, err, cap);
        fd_done(fd, transient);
        if (bad) return -1;
        if (px_block_checksum(r->col, (size_t)(n * w)) != st->sums[blk * r->n_used + u])
            return px_err(err, cap,
                          "%s: rows %lld..%lld do not match their checksum: the shard was altered "
                          "after conversion",
                          path, (long long)row0, (long long)(row0 + n - 1));
        if (check_indices(r, s, u, row0, n, r->col, err, cap)) return -1;
        for (int64_t i = 0; i < n; i++)
            memcpy(li->blk + i * r->row_bytes + r->in_off[u], r->col + i * w, (size_t)w);
    }
    return 0;
}

/* The record of lane position x of lane li (current epoch). */
static const unsigned char *sample_at(px_shard_reader *r, lane_io *li, int64_t x, char *err,
                                      size_t cap) {
    int64_t pos = px_lane_stream_position(&r->plan, li->lane.lane, x);
    if (pos < li->blk_x0 || pos >= li->blk_x0 + li->blk_n) {
        int64_t s, row, run;
        px_lane_plan_locate(&r->plan, pos, &s, &row, &run);
        int64_t R = r->m.block_rows, blk = row / R;
        li->blk_n = 0;
        if (load_block(r, li, s, blk, err, cap)) return NULL;
        li->blk_x0 = pos - (row - blk * R);
        int64_t n = r->m.shards[s].rows - blk * R;
        li->blk_n = n < R ? n : R;
    }
    return li->blk + (pos - li->blk_x0) * r->row_bytes;
}

/* Positions the lanes at step t of epoch e (t outputs taken). */
static int seek(px_shard_reader *r, int64_t e, int64_t t, char *err, size_t cap) {
    px_lane_plan *pl = &r->plan;
    if (pl->epoch != e) /* the cached blocks' stream positions change */
        for (int64_t j = 0; j < r->n_lanes; j++) r->lanes[j].blk_n = 0;
    px_lane_plan_epoch(pl, e);
    if (open_epoch_shards(r, err, cap)) return -1;
    int64_t K = pl->slots;
    int64_t *order = K ? malloc(sizeof *order * (size_t)K) : NULL;
    if (K && !order) return px_err(err, cap, "out of memory");
    int rc = 0;
    for (int64_t j = 0; j < r->n_lanes && !rc; j++) {
        lane_io *li = &r->lanes[j];
        px_lane_begin(&li->lane, pl);
        if (!K) {
            li->lane.taken = t;
            continue;
        }
        /* Replays the draws (positions only), then loads what the buffer
         * holds, in position order so that blocks are read once. */
        for (int64_t i = 0; i < t; i++) (void)px_lane_next(&li->lane, pl);
        for (int64_t k = 0; k < li->lane.live; k++) order[k] = k;
        for (int64_t k = 1; k < li->lane.live; k++) /* insertion sort by position */
            for (int64_t q = k; q > 0 && li->lane.slot[order[q - 1]] > li->lane.slot[order[q]];
                 q--) {
                int64_t tmp = order[q];
                order[q] = order[q - 1];
                order[q - 1] = tmp;
            }
        if (!li->slots) {
            li->slots = malloc((size_t)(K * r->row_bytes) + 1);
            if (!li->slots) rc = px_err(err, cap, "out of memory for the shuffle buffers");
        }
        for (int64_t k = 0; k < li->lane.live && !rc; k++) {
            const unsigned char *rec = sample_at(r, li, li->lane.slot[order[k]], err, cap);
            if (!rec)
                rc = -1;
            else
                memcpy(li->slots + order[k] * r->row_bytes, rec, (size_t)r->row_bytes);
        }
    }
    free(order);
    return rc;
}

/* Step s's records of every lane of this rank into batch buffer `into`. */
static int produce(px_shard_reader *r, int64_t s, unsigned char *into, char *err, size_t cap) {
    px_lane_plan *pl = &r->plan;
    int64_t E = pl->steps_per_epoch, e = s / E, t = s % E;
    if (s != r->produced + 1 || t == 0 || pl->epoch != e)
        if (seek(r, e, t, err, cap)) return -1;
    for (int64_t j = 0; j < r->n_lanes; j++) {
        lane_io *li = &r->lanes[j];
        px_lane_step st = px_lane_next(&li->lane, pl);
        unsigned char *dst = into + j * r->row_bytes;
        if (st.slot < 0) {
            const unsigned char *rec = sample_at(r, li, st.position, err, cap);
            if (!rec) return -1;
            memcpy(dst, rec, (size_t)r->row_bytes);
            continue;
        }
        unsigned char *slot = li->slots + st.slot * r->row_bytes;
        memcpy(dst, slot, (size_t)r->row_bytes);
        if (st.refill) {
            const unsigned char *rec = sample_at(r, li, li->lane.slot[st.slot], err, cap);
            if (!rec) return -1;
            memcpy(slot, rec, (size_t)r->row_bytes);
        } else if (st.moved_from >= 0) {
            memcpy(slot, li->slots + st.moved_from * r->row_bytes, (size_t)r->row_bytes);
        }
    }
    r->produced = s;
    return 0;
}

int px_shards_fill(px_shard_reader *r, int64_t step, int64_t m, int64_t input, void *out, char *err,
                   size_t cap) {
    int k = r->batch_step[0] == step ? 0 : r->batch_step[1] == step ? 1 : -1;
    if (k < 0) {
        k = (int)(step & 1);
        r->batch_step[k] = -1;
        if (produce(r, step, r->batch[k], err, cap)) return -1;
        r->batch_step[k] = step;
    }
    int64_t w = r->in_bytes[input];
    const unsigned char *src = r->batch[k] + m * r->b * r->row_bytes + r->in_off[input];
    for (int64_t j = 0; j < r->b; j++)
        memcpy((char *)out + j * w, src + j * r->row_bytes, (size_t)w);
    return 0;
}

/* Every program input in the manifest with its dtype and sample shape. */
static int match_inputs(px_shard_reader *r, char *err, size_t cap) {
    const px_program_desc *p = r->p;
    char where[4200];
    snprintf(where, sizeof where, "%s/%s", r->dir, PX_MANIFEST_FILE);
    for (int u = 0; u < r->n_used; u++) {
        const px_io_desc *in = &p->inputs[u];
        int k = px_manifest_input(&r->m, in->name);
        if (k < 0)
            return px_err(err, cap, "no data for input '%s': the dataset %s does not list it",
                          in->name, where);
        const px_ds_input *d = &r->m.inputs[k];
        int dtype = d->dtype == 4 && in->dtype == 16 ? 16 : d->dtype; /* bfloat16 as uint16 */
        int ok = dtype == in->dtype && d->rank == in->rank - 1;
        for (int i = 0; ok && i < d->rank; i++) ok = d->dims[i] == in->dims[i + 1];
        if (!ok) {
            char got[256], want[256];
            px_shape_text(got, sizeof got, d->rank, d->dims);
            px_shape_text(want, sizeof want, (int)in->rank - 1, in->dims + 1);
            return px_err(err, cap,
                          "input '%s' in %s holds %s samples of shape %s; the model expects %s "
                          "samples of shape %s",
                          in->name, where, px_rt_dtype_name(d->dtype), got,
                          px_rt_dtype_name((int)in->dtype), want);
        }
        r->man_input[u] = k;
        r->in_bytes[u] = d->sample_bytes;
        r->in_off[u] = r->row_bytes;
        r->row_bytes += d->sample_bytes;
    }
    return 0;
}

int px_shards_open(px_shard_reader **out, const px_program_desc *p, const px_shards_opts *o,
                   char *err, size_t cap) {
    *out = NULL;
    px_shard_reader *r = calloc(1, sizeof *r);
    if (!r) return px_err(err, cap, "out of memory");
    struct rlimit lim;
    r->fds_budget = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                        ? (int64_t)lim.rlim_cur / 2
                        : 512;
    r->batch_step[0] = r->batch_step[1] = -1;
    r->produced = -1;
    r->plan.epoch = -1;
    snprintf(r->dir, sizeof r->dir, "%s", o->dir);
    r->p = p;
    r->rank = o->rank;
    r->ranks = o->ranks;
    r->b = p->batch;
    r->k = o->accumulate > 1 ? o->accumulate : 1;
    r->n_lanes = r->k * r->b;
    r->n_used = (int)p->n_inputs;
    if (px_manifest_read(o->dir, &r->m, err, cap)) goto fail;
    r->bytes_read = px_manifest_bytes(&r->m);
    r->man_input = calloc((size_t)r->n_used + 1, sizeof *r->man_input);
    r->in_bytes = calloc((size_t)r->n_used + 1, sizeof *r->in_bytes);
    r->in_off = calloc((size_t)r->n_used + 1, sizeof *r->in_off);
    r->shards = calloc((size_t)r->m.n_shards, sizeof *r->shards);
    r->shard_rows = malloc(sizeof *r->shard_rows * (size_t)r->m.n_shards);
    r->lanes = calloc((size_t)r->n_lanes, sizeof *r->lanes);
    if (!r->man_input || !r->in_bytes || !r->in_off || !r->shards || !r->shard_rows || !r->lanes) {
        px_err(err, cap, "out of memory");
        goto fail;
    }
    if (match_inputs(r, err, cap)) goto fail;
    int64_t wmax = 1;
    for (int u = 0; u < r->n_used; u++) wmax = r->in_bytes[u] > wmax ? r->in_bytes[u] : wmax;
    r->col = malloc((size_t)(r->m.block_rows * wmax));
    r->batch[0] = malloc((size_t)(r->n_lanes * r->row_bytes) + 1);
    r->batch[1] = malloc((size_t)(r->n_lanes * r->row_bytes) + 1);
    if (!r->col || !r->batch[0] || !r->batch[1]) {
        px_err(err, cap, "out of memory for the data blocks");
        goto fail;
    }
    for (int64_t s = 0; s < r->m.n_shards; s++) r->shard_rows[s] = r->m.shards[s].rows;
    int64_t global_batch = r->k * o->ranks * p->batch;
    if (r->m.samples >= global_batch) {
        if (px_lane_plan_init(&r->plan, r->shard_rows, r->m.n_shards, global_batch, o->shuffle,
                              o->seed, o->shuffle_buffer)) {
            px_err(err, cap, "out of memory for the sample order");
            goto fail;
        }
        for (int64_t j = 0; j < r->n_lanes; j++)
            if (px_lane_alloc(&r->lanes[j].lane, &r->plan,
                              (j / r->b * o->ranks + o->rank) * r->b + j % r->b)) {
                px_err(err, cap, "out of memory for the shuffle buffers");
                goto fail;
            }
    }
    *out = r;
    return 0;
fail:
    px_shards_close(r);
    return -1;
}

int64_t px_shards_samples(const px_shard_reader *r) {
    return r->m.samples;
}

int64_t px_shards_count(const px_shard_reader *r) {
    return r->m.n_shards;
}

uint64_t px_shards_identity(const px_shard_reader *r) {
    return r->m.hash;
}

int64_t px_shards_bytes_read(const px_shard_reader *r) {
    return r->bytes_read;
}

int64_t px_shards_bytes_total(const px_shard_reader *r) {
    int64_t n = 0;
    for (int64_t s = 0; s < r->m.n_shards; s++)
        for (int u = 0; u < r->n_used; u++) n += r->m.shards[s].file_bytes[r->man_input[u]];
    return n;
}

void px_shards_close(px_shard_reader *r) {
    if (!r) return;
    for (int64_t s = 0; r->shards && s < r->m.n_shards; s++) close_shard(r, s);
    for (int64_t j = 0; r->lanes && j < r->n_lanes; j++) {
        px_lane_free(&r->lanes[j].lane);
        free(r->lanes[j].blk);
        free(r->lanes[j].slots);
    }
    px_lane_plan_free(&r->plan);
    free(r->lanes);
    free(r->shards);
    free(r->shard_rows);
    free(r->man_input);
    free(r->in_bytes);
    free(r->in_off);
    free(r->col);
    free(r->batch[0]);
    free(r->batch[1]);
    px_manifest_free(&r->m);
    free(r);
}
