/* Masked products (spmm.h): traversal building, the transposed operands,
 * the split over the rank's threads and the portable inner loops. */
#include "spmm.h"
#include "spmm_isa.h"

#include "kernels/thread_pool.h"
#include "px_kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- traversals ---- */

void px_spm_free(px_spm *s) {
    free(s->ptr);
    free(s->idx);
    memset(s, 0, sizeof *s);
}

int px_spm_build(px_spm *s, const int64_t *pos, int64_t nnz, int64_t out, int64_t in,
                 int w_in_major) {
    memset(s, 0, sizeof *s);
    if (nnz > INT32_MAX || out > INT32_MAX || in > INT32_MAX) return -1;
    s->out = out, s->in = in, s->w_in_major = w_in_major, s->nnz = nnz;
    s->n_panels = (in + PX_SPM_PANEL - 1) / PX_SPM_PANEL;
    int64_t groups = s->n_panels * out;
    s->ptr = calloc((size_t)groups + 1, sizeof *s->ptr);
    s->idx = malloc(sizeof *s->idx * (size_t)(nnz ? nnz : 1));
    int32_t *fill = malloc(sizeof *fill * (size_t)(groups ? groups : 1));
    if (!s->ptr || !s->idx || !fill) {
        free(fill);
        px_spm_free(s);
        return -1;
    }
    int64_t minor = w_in_major ? out : in;
    /* counting sort by (panel, output); ascending positions list each
     * group's inputs ascending in either storage order, so one stable pass
     * keeps them so */
    for (int64_t k = 0; k < nnz; k++) {
        int64_t a = pos[k] / minor, b = pos[k] % minor;
        int64_t o = w_in_major ? b : a, i = w_in_major ? a : b;
        s->ptr[(i / PX_SPM_PANEL) * out + o + 1]++;
    }
    for (int64_t g = 0; g < groups; g++) {
        s->ptr[g + 1] += s->ptr[g];
        fill[g] = s->ptr[g];
    }
    for (int64_t k = 0; k < nnz; k++) {
        int64_t a = pos[k] / minor, b = pos[k] % minor;
        int64_t o = w_in_major ? b : a, i = w_in_major ? a : b;
        s->idx[fill[(i / PX_SPM_PANEL) * out + o]++] = (int32_t)i;
    }
    free(fill);
    return 0;
}

void px_spm_positions(const px_spm *s, int64_t *pos) {
    for (int64_t p = 0; p < s->n_panels; p++)
        for (int64_t o = 0; o < s->out; o++) {
            const int32_t *ptr = s->ptr + p * s->out;
            for (int32_t e = ptr[o]; e < ptr[o + 1]; e++)
                pos[e] = s->w_in_major ? (int64_t)s->idx[e] * s->out + o : o * s->in + s->idx[e];
        }
}

typedef struct pack_job {
    const px_spm *s;
    const float *from;
    float *to;
    int unpack;
} pack_job;

/* Panels [lo, hi): their entries are one contiguous range of vals. */
static void pack_range(void *ctx, int64_t lo, int64_t hi) {
    const pack_job *j = ctx;
    const px_spm *s = j->s;
    for (int64_t p = lo; p < hi; p++)
        for (int64_t o = 0; o < s->out; o++) {
            const int32_t *ptr = s->ptr + p * s->out;
            for (int32_t e = ptr[o]; e < ptr[o + 1]; e++) {
                int64_t at =
                    s->w_in_major ? (int64_t)s->idx[e] * s->out + o : o * s->in + s->idx[e];
                if (j->unpack)
                    j->to[at] = j->from[e];
                else
                    j->to[e] = j->from[at];
            }
        }
}

void px_spm_pack(const px_spm *s, const float *w, float *vals) {
    pack_job j = {s, w, vals, 0};
    px_parallel_for(s->n_panels, 1, pack_range, &j);
}

void px_spm_unpack(const px_spm *s, const float *vals, float *w) {
    pack_job j = {s, vals, w, 1};
    px_parallel_for(s->n_panels, 1, pack_range, &j);
}

/* ---- the portable inner loops (spmm_isa.h's arithmetic, with fmaf) ---- */

static void mul_portable(const px_spm *s, const float *vals, const float *bt, float *ct, int q,
                         int64_t p, int64_t r0, int64_t r1, int first) {
    const int32_t *ptr = s->ptr + p * s->out;
    const int64_t cw = 16 * (int64_t)q;
    float acc[PX_SPM_MAX_CW];
    for (int64_t r = r0; r < r1; r++) {
        int32_t e = ptr[r], end = ptr[r + 1];
        if (e == end && !first) continue;
        float *c = ct + r * cw;
        for (int64_t l = 0; l < cw; l++) acc[l] = first ? 0.0f : c[l];
        for (; e < end; e++) {
            const float *b = bt + (int64_t)s->idx[e] * cw;
            for (int64_t l = 0; l < cw; l++) acc[l] = fmaf(vals[e], b[l], acc[l]);
        }
        memcpy(c, acc, sizeof(float) * (size_t)cw);
    }
}

static void scat_portable(const px_spm *s, const float *vals, const float *at, float *ct, int q,
                          int64_t p) {
    const int32_t *ptr = s->ptr + p * s->out;
    const int64_t cw = 16 * (int64_t)q;
    for (int64_t r = 0; r < s->out; r++) {
        const float *a = at + r * cw;
        for (int32_t e = ptr[r]; e < ptr[r + 1]; e++) {
            float *c = ct + (int64_t)s->idx[e] * cw;
            for (int64_t l = 0; l < cw; l++) c[l] = fmaf(vals[e], a[l], c[l]);
        }
    }
}

static float reduce_tree(const float t[PX_SPM_LANES]) {
    float u[8], v[4];
    for (int l = 0; l < 8; l++) u[l] = t[l] + t[l + 8];
    for (int l = 0; l < 4; l++) v[l] = u[l] + u[l + 4];
    return (v[0] + v[2]) + (v[1] + v[3]);
}

static void dot_portable(const px_spm *s, const float *at, const float *bt, float *g, int q,
                         int64_t p, int64_t r0, int64_t r1, int first) {
    const int32_t *ptr = s->ptr + p * s->out;
    for (int64_t r = r0; r < r1; r++) {
        const float *a = at + r * 16 * q;
        for (int32_t e = ptr[r]; e < ptr[r + 1]; e++) {
            const float *b = bt + (int64_t)s->idx[e] * 16 * q;
            float t[PX_SPM_LANES];
            for (int l = 0; l < PX_SPM_LANES; l++) t[l] = a[l] * b[l];
            for (int k = 1; k < q; k++)
                for (int l = 0; l < PX_SPM_LANES; l++)
                    t[l] = fmaf(a[16 * k + l], b[16 * k + l], t[l]);
            float sum = reduce_tree(t);
            g[e] = first ? sum : g[e] + sum;
        }
    }
}

static void tile8_portable(const float *src, int64_t src_stride, float *dst, int64_t dst_stride) {
    for (int64_t r = 0; r < 8; r++)
        for (int64_t c = 0; c < 8; c++) dst[c * dst_stride + r] = src[r * src_stride + c];
}

static const px_spm_isa_ops ops_portable = {"portable", mul_portable, scat_portable, dot_portable,
                                            tile8_portable};

static const px_spm_isa_ops *chosen_ops;

/* The path named `name`, when this build and CPU have it. */
static const px_spm_isa_ops *ops_named(const char *name) {
    if (strcmp(name, "portable") == 0) return &ops_portable;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (strcmp(name, "avx2") == 0 && px_spm_ops_avx2.mul && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma"))
        return &px_spm_ops_avx2;
    if (strcmp(name, "avx512") == 0 && px_spm_ops_avx512.mul && __builtin_cpu_supports("avx512f"))
        return &px_spm_ops_avx512;
#endif
    return NULL;
}

static const px_spm_isa_ops *isa_ops(void) {
    if (chosen_ops) return chosen_ops;
    static const char *const best_first[] = {"avx512", "avx2", "portable"};
    const char *want = getenv("PX_SPARSE_ISA");
    int from = 0;
    for (int i = 0; want && i < 3; i++)
        if (strcmp(want, best_first[i]) == 0) from = i;
    for (int i = from; !chosen_ops; i++) chosen_ops = ops_named(best_first[i]);
    return chosen_ops;
}

int px_spm_use_isa(const char *name) {
    const px_spm_isa_ops *o = ops_named(name);
    if (!o) return -1;
    chosen_ops = o;
    return 0;
}

const char *px_spm_isa(void) {
    return isa_ops()->name;
}

/* ---- transposed, chunked operands ---- */

/* The chunk width for m batch rows: 16 to 64 floats. */
static int64_t chunk_width(int64_t m) {
    int64_t cw = (m + 15) / 16 * 16;
    return cw > PX_SPM_MAX_CW ? PX_SPM_MAX_CW : cw < 16 ? 16 : cw;
}

/* Scratch buffers of the products, kept across calls (the products run on
 * the rank's compute thread; px_parallel_for's workers only fill parts). */
static float *scratch(int slot, int64_t floats) {
    static float *buf[3];
    static int64_t cap[3];
    if (floats > cap[slot]) {
        free(buf[slot]);
        buf[slot] = NULL;
        if (posix_memalign((void **)&buf[slot], 64, sizeof(float) * (size_t)floats) != 0)
            px_rt_fail("sparse product: out of memory for %lld floats of scratch",
                       (long long)floats);
        cap[slot] = floats;
    }
    return buf[slot];
}

typedef struct transpose_job {
    const px_spm_isa_ops *ops;
    const float *x; /* [m, cols] */
    float *xt;      /* [chunks][cols][cw] */
    int64_t m, cols, cw;
} transpose_job;

/* dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols
 * (at most 8 each): by the ISA's tile when it is whole. */
static void tile(const px_spm_isa_ops *ops, const float *src, int64_t src_stride, float *dst,
                 int64_t dst_stride, int64_t rows, int64_t cols) {
    if (rows == 8 && cols == 8) {
        ops->tile8(src, src_stride, dst, dst_stride);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[c * dst_stride + r] = src[r * src_stride + c];
}

/* Columns [lo, hi) of every chunk, by 8 x 8 tiles; the rows past m are
 * zero. */
static void transpose_in_range(void *ctx, int64_t lo, int64_t hi) {
    const transpose_job *j = ctx;
    int64_t chunks = (j->m + j->cw - 1) / j->cw;
    for (int64_t ch = 0; ch < chunks; ch++) {
        float *dst = j->xt + ch * j->cols * j->cw;
        int64_t live = j->m - ch * j->cw < j->cw ? j->m - ch * j->cw : j->cw;
        for (int64_t c0 = lo; c0 < hi; c0 += 8) {
            int64_t nc = hi - c0 < 8 ? hi - c0 : 8;
            for (int64_t b0 = 0; b0 < live; b0 += 8)
                tile(j->ops, j->x + (ch * j->cw + b0) * j->cols + c0, j->cols,
                     dst + c0 * j->cw + b0, j->cw, live - b0 < 8 ? live - b0 : 8, nc);
            if (live < j->cw)
                for (int64_t c = c0; c < c0 + nc; c++)
                    memset(dst + c * j->cw + live, 0, sizeof(float) * (size_t)(j->cw - live));
        }
    }
}

static float *transpose_in(int slot, const float *x, int64_t m, int64_t cols, int64_t cw) {
    int64_t chunks = (m + cw - 1) / cw;
    float *xt = scratch(slot, chunks * cols * cw);
    transpose_job j = {isa_ops(), x, xt, m, cols, cw};
    px_parallel_for(cols, 64, transpose_in_range, &j);
    return xt;
}

/* Rows [lo, hi) of y[m, rows] from ct[chunks][rows][cw], by 8 x 8 tiles
 * (lo is a multiple of 8 and cw of 16: a tile lies in one chunk). */
static void transpose_out_range(void *ctx, int64_t lo, int64_t hi) {
    const transpose_job *j = ctx; /* x: ct, xt: y (the roles swap), cols: rows */
    int64_t rows = j->cols;
    for (int64_t b0 = lo; b0 < hi; b0 += 8) {
        int64_t nb = hi - b0 < 8 ? hi - b0 : 8;
        const float *src = j->x + (b0 / j->cw) * rows * j->cw + b0 % j->cw;
        for (int64_t r0 = 0; r0 < rows; r0 += 8)
            tile(j->ops, src + r0 * j->cw, j->cw, j->xt + b0 * rows + r0, rows,
                 rows - r0 < 8 ? rows - r0 : 8, nb);
    }
}

static void transpose_out(const float *ct, int64_t m, int64_t rows, int64_t cw, float *y) {
    transpose_job j = {isa_ops(), ct, y, m, rows, cw};
    px_parallel_for(m, 8, transpose_out_range, &j);
}

/* ---- the products ---- */

typedef struct product_job {
    const px_spm_isa_ops *ops;
    const px_spm *s;
    const float *vals, *at, *bt;
    float *out; /* ct (mul, scat) or g (dot) */
    int64_t m, cw;
} product_job;

static int64_t n_chunks(int64_t m, int64_t cw) {
    return (m + cw - 1) / cw;
}

/* Outputs [r0, r1) of every chunk. */
static void mul_range(void *ctx, int64_t r0, int64_t r1) {
    const product_job *j = ctx;
    const px_spm *s = j->s;
    for (int64_t ch = 0; ch < n_chunks(j->m, j->cw); ch++)
        for (int64_t p = 0; p < s->n_panels; p++)
            j->ops->mul(s, j->vals, j->bt + ch * s->in * j->cw, j->out + ch * s->out * j->cw,
                        (int)(j->cw / 16), p, r0, r1, p == 0);
}

/* Panels [p0, p1) of every chunk: the inputs they hold are theirs alone. */
static void scat_range(void *ctx, int64_t p0, int64_t p1) {
    const product_job *j = ctx;
    const px_spm *s = j->s;
    for (int64_t ch = 0; ch < n_chunks(j->m, j->cw); ch++) {
        float *ct = j->out + ch * s->in * j->cw;
        int64_t i0 = p0 * PX_SPM_PANEL, i1 = p1 * PX_SPM_PANEL < s->in ? p1 * PX_SPM_PANEL : s->in;
        memset(ct + i0 * j->cw, 0, sizeof(float) * (size_t)((i1 - i0) * j->cw));
        for (int64_t p = p0; p < p1; p++)
            j->ops->scat(s, j->vals, j->at + ch * s->out * j->cw, ct, (int)(j->cw / 16), p);
    }
}

/* Outputs [r0, r1): their entries, in every chunk. */
static void dot_range(void *ctx, int64_t r0, int64_t r1) {
    const product_job *j = ctx;
    const px_spm *s = j->s;
    for (int64_t ch = 0; ch < n_chunks(j->m, j->cw); ch++)
        for (int64_t p = 0; p < s->n_panels; p++)
            j->ops->dot(s, j->at + ch * s->out * j->cw, j->bt + ch * s->in * j->cw, j->out,
                        (int)(j->cw / 16), p, r0, r1, ch == 0);
}

/* Outputs per piece of work: about 32k multiply-adds. */
static int64_t row_grain(const px_spm *s, int64_t m) {
    return px_grain_for(s->out ? (s->nnz / s->out + 1) * m : m);
}

void px_spm_forward(const px_spm *s, const float *vals, const float *x, int64_t m, float *y) {
    if (m <= 0 || s->out == 0) return;
    if (s->in == 0) {
        memset(y, 0, sizeof(float) * (size_t)(m * s->out));
        return;
    }
    int64_t cw = chunk_width(m);
    float *xt = transpose_in(0, x, m, s->in, cw);
    float *yt = scratch(1, n_chunks(m, cw) * s->out * cw);
    product_job j = {isa_ops(), s, vals, NULL, xt, yt, m, cw};
    px_parallel_for(s->out, row_grain(s, m), mul_range, &j);
    transpose_out(yt, m, s->out, cw, y);
}

void px_spm_grad_input(const px_spm *s, const float *vals, const float *dy, int64_t m, float *dx) {
    if (m <= 0 || s->in == 0) return;
    if (s->out == 0) {
        memset(dx, 0, sizeof(float) * (size_t)(m * s->in));
        return;
    }
    int64_t cw = chunk_width(m);
    float *dyt = transpose_in(2, dy, m, s->out, cw);
    float *dxt = scratch(1, n_chunks(m, cw) * s->in * cw);
    product_job j = {isa_ops(), s, vals, dyt, NULL, dxt, m, cw};
    px_parallel_for(s->n_panels, 1, scat_range, &j);
    transpose_out(dxt, m, s->in, cw, dx);
}

void px_spm_grad_weight(const px_spm *s, const float *x, const float *dy, int64_t m, float *g) {
    if (s->nnz == 0) return;
    if (m <= 0) {
        memset(g, 0, sizeof(float) * (size_t)s->nnz);
        return;
    }
    int64_t cw = chunk_width(m);
    float *xt = transpose_in(0, x, m, s->in, cw);
    float *dyt = transpose_in(2, dy, m, s->out, cw);
    product_job j = {isa_ops(), s, NULL, dyt, xt, g, m, cw};
    px_parallel_for(s->out, row_grain(s, m), dot_range, &j);
}
